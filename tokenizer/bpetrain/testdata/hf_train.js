// Trains a byte-level BPE with HuggingFace's own Rust tokenizers library (npm
// package "tokenizers", a Node add-on: its BpeTrainer with default settings,
// i.e. min_frequency 0 and a vocabulary limit far above what this corpus
// reaches) on hf_train_corpus.txt, with the normalizer and pre-tokenizer of
// the tokenizer.json this package writes (testdata/tiny), and writes the
// merges it learns to hf_train_merges.json. TestHFTrain checks that Train
// learns the same merges in the same order from the same lines. The corpus
// holds no added tokens (<|im_start|>, <tool_call>, …): this binding's train
// does not split them out, while Train never merges across them.
//
// Regenerate from the repository root (tokenizers installed outside the repo):
//   mkdir -p /tmp/tokref && (cd /tmp/tokref && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/tokref/node_modules node tokenizer/bpetrain/testdata/hf_train.js
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { Tokenizer, BPE } = require("tokenizers");

const dir = __dirname;
const tok = Tokenizer.fromString(fs.readFileSync(path.join(dir, "tiny", "tokenizer.json"), "utf8"));
tok.setModel(BPE.empty());
tok.train([path.join(dir, "hf_train_corpus.txt")]);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hftrain"));
const out = path.join(tmp, "tokenizer.json");
tok.save(out, false);
const trained = JSON.parse(fs.readFileSync(out, "utf8"));
fs.rmSync(tmp, { recursive: true });
const merges = trained.model.merges.map((m) => (typeof m === "string" ? m.split(" ") : m));
fs.writeFileSync(path.join(dir, "hf_train_merges.json"), JSON.stringify({ source: "tokenizers@0.23.2 BpeTrainer (default options)", merges }) + "\n");
console.log(merges.length, "merges");

// Encodes the sample texts with HuggingFace's own Rust tokenizers library
// (npm package "tokenizers", a Node add-on) using the tokenizer.json this
// package trained (testdata/tiny), and writes hf_encode.jsonl ({"text","ids"}).
// TestHFEncode checks that package tokenizer encodes every text identically.
//
// Regenerate from the repository root (tokenizers installed outside the repo):
//   mkdir -p /tmp/tokref && (cd /tmp/tokref && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/tokref/node_modules node tokenizer/bpetrain/testdata/hf_encode.js
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");

const dir = __dirname;
const tok = Tokenizer.fromString(fs.readFileSync(path.join(dir, "tiny", "tokenizer.json"), "utf8"));
const texts = [
  "", "apples boxes each holds", "How many apples in total? The answer is 1234567890",
  "<|im_start|>user\nWhat's 12 * 34?<|im_end|>\n<|im_start|>assistant\n",
  "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"347 * 29\"}}\n</tool_call><|im_end|>",
  "<tool_response>\n10063\n</tool_response>", "héllo wörld  \t\n", "unseen ✓ text, 中文 and\r\n tabs\t",
  "e\u0301 Å", "  leading and trailing  ", "x\n\n\ny", "<|endoftext|><|im_end|><|im_start|>",
];
const out = [];
(async () => {
  for (const text of texts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    out.push(JSON.stringify({ text, ids: Array.from(enc.getIds()) }));
  }
  fs.writeFileSync(path.join(dir, "hf_encode.jsonl"), out.join("\n") + "\n");
})();

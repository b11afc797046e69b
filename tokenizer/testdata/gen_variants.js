// Generates testdata/variants_encode.jsonl: the Qwen3 tokenizer.json with
// its normalizer, pre-tokenizer, model flags or added tokens replaced as
// listed in testdata/variants.json, run by HuggingFace's Rust tokenizers
// (npm package "tokenizers") on fixed inputs. It covers components the real
// tokenizers do not use (Digits, Split behaviors, NFKC, Replace, added-token
// lstrip/rstrip/single_word/normalized, ...).
//
// Regenerate from the repository root:
//   mkdir -p /tmp/tokref && (cd /tmp/tokref && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/tokref/node_modules node tokenizer/testdata/gen_variants.js \
//     <(gunzip -c tokenizer/testdata/qwen3/tokenizer.json.gz) tokenizer/testdata
"use strict";
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

const [, , tokPath, outDir] = process.argv;
const base = fs.readFileSync(tokPath, "utf8");
const variants = JSON.parse(fs.readFileSync(outDir + "/variants.json", "utf8"));

const inputs = [
  "", "Hello world", "hello  world   again", " leading space", "trailing ", "123 4567 89",
  "price: $12.50, qty 3", "e\u0301t\u00e9 \ufb01 \u2460 \uff21\uff22", "ｆｕｌｌ width ｆｕｌｌ",
  "a <mask> b", "a   <mask>b", "<mask><mask>", "x [R]   y", "[R]\n\nz", "cat concat cat. (cat)",
  "bobcat cat", "<both>  mid  <both>", "  <both>  ", "中文和日本語のテキスト、カタカナ。", "don't stop",
  "line1\nline2\r\n\tindent", "emoji 🙂 here", "<|im_start|>user\nhi<|im_end|>", "mixed123abc456",
  "a\u00a0b\u3000c", "e e e eee", "   ", "x=1;y=2", "αβγ δεζ", "!!! ??? ...",
];

const out = [];
async function main() {
  for (const v of variants) {
    const j = JSON.parse(base);
    if ("normalizer" in v) j.normalizer = v.normalizer;
    if ("pre_tokenizer" in v) j.pre_tokenizer = v.pre_tokenizer;
    if ("ignore_merges" in v) j.model.ignore_merges = v.ignore_merges;
    let next = Math.max(...j.added_tokens.map((t) => t.id)) + 1;
    for (const t of v.added_tokens_extra || []) j.added_tokens.push(Object.assign({ id: next++ }, t));
    const tok = Tokenizer.fromString(JSON.stringify(j));
    for (const text of inputs) {
      const e = await tok.encode(text, null, { addSpecialTokens: false });
      out.push(JSON.stringify({ variant: v.name, text, ids: e.getIds() }));
    }
  }
  fs.writeFileSync(outDir + "/variants_encode.jsonl", out.join("\n") + "\n");
}
main();

// Generates extra encode/decode goldens with HuggingFace's own Rust
// tokenizers library (npm package "tokenizers", a Node add-on).
//
// Regenerate from the repository root (tokenizers installed outside the repo):
//   mkdir -p /tmp/tokref && (cd /tmp/tokref && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/tokref/node_modules node tokenizer/testdata/gen_goldens.js \
//     <(gunzip -c tokenizer/testdata/qwen3/tokenizer.json.gz) tokenizer/testdata/qwen3
//   NODE_PATH=/tmp/tokref/node_modules node tokenizer/testdata/gen_goldens.js \
//     ../shared/testdata/tokenizers/llama3_1/tokenizer.json tokenizer/testdata/llama3_1
// Each writes <prefix>_encode.jsonl ({"text","ids"}) and <prefix>_decode.jsonl
// ({"ids","skip_special","text"}). The inputs are the fixed cases below plus
// strings drawn by a seeded generator, so reruns give identical files.
"use strict";
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

const [, , tokPath, prefix] = process.argv;
const tok = Tokenizer.fromString(fs.readFileSync(tokPath, "utf8"));

const fixed = [
  "", "a", "'s", "'S", "'ſ", "it'S 'LL 'Re 'rE", "'''", "'s's's", "ſ", "K",
  "x\r\ny\r\n\r\nz", "\r", "\r\r\n \n \t\n  ", " \u00a0\u3000x", "a\u2028b\u2029c\u0085d",
  "\u000b\u000c\u001c\u001d", "e\u0301 \u0065\u0301\u0301 \u1100\u1161\u11a8", "Å Å Å",
  "٣٤٥ １２３ ²³ Ⅻ ⅻ 〇 ๑๒", "12345", " 1234567 ", "3.14e-10", "v1.2.3-rc.4",
  "\u200b\u200c\u200d\ufeff", "🙂🙂🙂", "👩\u200d👩\u200d👧\u200d👦", "🇫🇷🇩🇪",
  "한국어 텍스트입니다", "ภาษาไทยง่ายนิดเดียว", "हिन्दी भाषा", "العربية لغة جميلة", "עברית",
  "日本語のテキストです。カタカナ、ひらがな。", "中文标点：“引号”，《书名》！？",
  "<|im_start|>", "<|im_start", "<|im_end|<|im_end|>>", "<<|im_start|>>", "text<|endoftext|>text",
  "<think></think><think>", "<tool_call><tool_call>", " <|im_end|> ", "<|begin_of_text|><|eot_id|>x",
  "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<|reserved_special_token_5|>",
  "def f(x):\n    return x**2  # square\n\n\n\tpass\n", "if (a && b) { return c; }\r\n",
  "    indented\n        more\n", "trailing spaces   \n   \n", "\n\n\n\n\n\n\n\n",
  "a".repeat(300), "ab".repeat(200), " ".repeat(100) + "x", "\n".repeat(50) + " ", "é".repeat(80),
  "supercalifragilisticexpialidocious-antidisestablishmentarianism_pneumonoultramicroscopicsilicovolcanoconiosis",
  "https://example.com/path?query=1&b=%20#frag", "user@example.com", "C:\\Users\\x\\file.txt",
  "{\"key\": [1, 2.5, -3e8, null, true], \"nested\": {\"a\": \"b\"}}", "$$\\frac{a}{b}$$",
  "ＡＢＣ ａｂｃ", "ﬁﬂ ﬃ", "ÀÉÎÕÜ àéîõü", "ǅ ǈ ǋ", "µ ß ẞ", "İstanbul ıi",
];

// Deterministic generator (mulberry32).
function rng(seed) {
  return function () {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = rng(20260511);
const alphabet = [
  " ", " ", " ", "\n", "\r", "\t", "'", "'s", "'T", "a", "b", "Z", "é", "e\u0301", "0", "7", "٣", "²",
  ".", ",", "!", "-", "_", "(", ")", "{", "\"", "#", "中", "文", "の", "한", "🙂", "\u3000", "\u00a0",
  "\u200d", "\u0301", "<|im_end|>", "<think>", "<|eot_id|>", "<", "|", ">", "the", " quick", "ing",
];
const randomTexts = [];
for (let i = 0; i < 400; i++) {
  const n = 1 + Math.floor(rand() * 40);
  let s = "";
  for (let j = 0; j < n; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
  randomTexts.push(s);
}

async function main() {
  const enc = [];
  for (const text of fixed.concat(randomTexts)) {
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    enc.push(JSON.stringify({ text, ids: e.getIds() }));
  }
  fs.writeFileSync(prefix + "_encode.jsonl", enc.join("\n") + "\n");

  // Decode: random id runs, including special tokens and byte tokens that
  // split UTF-8 sequences (exercises lossy UTF-8 handling).
  const size = tok.getVocabSize(true);
  const dec = [];
  for (let i = 0; i < 200; i++) {
    const n = 1 + Math.floor(rand() * 12);
    const ids = [];
    for (let j = 0; j < n; j++) {
      const r = rand();
      if (r < 0.3) ids.push(Math.floor(rand() * 256)); // single bytes
      else if (r < 0.4) ids.push(size - 1 - Math.floor(rand() * 30)); // added tokens
      else ids.push(Math.floor(rand() * (size - 300)));
    }
    for (const skip of [false, true]) {
      const text = await tok.decode(ids, skip);
      dec.push(JSON.stringify({ ids, skip_special: skip, text }));
    }
  }
  fs.writeFileSync(prefix + "_decode.jsonl", dec.join("\n") + "\n");
}
main();

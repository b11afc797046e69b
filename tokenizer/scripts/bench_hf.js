// Measures HuggingFace's Rust tokenizers (npm package "tokenizers") on the
// corpus of BenchmarkEncodeQwen3: the shared seed documents, reference docs
// and DESIGN.md, and tokenizer/*.go (not tests), concatenated in sorted path
// order and cut into 2,000-character pieces, encoded one at a time.
//
// Run from the repository root (see scripts/bench.sh, which also runs the Go
// benchmark and prints the ratio):
//   NODE_PATH=/tmp/tokref/node_modules node tokenizer/scripts/bench_hf.js TOKENIZER.json
// Prints one JSON line: corpus bytes, pieces, encode MB/s (median of 5
// passes; per wall and per CPU second, all threads), load ms, and the
// 10 MB no-newline encode time.
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");

function glob(dir, re) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => re.test(f)).map((f) => path.join(dir, f));
}

function corpus() {
  const paths = [
    ...glob("../shared/seeds", /\.txt$/),
    ...glob("../shared/reference", /\.md$/),
    ...(fs.existsSync("../shared/DESIGN.md") ? ["../shared/DESIGN.md"] : []),
    ...glob("tokenizer", /^(?!.*_test\.go$).*\.go$/),
  ].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const all = paths.map((p) => fs.readFileSync(p, "utf8")).join("");
  const cps = Array.from(all);
  const pieces = [];
  for (let i = 0; i < cps.length; i += 2000) pieces.push(cps.slice(i, i + 2000).join(""));
  return pieces;
}

async function main() {
  const tokPath = process.argv[2];
  let t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(tokPath);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;

  const pieces = corpus();
  const bytes = pieces.reduce((n, p) => n + Buffer.byteLength(p, "utf8"), 0);
  for (const p of pieces) await tok.encode(p, null, { addSpecialTokens: false }); // warm up
  const rates = [], cpuRates = [];
  for (let pass = 0; pass < 5; pass++) {
    t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    for (const p of pieces) await tok.encode(p, null, { addSpecialTokens: false });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    rates.push(bytes / s / 1e6);
    cpuRates.push(bytes / ((c.user + c.system) / 1e6) / 1e6);
  }
  rates.sort((a, b) => a - b);
  cpuRates.sort((a, b) => a - b);

  const huge = "abcdefghij".repeat(1 << 20); // 10 MB, no newline: one word
  t0 = process.hrtime.bigint();
  await tok.encode(huge, null, { addSpecialTokens: false });
  const hugeS = Number(process.hrtime.bigint() - t0) / 1e9;

  console.log(JSON.stringify({ bytes, pieces: pieces.length, encode_mb_s: +rates[2].toFixed(2),
    encode_cpu_mb_s: +cpuRates[2].toFixed(2),
    load_ms: +loadMs.toFixed(1), huge_letters_10mb_s: +hugeS.toFixed(2) }));
}
main();

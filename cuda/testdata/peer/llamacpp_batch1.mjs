// llama.cpp's side of the interleaved batch-1 decode measurement
// (interleave.mjs): the protocol of `agentrl bench batch1` on the same
// weights' GGUF export. Loads the model, prints "ready", then answers each
// input line "decode" (or an empty line) with one batch-1 decode
// measurement, "batch1 RATE tok/s", until "quit" or the end of the input.
// A measurement is llamacpp_bench.mjs's batch-1 decode: a fresh random
// 16-token prompt, then (decode_tokens − 1) tokens over the time from the
// first generated token to the last; F32 KV cache, flash attention off,
// generation going on past end-of-generation tokens.
//   node llamacpp_batch1.mjs model.gguf [decode_tokens] [threads]   (defaults 32, 2)
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
const { getLlama } = await import(require.resolve("node-llama-cpp"));

const [modelPath, decodeArg, threadsArg] = process.argv.slice(2);
if (!modelPath) {
  console.error("usage: node llamacpp_batch1.mjs model.gguf [decode_tokens] [threads]");
  process.exit(2);
}
const decodeN = Number(decodeArg || 32), threads = Number(threadsArg || 2);
for (const [name, v, lo] of [["decode_tokens", decodeN, 2], ["threads", threads, 1]]) {
  if (!Number.isInteger(v) || v < lo) {
    console.error(`llamacpp_batch1: ${name} must be an integer ≥ ${lo}, got ${v}`);
    process.exit(2);
  }
}
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const vocab = model.fileInsights.vocabularySize ?? 32000;
let seed = 12345;
const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
const tokens = (n) => Array.from({ length: n }, () => 259 + (rnd() % (vocab - 259)));
const context = await model.createContext({
  contextSize: 2048, batchSize: 512, threads, flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
});
const seq = context.getSequence();
const decode = async () => {
  await seq.clearHistory();
  let n = 0, tFirst = 0;
  for await (const tok of seq.evaluate(tokens(16), { temperature: 0, yieldEogToken: true })) {
    n++;
    if (n === 1) tFirst = performance.now();
    if (n >= decodeN) break;
  }
  if (n !== decodeN) throw new Error(`batch-1 decode: generated ${n} tokens, want ${decodeN}`);
  return (decodeN - 1) / ((performance.now() - tFirst) / 1000);
};
console.log("ready");
let line = 0;
for await (const l of readline.createInterface({ input: process.stdin })) {
  line++;
  const cmd = l.trim();
  if (cmd === "quit") break;
  if (cmd !== "" && cmd !== "decode") {
    console.error(`llamacpp_batch1: input line ${line}: unknown command ${JSON.stringify(cmd)} (want decode or quit)`);
    process.exit(2);
  }
  console.log(`batch1 ${(await decode()).toFixed(3)} tok/s`);
}
await context.dispose();
await model.dispose();
await llama.dispose();

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
import readline from "node:readline";
import { batch1Rate, checkInts, kvF32, llamaCpp, randomTokens } from "./llamacpp_decode.mjs";

const [modelPath, decodeArg, threadsArg] = process.argv.slice(2);
if (!modelPath) {
  console.error("usage: node llamacpp_batch1.mjs model.gguf [decode_tokens] [threads]");
  process.exit(2);
}
const decodeN = Number(decodeArg || 32), threads = Number(threadsArg || 2);
checkInts("llamacpp_batch1", [["decode_tokens", decodeN, 2], ["threads", threads, 1]]);
const llama = await llamaCpp();
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const tokens = randomTokens(model.fileInsights.vocabularySize ?? 32000);
const context = await model.createContext({ contextSize: 2048, batchSize: 512, threads, flashAttention: false, ...kvF32 });
const seq = context.getSequence();
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
  await seq.clearHistory();
  console.log(`batch1 ${(await batch1Rate(seq, tokens(16), decodeN)).toFixed(3)} tok/s`);
}
await context.dispose();
await model.dispose();
await llama.dispose();

// llama.cpp's side of the interleaved batch-1 decode measurement
// (interleave.mjs): the protocol of `agentrl bench batch1` on the same
// weights' GGUF export. Loads the model, prints "ready", then answers each
// input line "decode" (or an empty line) with one batch-1 decode
// measurement, "batch1 RATE tok/s", until "quit" or the end of the input.
// A measurement is llamacpp_bench.mjs's batch-1 decode: a fresh random
// prompt of prompt_tokens (agentrl's --context), then (decode_tokens − 1)
// tokens over the time from the first generated token to the last; the KV
// cache in kv_type (F32 as the engine's default, F16 llama.cpp's default,
// BF16), flash attention off, generation going on past end-of-generation
// tokens.
// With "reuse" (agentrl's --reuse-prompt) one prompt serves every
// measurement: the first computes it, the later ones erase what follows
// its next-to-last token and evaluate the last again, so a long prompt is
// prefilled once (the measurement times the decode alone either way).
//   node llamacpp_batch1.mjs model.gguf [decode_tokens] [threads] [prompt_tokens] [kv_type] [reuse]
//   (defaults 32, 2, 16, F32, a fresh prompt each time)
import readline from "node:readline";
import { batch1Rate, checkInts, llamaCpp, randomTokens } from "./llamacpp_decode.mjs";

const [modelPath, decodeArg, threadsArg, promptArg, kvArg, reuseArg] = process.argv.slice(2);
if (!modelPath || (reuseArg !== undefined && reuseArg !== "reuse")) {
  console.error("usage: node llamacpp_batch1.mjs model.gguf [decode_tokens] [threads] [prompt_tokens] [kv_type] [reuse]");
  process.exit(2);
}
const decodeN = Number(decodeArg || 32), threads = Number(threadsArg || 2), promptN = Number(promptArg || 16);
const kvType = kvArg || "F32";
checkInts("llamacpp_batch1", [["decode_tokens", decodeN, 2], ["threads", threads, 1], ["prompt_tokens", promptN, 1]]);
if (!["F32", "F16", "BF16"].includes(kvType)) {
  console.error(`llamacpp_batch1: kv_type must be F32, F16 or BF16, got ${kvType}`);
  process.exit(2);
}
const llama = await llamaCpp();
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const tokens = randomTokens(model.fileInsights.vocabularySize ?? 32000);
// The context holds the prompt and the generated tokens (at least 2048, as before).
const contextSize = Math.max(2048, Math.ceil((promptN + decodeN) / 256) * 256);
const context = await model.createContext({
  contextSize, batchSize: 512, threads, flashAttention: false,
  experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType,
});
const seq = context.getSequence();
console.log("ready");
let line = 0, kept = null;
for await (const l of readline.createInterface({ input: process.stdin })) {
  line++;
  const cmd = l.trim();
  if (cmd === "quit") break;
  if (cmd !== "" && cmd !== "decode") {
    console.error(`llamacpp_batch1: input line ${line}: unknown command ${JSON.stringify(cmd)} (want decode or quit)`);
    process.exit(2);
  }
  let prompt;
  if (reuseArg && kept) {
    await seq.eraseContextTokenRanges([{ start: promptN - 1, end: seq.nextTokenIndex }]);
    prompt = kept.slice(promptN - 1);
  } else {
    await seq.clearHistory();
    prompt = kept = tokens(promptN);
  }
  console.log(`batch1 ${(await batch1Rate(seq, prompt, decodeN)).toFixed(3)} tok/s`);
}
await context.dispose();
await model.dispose();
await llama.dispose();

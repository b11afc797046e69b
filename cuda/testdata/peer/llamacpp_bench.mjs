// Side-by-side peer measurement: llama.cpp (through node-llama-cpp's
// prebuilt CPU build) on a GGUF export of the same model the engine runs.
//
// Setup, in a scratch directory outside the repository:
//   npm install node-llama-cpp @node-llama-cpp/linux-x64 --omit=optional --ignore-scripts
//   agentrl model gguf --model DIR --out model.gguf
// Run (NODE_PATH pointing at that directory's node_modules):
//   node llamacpp_bench.mjs model.gguf [reps] [prefill_tokens] [decode_tokens] [threads] [concurrency]
// (defaults 5, 512, 64, 2, 32). Prints one JSON line with the medians over
// reps of:
//   - load_s: loadModel (open to ready);
//   - prefill_tok_s: one prefill_tokens-token prompt, evaluated alone;
//   - decode_tok_s: batch-1 decode after a 16-token prompt, (decode_tokens − 1)
//     tokens over the time from the first generated token to the last;
//   - aggregate_decode_tok_s: concurrency sequences of one context decoding
//     together, measured as `agentrl bench engine` measures its aggregate
//     decode (cmd/agentrl/bench.go, decodeRate): each sequence gets a fresh
//     random 16-token prompt and generates greedily; the rate is
//     concurrency × (decode_tokens − 1) / (time(decode_tokens tokens) −
//     time(1 token)), so the prompts' prefill cancels out. node-llama-cpp
//     puts the pending tokens of all sequences into one llama_decode batch
//     per step (batch size ≥ concurrency); as its dispatcher takes the
//     sequences that have queued their next token when the previous batch
//     ends, a step holds about 31 of 32 sequences and the one left out joins
//     the next (a few % more steps than the ideal);
//   - aggregate_tokens_per_step: the mean number of tokens in the aggregate
//     measurement's llama_decode calls of at most concurrency tokens (its
//     decode steps), the check that the sequences are batched;
//   - max_rss_mb: peak RSS (getrusage) through load, prefill and batch-1
//     decode, whose context holds 2048 positions of F32 KV cache (the engine
//     reports its peak after load with its KV cache populated);
//     max_rss_mb_all also covers the aggregate context (concurrency × 256
//     positions of F32 KV cache: node-llama-cpp gives each sequence its own).
// The KV cache is F32 as the engine's is; flash attention off. Generation
// goes on past end-of-generation tokens (random weights emit them), as the
// engine's measurements do: every sequence makes exactly decode_tokens.
import { batch1Rate, checkInts, kvF32, llamaCpp, randomTokens } from "./llamacpp_decode.mjs";

const [modelPath, repsArg, prefillArg, decodeArg, threadsArg, concArg] = process.argv.slice(2);
if (!modelPath) {
  console.error("usage: node llamacpp_bench.mjs model.gguf [reps] [prefill_tokens] [decode_tokens] [threads] [concurrency]");
  process.exit(2);
}
const reps = Number(repsArg || 5), prefillN = Number(prefillArg || 512), decodeN = Number(decodeArg || 64);
const threads = Number(threadsArg || 2), conc = Number(concArg || 32);
checkInts("llamacpp_bench", [["reps", reps, 1], ["prefill_tokens", prefillN, 2], ["decode_tokens", decodeN, 2],
  ["threads", threads, 1], ["concurrency", conc, 1]]);
const promptN = 16; // as the engine's decode measurements

const llama = await llamaCpp();
const loadStart = performance.now();
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const loadS = (performance.now() - loadStart) / 1000;
const rssAfterLoad = process.resourceUsage().maxRSS / 1024; // MB
const vocab = model.fileInsights.vocabularySize ?? 32000;
const tokens = randomTokens(vocab);
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

const prefill = [], decode = [];
for (let r = 0; r < reps; r++) {
  const context = await model.createContext({
    contextSize: 2048, batchSize: prefillN, threads, flashAttention: false, ...kvF32,
  });
  const seq = context.getSequence();
  const p = tokens(prefillN);
  const t = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(p);
  prefill.push(prefillN / ((performance.now() - t) / 1000));
  await seq.clearHistory();

  // batch-1 decode after a 16-token prompt: time(n tokens) − time(first)
  decode.push(await batch1Rate(seq, tokens(promptN), decodeN));
  await context.dispose();
}
const rssBeforeAggregate = process.resourceUsage().maxRSS / 1024;

// Aggregate decode. One context with conc sequences, each with room for its
// prompt and output; the batch takes every prompt token at once (as the
// engine's MaxBatchTokens ≥ 512 does), so a decode step always fits all
// sequences.
const aggContext = await model.createContext({
  sequences: conc, contextSize: promptN + decodeN, batchSize: Math.max(conc * promptN, 512), threads,
  flashAttention: false, ...kvF32,
});
// Count the tokens of each llama_decode call, to show in the output that
// the steps really batch the sequences. This wraps node-llama-cpp's
// internal native context (_ctx); if that is not possible the count is
// left out (null) and the measurement is unchanged.
let steps = 0, stepTokens = 0;
try {
  const native = aggContext._ctx;
  let size = 0;
  const wrapped = new Proxy(native, {
    get(target, prop) {
      if (prop === "initBatch") return (n) => { size = n; return target.initBatch(n); };
      if (prop === "decodeBatch") {
        return () => {
          if (size <= conc) { steps++; stepTokens += size; } // a decode step, not a batch of prompts
          return target.decodeBatch();
        };
      }
      const v = target[prop];
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  aggContext._ctx = wrapped;
  if (aggContext._ctx !== wrapped) steps = NaN;
} catch {
  steps = NaN;
}
const seqs = Array.from({ length: conc }, () => aggContext.getSequence());
// run generates maxNew tokens greedily on every sequence at once from fresh
// prompts and returns the seconds it took.
const run = async (maxNew) => {
  await Promise.all(seqs.map((s) => s.clearHistory()));
  const prompts = seqs.map(() => tokens(promptN));
  const start = performance.now();
  const counts = await Promise.all(seqs.map(async (s, i) => {
    let n = 0;
    for await (const tok of s.evaluate(prompts[i], { temperature: 0, yieldEogToken: true })) {
      n++;
      if (n >= maxNew) break;
    }
    return n;
  }));
  const s = (performance.now() - start) / 1000;
  for (const n of counts) {
    if (n !== maxNew) throw new Error(`aggregate decode: a sequence generated ${n} tokens, want ${maxNew}`);
  }
  return s;
};
const aggregate = [];
for (let r = 0; r < reps; r++) {
  const t1 = await run(1);
  const tn = await run(decodeN);
  aggregate.push(conc * (decodeN - 1) / (tn - t1));
}
await aggContext.dispose();

console.log(JSON.stringify({ peer: "llama.cpp (node-llama-cpp)", threads, prefill_tokens: prefillN,
  decode_tokens: decodeN, concurrency: conc,
  prefill_tok_s: median(prefill), decode_tok_s: median(decode), aggregate_decode_tok_s: median(aggregate),
  aggregate_tokens_per_step: steps > 0 ? stepTokens / steps : null,
  load_s: loadS, max_rss_mb_after_load: rssAfterLoad, max_rss_mb: rssBeforeAggregate,
  max_rss_mb_all: process.resourceUsage().maxRSS / 1024,
  prefill_all: prefill, decode_all: decode, aggregate_all: aggregate }));
await model.dispose();
await llama.dispose();

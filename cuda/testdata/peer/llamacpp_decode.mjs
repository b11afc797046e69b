// What llamacpp_bench.mjs and llamacpp_batch1.mjs share, so that both time
// llama.cpp's batch-1 decode the same way: loading node-llama-cpp (from
// NODE_PATH), checking integer arguments, the random prompts, and the
// batch-1 decode measurement itself.
import { createRequire } from "node:module";
import path from "node:path";

// llamaCpp is node-llama-cpp's CPU build, prebuilt (never compiled here).
export async function llamaCpp() {
  const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
  const { getLlama } = await import(require.resolve("node-llama-cpp"));
  return getLlama({ gpu: false, build: "never", logLevel: "error" });
}

// checkInts exits with a message naming the first of [name, value, least]
// that is not an integer ≥ least.
export function checkInts(script, args) {
  for (const [name, v, lo] of args) {
    if (!Number.isInteger(v) || v < lo) {
      console.error(`${script}: ${name} must be an integer ≥ ${lo}, got ${v}`);
      process.exit(2);
    }
  }
}

// randomTokens returns a generator of n-token prompts of ids ≥ 259 (past
// byte and special tokens), the same sequence on every run.
export function randomTokens(vocab) {
  let seed = 12345;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
  return (n) => Array.from({ length: n }, () => 259 + (rnd() % (vocab - 259)));
}

// The KV cache in F32, as the engine's.
export const kvF32 = { experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32" };

// batch1Rate generates decodeN tokens greedily on seq (empty) from prompt and
// returns (decodeN − 1) tokens over the time from the first to the last:
// the prompt's prefill is left out. Generation goes on past
// end-of-generation tokens (random weights emit them).
export async function batch1Rate(seq, prompt, decodeN) {
  let n = 0, tFirst = 0;
  for await (const tok of seq.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
    n++;
    if (n === 1) tFirst = performance.now();
    if (n >= decodeN) break;
  }
  if (n !== decodeN) throw new Error(`batch-1 decode: generated ${n} tokens, want ${decodeN}`);
  return (decodeN - 1) / ((performance.now() - tFirst) / 1000);
}

// Second, independent numerics reference: llama.cpp (node-llama-cpp's
// prebuilt CPU build) runs the GGUF export of a tiny Llama and records its
// 32 greedy tokens with the probability of each, for the Go test
// TestLlamaCppReference (which also validates the GGUF exporter).
//
// Regenerate from the repository root (SCRATCH holds node_modules with
// node-llama-cpp, see llamacpp_bench.mjs):
//   go run ./cmd/agentrl model init --arch llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
//     --intermediate 160 --vocab 300 --max-pos 256 --rope-theta 10000 --seed 11 --out SCRATCH/tiny
//   go run ./cmd/agentrl model gguf --model SCRATCH/tiny --out SCRATCH/tiny.gguf
//   NODE_PATH=SCRATCH/node_modules node cuda/testdata/peer/llamacpp_reference.mjs SCRATCH/tiny.gguf \
//     > cuda/testdata/peer/llamacpp_reference.json
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
const { getLlama } = await import(require.resolve("node-llama-cpp"));

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: process.argv[2], gpuLayers: 0 });
const context = await model.createContext({ contextSize: 256, batchSize: 64, threads: 1, flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32" });
const seq = context.getSequence();
const prompt = Array.from({ length: 16 }, (_, i) => (i * 37 + 5) % 300);
const tokens = [], probs = [];
for await (const out of seq.evaluateWithMetadata(prompt, { confidence: true }, { temperature: 0 })) {
  tokens.push(out.token);
  probs.push(out.confidence);
  if (tokens.length >= 32) break;
}
console.log(JSON.stringify({ generator: "llama.cpp via node-llama-cpp " + (process.env.NLC_VERSION || ""),
  seed: 11, prompt, tokens, probs }));
await context.dispose();
await model.dispose();
await llama.dispose();

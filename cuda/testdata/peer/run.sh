#!/bin/sh
# Side-by-side measurement of the engine and llama.cpp on the same 156M
# fp32 Llama (random weights), alternating runs so both see the same machine
# state. Run from the repository root:
#   sh cuda/testdata/peer/run.sh SCRATCH_DIR [rounds]
# SCRATCH_DIR must hold node_modules with node-llama-cpp and
# @node-llama-cpp/linux-x64, installed with
#   npm install node-llama-cpp @node-llama-cpp/linux-x64 --omit=optional --ignore-scripts
set -eu
scratch=$1
rounds=${2:-3}
go build -o "$scratch/agentrl" ./cmd/agentrl
if [ ! -f "$scratch/llama156/model.safetensors" ]; then
  "$scratch/agentrl" model init --arch llama --layers 12 --hidden 768 --heads 12 --kv-heads 12 \
    --intermediate 2816 --vocab 32000 --max-pos 2048 --rope-theta 10000 --seed 1 --out "$scratch/llama156"
  "$scratch/agentrl" model gguf --model "$scratch/llama156" --out "$scratch/llama156.gguf"
fi
i=0
while [ "$i" -lt "$rounds" ]; do
  echo "== round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (unset OPENBLAS_CORETYPE; "$scratch/agentrl" bench engine --model "$scratch/llama156" --reps 3 --decode-tokens 64 --prefill-tokens 512 --concurrency 32)
  (unset OPENBLAS_CORETYPE; NODE_PATH="$scratch/node_modules" node cuda/testdata/peer/llamacpp_bench.mjs "$scratch/llama156.gguf" 3 512 64 2)
  i=$((i + 1))
done

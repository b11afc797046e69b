#!/bin/sh
# Side-by-side measurement of the engine and llama.cpp at real model shapes
# (Qwen3-0.6B, -1.7B and -4B dimensions, random weights), bf16 and fp32,
# alternating runs so both see the same machine state. Run from the
# repository root:
#   sh cuda/testdata/peer/run_shapes.sh SCRATCH_DIR [rounds] [shapes] [dtypes]
# shapes: any of 0.6b 1.7b 4b (default "0.6b"); dtypes: bf16 fp32 int8
# (default "bf16 fp32"; int8 runs llama.cpp on a Q8_0 export). SCRATCH_DIR must hold node_modules with node-llama-cpp and
# @node-llama-cpp/linux-x64 (see run.sh). Checkpoints are bf16 safetensors
# (as released models are); the fp32 runs load them as fp32 (agentrl
# --weights fp32) and an F32 GGUF export (llama.cpp).
set -eu
scratch=$1
rounds=${2:-2}
shapes=${3:-0.6b}
dtypes=${4:-bf16 fp32}
go build -o "$scratch/agentrl" ./cmd/agentrl
for shape in $shapes; do
  case $shape in
  0.6b) dims="--layers 28 --hidden 1024 --heads 16 --kv-heads 8 --head-dim 128 --intermediate 3072" ;;
  1.7b) dims="--layers 28 --hidden 2048 --heads 16 --kv-heads 8 --head-dim 128 --intermediate 6144" ;;
  4b) dims="--layers 36 --hidden 2560 --heads 32 --kv-heads 8 --head-dim 128 --intermediate 9728" ;;
  *) echo "unknown shape $shape" >&2; exit 2 ;;
  esac
  dir="$scratch/qwen3-$shape"
  if [ ! -f "$dir/config.json" ]; then
    # shellcheck disable=SC2086
    "$scratch/agentrl" model init --arch qwen3 $dims --vocab 151936 --tie --max-pos 4096 --seed 1 \
      --dtype bf16 --shard-size 2000000000 --out "$dir"
  fi
  for dt in $dtypes; do
    gdt=$dt
    [ "$dt" = int8 ] && gdt=q8_0
    [ -f "$dir-$dt.gguf" ] || "$scratch/agentrl" model gguf --model "$dir" --dtype "$gdt" --out "$dir-$dt.gguf"
  done
  i=0
  while [ "$i" -lt "$rounds" ]; do
    for dt in $dtypes; do
      echo "== $shape $dt round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
      "$scratch/agentrl" bench engine --model "$dir" --weights "$dt" --reps 3 --decode-tokens 32 \
        --prefill-tokens 512 --concurrency 32 --kv-memory 536870912 --bandwidth-bytes 536870912
      sync
      NODE_PATH="$scratch/node_modules" node cuda/testdata/peer/llamacpp_bench.mjs "$dir-$dt.gguf" 3 512 32 2
    done
    i=$((i + 1))
  done
done

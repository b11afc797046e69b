#!/usr/bin/env bash
# Side-by-side encode benchmark: this package vs HuggingFace's Rust
# tokenizers (npm package "tokenizers", when node and the package are
# present), same corpus, same machine, one run. From the repository root:
#   mkdir -p /tmp/tokref && (cd /tmp/tokref && npm install tokenizers@0.23.2)
#   NODE_PATH=/tmp/tokref/node_modules bash tokenizer/scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gunzip -c tokenizer/testdata/qwen3/tokenizer.json.gz > "$tmp/tokenizer.json"

echo "== Go (agentrl/tokenizer)"
env -u OPENBLAS_CORETYPE go test -run '^$' -bench 'EncodeQwen3$|EncodeQwen3Cold|LoadQwen3|DecodeQwen3' \
  -benchtime=5x -count=3 ./tokenizer/ | tee "$tmp/go.txt"
env -u OPENBLAS_CORETYPE go test -run '^$' -bench 'EncodeHuge/letters' -benchtime=1x ./tokenizer/ | grep Benchmark

if command -v node >/dev/null && node -e 'require("tokenizers")' 2>/dev/null; then
  echo "== HF Rust tokenizers (npm)"
  env -u OPENBLAS_CORETYPE node tokenizer/scripts/bench_hf.js "$tmp/tokenizer.json" | tee "$tmp/hf.json"
  go_mbs=$(awk '/^BenchmarkEncodeQwen3-/{for(i=2;i<=NF;i++) if($i=="MB/s") print $(i-1)}' "$tmp/go.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  hf_mbs=$(sed -E 's/.*"encode_mb_s":([0-9.]+).*/\1/' "$tmp/hf.json")
  echo "median encode: Go ${go_mbs} MB/s, HF ${hf_mbs} MB/s, ratio $(awk -v a="$go_mbs" -v b="$hf_mbs" 'BEGIN{printf "%.1f", a/b}')x"
  go_cpu=$(awk '/^BenchmarkEncodeQwen3-/{for(i=2;i<=NF;i++) if($i=="cpuMB/s") print $(i-1)}' "$tmp/go.txt" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  hf_cpu=$(sed -E 's/.*"encode_cpu_mb_s":([0-9.]+).*/\1/' "$tmp/hf.json")
  echo "median encode per CPU second: Go ${go_cpu} MB/s, HF ${hf_cpu} MB/s, ratio $(awk -v a="$go_cpu" -v b="$hf_cpu" 'BEGIN{printf "%.1f", a/b}')x"
else
  echo "node or the npm package tokenizers is missing: HF reference skipped"
fi

#!/bin/sh
# Regenerates reference.safetensors: tiny random models of each supported
# variant are written by `agentrl model init` (weights are a pure function of
# the flags and seed), then reference.py computes the expected logits with
# PyTorch. Run from the repository root:
#   sh cuda/testdata/regen.sh
# Needs Go and Debian's python3-torch (/usr/bin/python3).
set -eu
. cuda/testdata/models.sh
# GQA ratio 1, untied, plain RoPE
init llama 1 --arch llama --layers 2 --hidden 64 --heads 4 --kv-heads 4 --intermediate 160 --vocab 256 --max-pos 256 --rope-theta 10000
# Qwen2: q/k/v bias, GQA ratio 2, tied embeddings
init qwen2 2 --arch qwen2 --layers 2 --hidden 64 --heads 4 --kv-heads 2 --intermediate 128 --vocab 256 --max-pos 256 --tie
# Qwen3: QK-norm, GQA ratio 4, explicit head_dim != hidden/heads
init qwen3 3 --arch qwen3 --layers 3 --hidden 64 --heads 8 --kv-heads 2 --head-dim 32 --intermediate 96 --vocab 256 --max-pos 256
# Llama with attention bias, GQA ratio 4, tied, Llama-3.1 rope scaling, odd
# sizes (partial GEMM panels)
init llama_bias 4 --arch llama --llama3-rope-factor 8 --layers 2 --hidden 48 --heads 4 --kv-heads 1 --intermediate 72 --vocab 200 --max-pos 256 --tie --attention-bias
/usr/bin/python3 cuda/testdata/reference.py cuda/testdata/reference.safetensors \
  "llama:$tmp/llama:1" "qwen2:$tmp/qwen2:2" "qwen3:$tmp/qwen3:3" "llama_bias:$tmp/llama_bias:4"
# The same models with bf16-rounded matrices, in float64.
/usr/bin/python3 cuda/testdata/reference_bf16.py cuda/testdata/reference_bf16.safetensors \
  "llama:$tmp/llama:1" "qwen2:$tmp/qwen2:2" "qwen3:$tmp/qwen3:3" "llama_bias:$tmp/llama_bias:4"
# The same models (fp32 weights) with keys and values rounded to bf16 as a
# bf16 KV cache stores them, in float64.
/usr/bin/python3 cuda/testdata/reference_kvbf16.py cuda/testdata/reference_kvbf16.safetensors \
  "llama:$tmp/llama:1" "qwen2:$tmp/qwen2:2" "qwen3:$tmp/qwen3:3" "llama_bias:$tmp/llama_bias:4"

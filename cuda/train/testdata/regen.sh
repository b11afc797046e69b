#!/bin/sh
# Regenerates reference.safetensors: tiny random models of each supported
# variant are written by `agentrl model init` (weights are a pure function
# of the flags and seed, model.RandomWeights), then reference.py computes
# per-token logprobs, a weighted logprob loss and every parameter gradient
# with PyTorch float64 autograd, plus torch.optim.AdamW steps. Run from the
# repository root:
#   sh cuda/train/testdata/regen.sh
# Needs Go and Debian's python3-torch (/usr/bin/python3).
set -eu
. cuda/testdata/models.sh
# untied, GQA ratio 1, plain RoPE
init llama 11 --arch llama --layers 2 --hidden 32 --heads 4 --kv-heads 4 --intermediate 48 --vocab 64 --max-pos 64 --rope-theta 10000
# Qwen2: q/k/v bias, GQA ratio 2, tied embeddings
init qwen2 12 --arch qwen2 --layers 2 --hidden 32 --heads 4 --kv-heads 2 --intermediate 40 --vocab 64 --max-pos 64 --tie
# Qwen3: QK-norm, GQA ratio 4, head_dim != hidden/heads
init qwen3 13 --arch qwen3 --layers 2 --hidden 32 --heads 4 --kv-heads 1 --head-dim 16 --intermediate 40 --vocab 64 --max-pos 64
# Llama with q/k/v/o bias, tied, Llama-3.1 rope scaling, odd sizes
init llama_bias 14 --arch llama --llama3-rope-factor 8 --layers 1 --hidden 24 --heads 2 --kv-heads 1 --intermediate 36 --vocab 50 --max-pos 64 --tie --attention-bias
/usr/bin/python3 cuda/train/testdata/reference.py cuda/train/testdata/reference.safetensors \
  "llama:$tmp/llama:11" "qwen2:$tmp/qwen2:12" "qwen3:$tmp/qwen3:13" "llama_bias:$tmp/llama_bias:14"

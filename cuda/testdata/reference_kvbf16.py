#!/usr/bin/python3
"""Reference for a bf16 KV cache: the same tiny models (fp32 weights) and
prompts as reference.py, with each layer's keys (after RoPE) and values
rounded to bfloat16 by PyTorch (.to(torch.bfloat16), round to nearest even)
before attention reads them, as a bf16 cache stores them, and the decoder
run in float64. An engine with a bf16 cache differs from this only by its
float32 arithmetic (and, where a key lies within float32 error of a bf16
rounding boundary, by that one rounding), so the comparison checks where
the cache rounds and what it rounds, not float32 error.

Regenerate (from the repository root): sh cuda/testdata/regen.sh
Usage: reference_kvbf16.py OUT.safetensors NAME:DIR:SEED [NAME:DIR:SEED ...]
"""
import importlib.util
import os

import numpy as np
import torch

spec = importlib.util.spec_from_file_location("reference", os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.py"))
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)


def bf16(x):
    return x.to(torch.bfloat16).to(x.dtype)


def kvbf16_greedy(name, cfg, W, seed):
    return ref.run_greedy(cfg, W, ref.fixed_prompt(name, cfg), kv_round=bf16)[0]


if __name__ == "__main__":
    ref.generate(kvbf16_greedy, dtype=np.float64)

#!/usr/bin/python3
"""Reference for bf16 weights: the same tiny models and prompts as
reference.py, with every matrix (and the embedding table) rounded to
bfloat16 by PyTorch (.to(torch.bfloat16), round to nearest even), as a
bf16 checkpoint holds them, and the decoder then run in float64. A bf16
engine differs from this only by its own arithmetic (activations rounded
to bf16 at each matrix product, float32 accumulation), so the comparison
measures the kernels, not the checkpoint's rounding.

Greedy tokens here are float64 argmaxes; near ties are expected to flip
under bf16 arithmetic, so the test compares tokens only where the
reference's top-2 gap is clear (see reference_bf16_test.go).

Regenerate (from the repository root): sh cuda/testdata/regen.sh
Usage: reference_bf16.py OUT.safetensors NAME:DIR:SEED [NAME:DIR:SEED ...]
"""
import importlib.util
import os

import numpy as np
import torch

spec = importlib.util.spec_from_file_location("reference", os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.py"))
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)


def bf16_greedy(name, cfg, W, seed):
    Wb = {k: (v.to(torch.bfloat16).to(torch.float64) if v.dim() == 2 else v) for k, v in W.items()}
    return ref.run_greedy(cfg, Wb, ref.fixed_prompt(name, cfg))[0]


if __name__ == "__main__":
    ref.generate(bf16_greedy, dtype=np.float64)

#!/usr/bin/python3
"""Peer benchmark for BenchmarkTrainStep: PyTorch (CPU, float32, autograd)
forward + backward of the same model shape (qwen3, 4 layers, hidden 256,
heads 8/2, head_dim 32, intermediate 768, vocab 2048, tied) over 8 rows of
128 tokens, loss = sum(weight * logprob). Prints the median seconds per step.

Run from the repository root, side by side with the Go benchmark:
  /usr/bin/python3 cuda/train/testdata/bench_torch.py [threads]
  go test -run XXX -bench TrainStep -benchtime 5x ./cuda/train/
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import logprobs  # noqa: E402


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    cfg = {"model_type": "qwen3", "vocab_size": 2048, "hidden_size": 256, "intermediate_size": 768,
           "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32,
           "tie_word_embeddings": True, "rms_norm_eps": 1e-6, "rope_theta": 1e6}
    g = torch.Generator().manual_seed(0)
    H, I, V, hd = 256, 768, 2048, 32
    shapes = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
    for i in range(4):
        p = "model.layers.%d." % i
        shapes.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                       p + "self_attn.q_proj.weight": (8 * hd, H), p + "self_attn.k_proj.weight": (2 * hd, H),
                       p + "self_attn.v_proj.weight": (2 * hd, H), p + "self_attn.o_proj.weight": (H, 8 * hd),
                       p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
                       p + "mlp.gate_proj.weight": (I, H), p + "mlp.up_proj.weight": (I, H),
                       p + "mlp.down_proj.weight": (H, I)})
    W = {n: (torch.randn(s, generator=g) / (s[-1] ** 0.5) if len(s) == 2 else torch.ones(s)).requires_grad_()
         for n, s in shapes.items()}
    rows = [[(r * 7919 + j * 104729) % V for j in range(128)] for r in range(8)]
    times, cpus = [], []
    for _ in range(6):
        t0, c0 = time.perf_counter(), time.process_time()
        loss = sum((-1.0 / (8 * 127)) * logprobs(cfg, W, r).sum() for r in rows)
        loss.backward()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        for t in W.values():
            t.grad = None
    med, cpu = statistics.median(times[1:]), statistics.median(cpus[1:])
    print("torch %s threads=%d: median %.3f s/step (%.3f CPU-s/step), %.0f tokens/s" % (
        torch.__version__, threads, med, cpu, 1024 / med))


if __name__ == "__main__":
    main()

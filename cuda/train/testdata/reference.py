#!/usr/bin/python3
"""Plain PyTorch (float64 autograd) reference for the training kernels.

For each tiny random model directory written by `agentrl model init`
(config.json + model.safetensors), it builds a few token rows, computes the
per-token log-probabilities log p(row[j+1] | row[:j+1]) and
loss = sum_j weight_j * logprob_j (a linear functional of per-token
logprobs: what SFT and policy-gradient losses are), and the gradient of the
loss with respect to every parameter. The Go test rebuilds the same weights
with model.RandomWeights(config, seed) and compares.

It also records a few steps of torch.optim.AdamW with
torch.nn.utils.clip_grad_norm_ on small random tensors fed fixed gradients,
for trainer/reference's optimizer test.

Regenerate (from the repository root): sh cuda/train/testdata/regen.sh
Usage: reference.py OUT.safetensors NAME:DIR:SEED [NAME:DIR:SEED ...]
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch


# The decoder itself is the inference engine's reference
# (cuda/testdata/reference.py), run here in float64 with autograd.
_spec = importlib.util.spec_from_file_location(
    "engine_reference", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "reference.py"))
engine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine)


def logprobs(cfg, W, ids):
    """Per-token log p(ids[j+1] | ids[:j+1]) for one row, in the weights' dtype."""
    lp = torch.log_softmax(engine.forward(cfg, W, ids), dim=-1)
    return lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]


def rows_for(name, vocab):
    # Deterministic rows of different lengths (the Go test does not need to
    # rebuild them: they are stored).
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    return [torch.randint(0, vocab, (n,), generator=g).tolist() for n in (13, 6, 21)]


def adamw_steps(tensors, meta):
    """torch.optim.AdamW + clip_grad_norm_ on fixed gradients."""
    g = torch.Generator().manual_seed(7)
    shapes = {"a": (5, 7), "b": (11,)}
    params = {n: torch.randn(s, generator=g, dtype=torch.float64).requires_grad_() for n, s in shapes.items()}
    for n, p in params.items():
        tensors["adamw.init." + n] = p.detach().numpy().astype(np.float32)
    hp = dict(lr=0.05, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    max_norm = 5.0
    opt = torch.optim.AdamW(list(params.values()), **hp)
    steps = 4
    norms = []
    for s in range(steps):
        for n, p in params.items():
            grad = torch.randn(shapes[n], generator=g, dtype=torch.float64) * (0.5 + s)
            # float32-representable so Go feeds exactly the same gradient
            grad = grad.float().double()
            tensors["adamw.grad%d.%s" % (s, n)] = grad.numpy().astype(np.float32)
            p.grad = grad.clone()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm)))
        opt.step()
        for n, p in params.items():
            tensors["adamw.step%d.%s" % (s, n)] = p.detach().numpy().astype(np.float32)
    tensors["adamw.grad_norms"] = np.array(norms, dtype=np.float32)
    meta["adamw"] = json.dumps({"lr": hp["lr"], "beta1": hp["betas"][0], "beta2": hp["betas"][1],
                                "eps": hp["eps"], "weight_decay": hp["weight_decay"],
                                "max_norm": max_norm, "steps": steps, "params": sorted(shapes)})


def gradients(name, cfg, W, seed):
    """Logprobs of fixed rows, a weighted logprob loss and its gradients."""
    W = {n: t.requires_grad_() for n, t in W.items()}
    rows = rows_for(name, cfg["vocab_size"])
    g = torch.Generator().manual_seed(1000 + seed)
    loss = 0
    lps, weights = [], []
    for r in rows:
        lp = logprobs(cfg, W, r)
        w = torch.randn(len(r) - 1, generator=g, dtype=torch.float64)
        w[torch.rand(len(r) - 1, generator=g) < 0.3] = 0  # masked positions
        w = w.float().double()  # exactly representable in the Go test
        loss = loss + (w * lp).sum()
        lps.append(lp.detach())
        weights.append(w)
    loss.backward()
    out = {
        "tokens": np.array(sum(rows, []), dtype=np.int32),
        "lengths": np.array([len(r) for r in rows], dtype=np.int32),
        "weights": torch.cat(weights).numpy().astype(np.float32),
        "logprobs": torch.cat(lps).numpy().astype(np.float32),
        "loss": np.array([float(loss)], dtype=np.float32),
    }
    for pn, t in W.items():
        out["grad." + pn] = t.grad.numpy().astype(np.float32)
    print("%s: loss %.6f, %d params" % (name, float(loss), sum(t.numel() for t in W.values())), file=sys.stderr)
    return out


if __name__ == "__main__":
    engine.generate(gradients, np.float64, adamw_steps)

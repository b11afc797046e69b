"""Writes golden.json: random inputs and the outputs of a plain PyTorch
implementation of verl's core algorithms (advantage estimators, KL
estimators, the dual-clip PPO loss and its autograd gradient, loss
aggregation, truncated importance sampling, the DAPO group filter).

Regenerate (Debian python3-torch, python3-numpy):
    /usr/bin/python3 trainer/testdata/gen_golden.py > trainer/testdata/golden.json
"""
import json
from collections import defaultdict

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(20261122)


def f32(a):
    # Inputs are float32-representable so Go sees the same numbers.
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def masked_mean(v, m, axis=None):
    if axis is None:
        return (v * m).sum() / (m.sum() + 1e-8)
    return (v * m).sum(axis) / (m.sum(axis) + 1e-8)


def masked_var(v, m):
    mean = masked_mean(v, m)
    var = masked_mean((v - mean) ** 2, m)
    n = m.sum()
    return var * (n / (n - 1))


def masked_whiten(v, m):
    return (v - masked_mean(v, m)) * torch.rsqrt(masked_var(v, m) + 1e-8)


def group_outcome(rewards, mask, index, mode, norm=True):
    scores = rewards.sum(-1).clone()
    g = defaultdict(list)
    for i, k in enumerate(index):
        g[k].append(scores[i])
    mean, std, n = {}, {}, {}
    for k, v in g.items():
        t = torch.stack(v)
        n[k] = len(v)
        if len(v) == 1:
            mean[k], std[k] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean[k], std[k] = t.mean(), t.std()
    out = scores.clone()
    for i, k in enumerate(index):
        if mode == "grpo":
            out[i] = (scores[i] - mean[k]) / (std[k] + 1e-6) if norm else scores[i] - mean[k]
        else:  # rloo
            if n[k] > 1:
                out[i] = scores[i] * n[k] / (n[k] - 1) - torch.stack(g[k]).mean() * n[k] / (n[k] - 1)
    return out.unsqueeze(-1) * mask


def reinforce_pp(rewards, mask, gamma):
    returns = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        returns[:, t] = running
        running = running * mask[:, t]
    return masked_whiten(returns, mask) * mask, returns


def gae(rewards, values, mask, gamma, lam):
    nextv = torch.zeros(rewards.shape[0])
    last = torch.zeros(rewards.shape[0])
    out = []
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * nextv - values[:, t]
        cand = delta + gamma * lam * last
        nextv = values[:, t] * mask[:, t] + (1 - mask[:, t]) * nextv
        last = cand * mask[:, t] + (1 - mask[:, t]) * last
        out.append(last)
    adv = torch.stack(out[::-1], dim=1)
    returns = adv + values
    return masked_whiten(adv, mask), returns


def kl(logp, ref, kind):
    if kind == "k1":
        return logp - ref
    if kind == "abs":
        return (logp - ref).abs()
    if kind == "k2":
        return 0.5 * (logp - ref) ** 2
    d = torch.clamp(ref - logp, -20, 20)
    return torch.clamp(torch.exp(d) - d - 1, -10, 10)


def agg(loss, mask, mode):
    if mode == "token-mean":
        return masked_mean(loss, mask)
    if mode == "seq-mean-token-sum":
        return (loss * mask).sum(-1).mean()
    if mode == "seq-mean-token-mean":
        return ((loss * mask).sum(-1) / mask.sum(-1)).mean()
    return (loss * mask).sum() / mask.shape[-1]


def policy_loss(old, logp, adv, mask, lo, hi, c, mode, isw=None):
    logp = logp.clone().requires_grad_(True)
    nkl = torch.clamp(logp - old, -20, 20)
    ratio = torch.exp(nkl)
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - lo, 1 + hi)
    c1 = torch.maximum(l1, l2)
    clipfrac = masked_mean(torch.gt(l2, l1).double(), mask)
    l3 = -adv * c
    c2 = torch.min(l3, c1)
    lower = masked_mean(torch.gt(c1, l3).double() * (adv < 0).double(), mask)
    pg = torch.where(adv < 0, c2, c1)
    if isw is not None:
        pg = pg * isw
    loss = agg(pg, mask, mode)
    loss.backward()
    return {
        "loss": loss.item(),
        "clipfrac": clipfrac.item(),
        "clipfrac_lower": lower.item(),
        "approx_kl": masked_mean(-nkl, mask).item(),
        "grad": logp.grad.flatten().tolist(),
    }


def multi_turn_mask(B, R):
    # Rows of model turns (1) separated by tool observations (0), then padding.
    m = np.zeros((B, R))
    for i in range(B):
        j, L = 0, rng.integers(2, R + 1)
        while j < L:
            n = rng.integers(1, 4)
            m[i, j : min(j + n, L)] = 1
            j += n + rng.integers(0, 3)
    return m


cases = []
for case in range(6):
    B, R = 8, 12
    mask = multi_turn_mask(B, R)
    groups = [str(i // (1 + case % 4)) for i in range(B)]
    valid = mask.cumsum(-1)
    rewards = np.zeros((B, R))
    last = [int(np.nonzero(mask[i])[0].max()) for i in range(B)]
    seq_r = f32(rng.choice([0.0, 1.0, 0.5, -1.0], size=B) if case % 2 else rng.normal(size=B))
    for i in range(B):
        rewards[i, last[i]] = seq_r[i]
    if case == 5:
        rewards = f32(rng.normal(size=(B, R)) * mask)  # dense token rewards
    old = f32(-rng.exponential(1.0, size=(B, R)))
    logp = f32(old + rng.normal(scale=0.3, size=(B, R)))
    ref = f32(old + rng.normal(scale=0.2, size=(B, R)))
    rollout = f32(old + rng.normal(scale=0.1, size=(B, R)))
    values = f32(rng.normal(size=(B, R)))
    T = lambda a: torch.tensor(a)
    mT, rT = T(mask), T(rewards)
    out = {
        "grpo": group_outcome(rT, mT, groups, "grpo").flatten().tolist(),
        "drgrpo": group_outcome(rT, mT, groups, "grpo", norm=False).flatten().tolist(),
        "rloo": group_outcome(rT, mT, groups, "rloo").flatten().tolist(),
    }
    a, ret = reinforce_pp(rT, mT, 0.99)
    out["reinforcepp_adv"], out["reinforcepp_returns"] = a.flatten().tolist(), ret.flatten().tolist()
    a, ret = gae(rT, T(values), mT, 0.99, 0.95)
    out["gae_adv"], out["gae_returns"] = a.flatten().tolist(), ret.flatten().tolist()
    for kind in ["k1", "abs", "k2", "k3"]:
        out["kl_" + kind] = kl(T(logp), T(ref), kind).flatten().tolist()
    beta = 0.05
    kld = kl(T(old), T(ref), "k3") * mT
    out["kl_penalty_rewards"] = (rT - beta * kld).flatten().tolist()
    out["kl_penalty_mean"] = masked_mean(kld, mT, axis=-1).mean().item()
    adv = group_outcome(rT, mT, groups, "grpo")
    tokw = torch.clamp(torch.exp(torch.clamp(T(old) - T(rollout), -20, 20)), max=2.0) * mT
    seqw = torch.clamp(torch.exp(torch.clamp(((T(old) - T(rollout)) * mT).sum(-1), -20, 20)), max=2.0).unsqueeze(-1) * mT
    out["is_token"] = tokw.flatten().tolist()
    out["is_sequence"] = seqw.flatten().tolist()
    for mode in ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]:
        out["agg_" + mode] = agg(T(values), mT, mode).item()
        out["ppo_" + mode] = policy_loss(T(old), T(logp), adv, mT, 0.2, 0.28, 3.0, mode)
    out["ppo_tis"] = policy_loss(T(old), T(logp), adv, mT, 0.2, 0.28, 3.0, "token-mean", isw=tokw)
    metric = [float(x) for x in seq_r]
    if case % 2:
        keep = []
        by = defaultdict(list)
        for g, v in zip(groups, metric):
            by[g].append(v)
        for i, g in enumerate(groups):
            if len(by[g]) == 1 or np.std(by[g]) > 0:
                keep.append(i)
        out["filter_keep"] = keep
    cases.append({
        "B": B, "R": R, "groups": groups, "mask": mask.astype(int).flatten().tolist(),
        "rewards": rewards.flatten().tolist(), "old": old.flatten().tolist(), "logp": logp.flatten().tolist(),
        "ref": ref.flatten().tolist(), "rollout": rollout.flatten().tolist(), "values": values.flatten().tolist(),
        "metric": metric, "out": out,
    })

print(json.dumps({"cases": cases}))

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
import json
import math
import struct
import sys

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, en = e["data_offsets"]
        arr = np.frombuffer(data[base + b:base + en], dtype="<f4").reshape(e["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float64))
    return out


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    blobs, off = [], 0
    for name in sorted(tensors):
        arr = tensors[name]
        dtype = {np.float32: "F32", np.int32: "I32"}[arr.dtype.type]
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hj = json.dumps(header, sort_keys=True).encode()
    hj += b" " * (-len(hj) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def inv_freq(cfg):
    # transformers' default and "llama3" rope initialisation, in float32
    # (as the model computes it), then widened.
    dim = cfg["head_dim"]
    base = cfg["rope_theta"]
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type") == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wave, high_wave = old / low, old / high
        wave = 2 * math.pi / inv
        inv_l = torch.where(wave > low_wave, inv / factor, inv)
        smooth = (old / wave - low) / (high - low)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wave < high_wave) * ~(wave > low_wave)
        inv = torch.where(medium, smoothed, inv_l)
    return inv


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def logprobs(cfg, W, ids):
    """Per-token log p(ids[j+1] | ids[:j+1]) for one row, in the weights' dtype."""
    T = len(ids)
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    mt = cfg["model_type"]
    qkv_bias = mt == "qwen2" or cfg.get("attention_bias", False)
    o_bias = mt == "llama" and cfg.get("attention_bias", False)
    # The angle is one float32 product, as in transformers.
    dtype = W["model.embed_tokens.weight"].dtype  # float64 for goldens
    freqs = torch.arange(T).float()[:, None] * inv_freq(cfg)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1).to(dtype)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    mask = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
    x = W["model.embed_tokens.weight"][torch.tensor(ids)]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)

        def lin(name, inp, bias):
            y = inp @ W[p + name + ".weight"].T
            if bias:
                y = y + W[p + name + ".bias"]
            return y

        q = lin("self_attn.q_proj", h, qkv_bias).view(T, nh, hd)
        k = lin("self_attn.k_proj", h, qkv_bias).view(T, nkv, hd)
        v = lin("self_attn.v_proj", h, qkv_bias).view(T, nkv, hd)
        if mt == "qwen3":
            q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        scores = (q @ k.transpose(1, 2)) / math.sqrt(hd) + mask
        att = torch.softmax(scores, dim=-1) @ v
        att = att.transpose(0, 1).reshape(T, nh * hd)
        x = x + lin("self_attn.o_proj", att, o_bias)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    lp = torch.log_softmax(x @ head.T, dim=-1)
    return lp[torch.arange(T - 1), torch.tensor(ids[1:])]


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


def main():
    out_path, specs = sys.argv[1], sys.argv[2:]
    tensors, meta = {}, {}
    torch.set_num_threads(1)
    for spec in specs:
        name, d, seed = spec.split(":")
        with open(d + "/config.json") as f:
            cfg_text = f.read()
        cfg = json.loads(cfg_text)
        W = {n: t.requires_grad_() for n, t in read_safetensors(d + "/model.safetensors").items()}
        rows = rows_for(name, cfg["vocab_size"])
        g = torch.Generator().manual_seed(1000 + int(seed))
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
        tensors[name + ".tokens"] = np.array(sum(rows, []), dtype=np.int32)
        tensors[name + ".lengths"] = np.array([len(r) for r in rows], dtype=np.int32)
        tensors[name + ".weights"] = torch.cat(weights).numpy().astype(np.float32)
        tensors[name + ".logprobs"] = torch.cat(lps).numpy().astype(np.float32)
        tensors[name + ".loss"] = np.array([float(loss)], dtype=np.float32)
        for pn, t in W.items():
            tensors[name + ".grad." + pn] = t.grad.numpy().astype(np.float32)
        meta[name + ".config"] = cfg_text
        meta[name + ".seed"] = seed
        print("%s: loss %.6f, %d params" % (name, float(loss), sum(t.numel() for t in W.values())), file=sys.stderr)
    adamw_steps(tensors, meta)
    meta["variants"] = ",".join(s.split(":")[0] for s in specs)
    meta["generator"] = "reference.py, torch " + torch.__version__
    write_safetensors(out_path, tensors, meta)


if __name__ == "__main__":
    main()

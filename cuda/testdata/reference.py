#!/usr/bin/python3
"""Plain PyTorch reference for the in-process engine's numerics.

Reads tiny model directories written by `agentrl model init` (config.json +
model.safetensors), runs a straightforward float32 PyTorch implementation of
the Hugging Face Llama / Qwen2 / Qwen3 decoders on a fixed prompt, then 32
greedy steps (each step re-runs the whole sequence, no KV cache), and writes
the expected logits and tokens to a safetensors file.

cuda/train/testdata/reference.py imports this file (by path) for the same
decoder in float64: read_safetensors, write_safetensors and logits follow
the dtype they are given.

Regenerate (from the repository root): sh cuda/testdata/regen.sh
Usage: reference.py OUT.safetensors NAME:DIR:SEED [NAME:DIR:SEED ...]
"""
import json
import math
import struct
import sys

import numpy as np
import torch

DECODE_STEPS = 32


def read_safetensors(path, dtype=np.float32):
    """The F32 tensors of a safetensors file, widened to dtype."""
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
        out[name] = torch.from_numpy(arr.astype(dtype))
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
    # (as the model computes it, whatever the weights' dtype).
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


def forward(cfg, W, ids, kv_round=None):
    """Logits [len(ids)][vocab] of one row, in the weights' dtype.

    kv_round, if given, maps each layer's keys (after RoPE) and values as a
    KV cache would store them (reference_kvbf16.py: rounded to bf16)."""
    T = len(ids)
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    mt = cfg["model_type"]
    qkv_bias = mt == "qwen2" or cfg.get("attention_bias", False)
    o_bias = mt == "llama" and cfg.get("attention_bias", False)
    # The angle is one float32 product, as in transformers.
    dtype = W["model.embed_tokens.weight"].dtype
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
        if kv_round:
            k, v = kv_round(k), kv_round(v)
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # heads first
        scores = (q @ k.transpose(1, 2)) / math.sqrt(hd) + mask
        att = torch.softmax(scores, dim=-1) @ v  # (nh, T, hd)
        att = att.transpose(0, 1).reshape(T, nh * hd)
        x = x + lin("self_attn.o_proj", att, o_bias)
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
    return x @ head.T


def generate(variant, dtype=np.float32, extra=None):
    """The generators' common driver: argv is OUT.safetensors NAME:DIR:SEED...

    For each model directory, variant(name, cfg, W, seed) returns that
    model's expected tensors (numpy, named without the "NAME." prefix); W is
    read in dtype. extra(tensors, meta), if given, adds more before the file
    is written with each variant's config.json text and seed as metadata.
    """
    out_path, specs = sys.argv[1], sys.argv[2:]
    tensors, meta = {}, {}
    torch.set_num_threads(1)
    for spec in specs:
        name, d, seed = spec.split(":")
        with open(d + "/config.json") as f:
            cfg_text = f.read()
        W = read_safetensors(d + "/model.safetensors", dtype)
        for what, arr in variant(name, json.loads(cfg_text), W, int(seed)).items():
            tensors[name + "." + what] = arr
        meta[name + ".config"] = cfg_text
        meta[name + ".seed"] = seed
    if extra:
        extra(tensors, meta)
    meta["variants"] = ",".join(s.split(":")[0] for s in specs)
    meta["generator"] = "reference.py, torch " + torch.__version__
    write_safetensors(out_path, tensors, meta)


def fixed_prompt(name, cfg):
    """The 16-token prompt of a variant, the same in every generator."""
    V = cfg["vocab_size"]
    return [(i * 37 + 11 * len(name)) % V for i in range(16)]


def run_greedy(cfg, W, prompt, kv_round=None):
    """Prompt logits and DECODE_STEPS greedy steps (each step re-runs the
    whole sequence): the expected tensors and each step's top-2 gap."""
    with torch.no_grad():
        pl = forward(cfg, W, prompt, kv_round)
        seq, steps, toks, gaps = list(prompt), [], [], []
        for _ in range(DECODE_STEPS):
            lg = forward(cfg, W, seq, kv_round)[-1]
            top = torch.topk(lg, 2).values
            gaps.append(float(top[0] - top[1]))
            t = int(torch.argmax(lg))
            steps.append(lg)
            toks.append(t)
            seq.append(t)
    return {
        "prompt": np.array(prompt, dtype=np.int32),
        "prompt_logits": pl.numpy().astype(np.float32),
        "decode_logits": torch.stack(steps).numpy().astype(np.float32),
        "tokens": np.array(toks, dtype=np.int32),
    }, gaps


def greedy(name, cfg, W, seed):
    """Prompt logits and DECODE_STEPS greedy steps on a fixed prompt."""
    out, gaps = run_greedy(cfg, W, fixed_prompt(name, cfg))
    # Greedy comparisons are only meaningful when no step is a near tie.
    assert min(gaps) > 1e-3, (name, min(gaps))
    print("%s: min top-2 gap %.4f, tokens %s" % (name, min(gaps), list(out["tokens"][:8])), file=sys.stderr)
    return out


if __name__ == "__main__":
    generate(greedy)

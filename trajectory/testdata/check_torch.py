"""Loads an agentrl batch (safetensors) with PyTorch and runs on it the index
operations verl's trainer runs, checking the layout verl expects.

usage: python3 check_torch.py BATCH.safetensors

The file is parsed by hand (8-byte header length, JSON header, raw tensors),
as the safetensors package may be absent; the tensors are torch tensors made
with torch.frombuffer. Exits non-zero with a message on any mismatch.
"""
import json
import struct
import sys

import torch

DTYPES = {"I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "F32": torch.float32}


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = bytearray(raw[8 + n :])
    t = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        t[name] = torch.frombuffer(data[b:e], dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).clone()
    return t, meta


def fail(msg):
    sys.exit("FAIL: " + msg)


def check_mrope(t, B, P, R):
    # verl agent_loop.py _compute_position_ids: (bsz, 4, L), row 0 the
    # text positions (ones, arange over the valid tokens), rows 1-3
    # get_rope_index's (1 where attention_mask is 0).
    pos, att = t["position_ids"], t["attention_mask"]
    if pos.shape != (B, 4, P + R):
        fail("M-RoPE position_ids have shape %s, want (%d, 4, %d)" % (tuple(pos.shape), B, P + R))
    for i in range(B):
        valid = att[i].bool()
        text = torch.ones(P + R, dtype=torch.int64)
        text[valid] = torch.arange(int(valid.sum()))
        if not torch.equal(pos[i, 0], text):
            fail("row %d: position_ids[:, 0] is not the text positions" % i)
        if torch.any(pos[i, 1:, ~valid] != 1):
            fail("row %d: M-RoPE positions are not 1 on padding" % i)
        v = pos[i, 1:, valid]
        if v.numel() and int(v[:, 0].max()) != 0:
            fail("row %d: M-RoPE positions do not start at 0" % i)
    # Qwen2-VL's rotary embedding indexes with it as (3, bsz, L).
    if pos[:, 1:].transpose(0, 1).shape != (3, B, P + R):
        fail("M-RoPE rows do not transpose to (3, bsz, L)")


def check_multi_modal(t, B):
    # verl's non_tensor_batch["multi_modal_inputs"] is one dict per row
    # (agent_loop.py _compute_multi_modal_inputs); rebuild it and run
    # what the actor does with it: cat the rows of a micro-batch.
    pv, grid = t["multi_modal_inputs.pixel_values"], t["multi_modal_inputs.image_grid_thw"]
    seqlens, per_row = t["multi_modal_inputs.images_seqlens"], t["multi_modal_inputs.row_images"]
    if pv.dtype != torch.float32 or pv.dim() != 2:
        fail("pixel_values is %s %s, want float32 (patches, row)" % (pv.dtype, tuple(pv.shape)))
    for name, x in (("image_grid_thw", grid), ("images_seqlens", seqlens), ("row_images", per_row)):
        if x.dtype != torch.int64:
            fail("%s is %s, verl's processor gives int64" % (name, x.dtype))
    if grid.dim() != 2 or grid.shape[1] != 3 or per_row.shape != (B,) or int(per_row.sum()) != grid.shape[0]:
        fail("image_grid_thw %s and row_images %s disagree" % (tuple(grid.shape), per_row.tolist()))
    if not torch.equal(seqlens, torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0])):
        fail("images_seqlens is not repeat_interleave(h*w, t)")
    if int(grid.prod(-1).sum()) != pv.shape[0]:
        fail("pixel_values has %d rows for grids of %d patches" % (pv.shape[0], int(grid.prod(-1).sum())))
    rows, g0, p0 = [], 0, 0
    for i in range(B):
        n = int(per_row[i])
        g = grid[g0 : g0 + n]
        k = int(g.prod(-1).sum()) if n else 0
        rows.append({"pixel_values": pv[p0 : p0 + k], "image_grid_thw": g} if n else {})
        g0, p0 = g0 + n, p0 + k
        # Each image stands for t*h*w/merge^2 <|image_pad|> tokens (merge 2).
        pads = int((t["input_ids"][i] == IMAGE_PAD).sum())
        if pads != k // 4:
            fail("row %d: %d image pad tokens for %d patches" % (i, pads, k))
    with_images = [r for r in rows if r]
    cat = torch.cat([r["pixel_values"] for r in with_images], dim=0)
    if not torch.equal(cat, pv):
        fail("pixel_values rows do not concatenate back")


IMAGE_PAD = 151655


def main(path):
    t, meta = load(path)
    for name in ("prompts", "responses", "input_ids", "attention_mask", "position_ids", "response_mask"):
        if t[name].dtype != torch.int64:
            fail("%s is %s, verl uses int64" % (name, t[name].dtype))
    B, R = t["responses"].shape
    P = t["prompts"].shape[1]
    if int(meta["prompt_len"]) != P or int(meta["response_len"]) != R:
        fail("prompt_len/response_len metadata disagree with the shapes")

    # verl/utils/model.py compute_position_id_with_mask
    want_pos = torch.clip(torch.cumsum(t["attention_mask"], dim=-1) - 1, min=0, max=None)
    if t["position_ids"].dim() == 3:
        check_mrope(t, B, P, R)
    elif not torch.equal(t["position_ids"], want_pos):
        fail("position_ids are not compute_position_id_with_mask(attention_mask)")
    if "multi_modal_inputs.row_images" in t:
        check_multi_modal(t, B)
    if not torch.equal(torch.cat([t["prompts"], t["responses"]], dim=1), t["input_ids"]):
        fail("input_ids is not prompts ++ responses")
    # agent_loop.py: response_mask = mask * response attention
    if torch.any(t["response_mask"] * (1 - t["attention_mask"][:, P:]) != 0):
        fail("response_mask is 1 on padding")

    # The actor's log-prob computation (dp_actor / torch_functional
    # logprobs_from_logits): gather the sampled ids out of the logits.
    vocab = int(t["input_ids"].max().item()) + 1
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(B, R, vocab, generator=g)
    logp = torch.gather(logits.log_softmax(-1), -1, t["responses"].unsqueeze(-1)).squeeze(-1)
    if logp.shape != (B, R):
        fail("gathered log-probs have shape %s" % (tuple(logp.shape),))
    mask = t["response_mask"].to(torch.float32)
    # verl/utils/torch_functional.py masked_mean
    mean = (logp * mask).sum() / (mask.sum() + 1e-8)
    if not torch.isfinite(mean):
        fail("masked mean of log-probs is not finite")
    if "routed_experts" in t:
        # Routing replay (R3): int16 (B, P+R, layers, topk), zero where
        # attention_mask is 0, indexed by position like input_ids.
        re = t["routed_experts"]
        if re.dtype != torch.int16 or re.dim() != 4 or re.shape[:2] != t["input_ids"].shape:
            fail("routed_experts has shape %s dtype %s" % (tuple(re.shape), re.dtype))
        if torch.any(re * (1 - t["attention_mask"])[:, :, None, None].to(torch.int16) != 0):
            fail("routed_experts is non-zero on padding")
        # The actor replays it per micro-batch: rows selected like input_ids.
        idx = torch.arange(B).flip(0)
        if not torch.equal(re[idx][:, P:], re.index_select(0, idx)[:, P:]):
            fail("routed_experts does not survive index_select")
    if "rollout_log_probs" in t:
        lp = t["rollout_log_probs"]
        if lp.shape != (B, R) or lp.dtype != torch.float32:
            fail("rollout_log_probs has shape %s dtype %s" % (tuple(lp.shape), lp.dtype))
        if torch.any(lp * (1 - mask) != 0):
            fail("rollout_log_probs is non-zero off the response mask")
        # truncated importance sampling ratio as verl computes it
        ratio = torch.exp(logp - lp) * mask
        if not torch.all(torch.isfinite(ratio)):
            fail("TIS ratio not finite")

    if "rm_scores" in t:
        rm = t["rm_scores"]
        # agent_loop.py _postprocess: the score sits at attention_mask[:, P:].sum() - 1
        idx = t["attention_mask"][:, P:].sum(dim=1) - 1
        want = torch.zeros_like(rm)
        want[torch.arange(B), idx] = t["rewards"]
        if not torch.equal(rm, want):
            fail("rm_scores are not on the last valid response token")
        # GRPO outcome advantage input: the sequence score
        if not torch.allclose(rm.sum(-1), t["rewards"]):
            fail("rm_scores rows do not sum to the rewards")

    nt = json.loads(meta["non_tensor_batch"])
    for key in ("uid", "index", "turn_scores", "tool_rewards", "__num_turns__"):
        if key not in nt or len(nt[key]) != B:
            fail("non_tensor_batch[%r] missing or not %d long" % (key, B))
    if [int(x) for x in nt["__num_turns__"]] != t["num_turns"].tolist():
        fail("__num_turns__ disagrees with num_turns")
    # Multi-output rollouts (verl/trainer/ppo/v1/agent_loop_tq.py): a row
    # per AgentLoopOutput keyed {uid}_{session_id}_{index}, loss_mask =
    # response_mask, the last output's reward on every output.
    if "loss_mask" in t or "key" in nt or "rollout_ids" in meta:
        if "loss_mask" not in t or "key" not in nt or "rollout_ids" not in meta:
            fail("loss_mask, non_tensor_batch key and rollout_ids come together")
        if t["loss_mask"].dtype != torch.int64 or not torch.equal(t["loss_mask"], t["response_mask"]):
            fail("loss_mask is not response_mask (int64)")
        keys, rollouts = nt["key"], json.loads(meta["rollout_ids"])
        if len(keys) != B or len(set(keys)) != B or len(rollouts) != B:
            fail("key is not one distinct key per row, or rollout_ids not one per row")
        by_rollout = {}
        for i, r in enumerate(rollouts):
            by_rollout.setdefault(r, []).append(i)
        for r, rows in by_rollout.items():
            if len({nt["uid"][i] for i in rows}) != 1:
                fail("rollout %r spans uids" % r)
            if len(rows) > 1:
                for k, i in enumerate(rows):
                    if not keys[i].startswith(nt["uid"][i] + "_") or not keys[i].endswith("_%d" % k):
                        fail("row %d key %r is not {uid}_{session}_{%d}" % (i, keys[i], k))
                if len({float(t["rewards"][i]) for i in rows}) != 1:
                    fail("rollout %r: its outputs' rewards differ" % r)
        # GRPO's group is its rollouts: index (uid) → distinct rollouts,
        # gathered with torch as the trainer's index ops would.
        uids = sorted(set(nt["uid"]))
        row_uid = torch.tensor([uids.index(u) for u in nt["uid"]])
        first = torch.tensor([by_rollout[r][-1] for r in sorted(by_rollout)])
        per_uid = torch.bincount(row_uid[first], minlength=len(uids))
        if int(per_uid.sum()) != len(by_rollout):
            fail("rollouts do not partition the rows")
    mi = json.loads(meta["meta_info"])
    if len(mi["metrics"]) != B or any(set(m) != {"generate_sequences", "tool_calls", "num_preempted"} for m in mi["metrics"]):
        fail("meta_info.metrics is not one AgentLoopMetrics per row")
    print("ok: torch %s, %d rows, %d tensors" % (torch.__version__, B, len(t)))


if __name__ == "__main__":
    main(sys.argv[1])

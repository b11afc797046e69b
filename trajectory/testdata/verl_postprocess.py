"""Builds verl's rollout batch from agentrl trajectories with verl's own
postprocessing, ported line for line to run without verl, and compares it
tensor by tensor with the batch agentrl wrote.

usage: python3 verl_postprocess.py BATCH.safetensors TRAJECTORIES.jsonl PAD_TOKEN_ID

So the expectations are verl's, not agentrl's. Ported from verl-project/verl
at commit 1dda039b9c6311889a9c9a26040677e1254814f9:

- verl/experimental/agent_loop/agent_loop.py
  - AgentLoopBase._cap_text_prompt_length: prompts longer than
    rollout.prompt_length keep their last prompt_length tokens;
  - AgentLoopWorker._pad_token_ids: tokenizer.pad(padding="max_length",
    padding_side=...) of one row, which for a plain list of ids is the pad
    id repeated on the padding side and an attention mask of 0s there;
  - AgentLoopWorker._agent_loop_postprocess: prompt left-padded, response
    and response_mask right-padded (the mask padded with the pad id, then
    multiplied by the response attention mask), rollout log-probs padded
    with 0.0 into a float32 tensor, attention_mask and input_ids
    concatenated, position_ids by compute_position_id_with_mask (text only,
    no processor);
  - AgentLoopWorker._postprocess: the rows concatenated, rm_scores (float32)
    only when every row has a score, the score at
    attention_mask[:, prompt_length:].sum(1) - 1, __num_turns__;
- verl/experimental/agent_loop/tool_agent_loop.py ToolAgentLoop.run: the
  response ids, mask and log-probs cut to rollout.response_length;
- verl/utils/model.py compute_position_id_with_mask;
- routing replay (R3): _agent_loop_postprocess's routed_experts, an int16
  (1, P+R, layers, topk) zero tensor with the trajectory's rows placed
  from start_pos = P - len(prompt_ids), after ToolAgentLoop.run's cut to
  len(prompt_ids) + response_length rows; _postprocess concatenates them.
  verl caps a long prompt before generating, so its routing starts at the
  capped prompt; agentrl cuts the prompt when collating, so the rows of the
  cut tokens are dropped first (the same alignment).

prompt_length and response_length are verl's rollout config; they are read
from the batch's metadata (what agentrl was configured with). The agentrl
batch is read by hand (8-byte header length, JSON header, raw tensors), as
the safetensors package may be absent. Exits non-zero naming the first
tensor and row that differ.
"""
import base64
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


# verl/utils/model.py
def compute_position_id_with_mask(mask):
    return torch.clip(torch.cumsum(mask, dim=-1) - 1, min=0, max=None)


def pad_token_ids(tokens, max_length, padding_side, return_attention_mask, pad_id):
    """AgentLoopWorker._pad_token_ids, with tokenizer.pad's max_length
    padding of a single unbatched row written out (it does not truncate)."""
    if not tokens:
        result = {"input_ids": torch.full((1, max_length), pad_id, dtype=torch.long)}
        if return_attention_mask:
            result["attention_mask"] = torch.zeros((1, max_length), dtype=torch.long)
        return result
    n = max(0, max_length - len(tokens))
    if padding_side == "left":
        ids, att = [pad_id] * n + list(tokens), [0] * n + [1] * len(tokens)
    else:
        ids, att = list(tokens) + [pad_id] * n, [1] * len(tokens) + [0] * n
    result = {"input_ids": torch.tensor(ids, dtype=torch.long).unsqueeze(0)}
    if return_attention_mask:
        result["attention_mask"] = torch.tensor(att, dtype=torch.long).unsqueeze(0)
    return result


def agent_loop_postprocess(out, prompt_length, response_length, pad_id):
    prompt_ids = out["prompt_ids"]
    if len(prompt_ids) > prompt_length:  # _cap_text_prompt_length
        prompt_ids = prompt_ids[-prompt_length:]
    # ToolAgentLoop.run's output cut.
    response_ids = out["response_ids"][:response_length]
    response_mask_list = out["response_mask"][:response_length]
    logprobs = out["response_logprobs"]
    if logprobs is not None:
        logprobs = logprobs[:response_length]

    prompt_output = pad_token_ids(prompt_ids, prompt_length, "left", True, pad_id)
    response_output = pad_token_ids(response_ids, response_length, "right", True, pad_id)
    response_mask_output = pad_token_ids(response_mask_list, response_length, "right", False, pad_id)
    response_logprobs = None
    if logprobs is not None:
        pad_size = response_length - len(logprobs)
        response_logprobs = torch.tensor(logprobs + [0.0] * pad_size).unsqueeze(0)
    response_mask = response_mask_output["input_ids"] * response_output["attention_mask"]
    attention_mask = torch.cat([prompt_output["attention_mask"], response_output["attention_mask"]], dim=1)
    input_ids = torch.cat([prompt_output["input_ids"], response_output["input_ids"]], dim=1)

    routed_experts = None
    experts = out.get("routed_experts")
    if experts is not None:
        experts = experts[len(out["prompt_ids"]) - len(prompt_ids) :]  # the capped prompt's rows
        experts = experts[: len(prompt_ids) + response_length]  # ToolAgentLoop.run's cut
        total_length = input_ids.shape[1]
        length, layer_num, topk_num = experts.shape
        experts_tensor = experts.to(torch.int16)
        routed_experts = torch.zeros(1, total_length, layer_num, topk_num, dtype=experts_tensor.dtype)
        start_pos = prompt_output["input_ids"].shape[1] - len(prompt_ids)
        end_pos = min(start_pos + length, total_length)
        if start_pos < 0 or end_pos > total_length:
            raise ValueError("Invalid position range: start_pos=%d, end_pos=%d, total_length=%d" % (start_pos, end_pos, total_length))
        routed_experts[:, start_pos:end_pos] = experts_tensor.unsqueeze(0)

    position_ids = compute_position_id_with_mask(attention_mask)
    return {
        "routed_experts": routed_experts,
        "prompt_ids": prompt_output["input_ids"],
        "response_ids": response_output["input_ids"],
        "input_ids": input_ids,
        "position_ids": position_ids,
        "response_mask": response_mask,
        "attention_mask": attention_mask,
        "response_logprobs": response_logprobs,
        "reward_score": out["reward_score"],
        "num_turns": out["num_turns"],
    }


def postprocess(inputs):
    batch = {
        "prompts": torch.cat([i["prompt_ids"] for i in inputs], dim=0),
        "responses": torch.cat([i["response_ids"] for i in inputs], dim=0),
        "response_mask": torch.cat([i["response_mask"] for i in inputs], dim=0),
        "input_ids": torch.cat([i["input_ids"] for i in inputs], dim=0),
        "attention_mask": torch.cat([i["attention_mask"] for i in inputs], dim=0),
        "position_ids": torch.cat([i["position_ids"] for i in inputs], dim=0),
    }
    if inputs[0]["routed_experts"] is not None:
        batch["routed_experts"] = torch.cat([i["routed_experts"] for i in inputs], dim=0)
    if inputs[0]["response_logprobs"] is not None:
        batch["rollout_log_probs"] = torch.cat([i["response_logprobs"] for i in inputs], dim=0)
    scores = [i["reward_score"] for i in inputs]
    if all(score is not None for score in scores):
        prompt_length = batch["prompts"].size(1)
        response_length = batch["attention_mask"][:, prompt_length:].sum(dim=1) - 1
        rm_scores = torch.zeros_like(batch["response_mask"], dtype=torch.float32)
        rm_scores[torch.arange(batch["response_mask"].size(0)), response_length] = torch.tensor(scores, dtype=torch.float32)
        batch["rm_scores"] = rm_scores
    num_turns = [i["num_turns"] for i in inputs]
    return batch, num_turns


def routing(r):
    """A trajectory's routed_experts (base64 of little-endian int16, rows x
    layers x topk) as the (rows, layers, topk) array an engine returns."""
    if r is None:
        return None
    raw = bytearray(base64.b64decode(r["experts"]))
    flat = torch.frombuffer(raw, dtype=torch.int16) if raw else torch.zeros(0, dtype=torch.int16)
    return flat.reshape(-1, r["layers"], r["topk"]).clone()


def fail(msg):
    sys.exit("FAIL: " + msg)


def main(batch_path, traj_path, pad_id):
    got, meta = load(batch_path)
    P, R = int(meta["prompt_len"]), int(meta["response_len"])
    trajs = {}
    with open(traj_path) as f:
        for line in f:
            if line.strip():
                tr = json.loads(line)
                trajs[tr["id"]] = tr
    ids = json.loads(meta["ids"])
    if not ids:
        fail("the batch has no rows")
    # verl's agent loops record a log-prob for every response token (0.0 on
    # tool tokens) when rollout.calculate_log_probs is on. agentrl's JSON
    # omits rollout_logprobs on a row without policy tokens (Validate
    # allows no other row without them when some have them): that is
    # verl's all-0.0 list.
    with_lp = any(trajs[rid].get("rollout_logprobs") is not None for rid in ids if rid in trajs)
    rows = []
    for rid in ids:
        if rid not in trajs:
            fail("batch row %r is not among the trajectories" % rid)
        tr = trajs[rid]
        # AgentLoopOutput's fields, from agentrl's trajectory JSON.
        rows.append(
            agent_loop_postprocess(
                {
                    # (Go writes an empty list as null.)
                    "prompt_ids": tr["prompt_ids"] or [],
                    "response_ids": tr["response_ids"] or [],
                    "response_mask": tr["response_mask"] or [],
                    "response_logprobs": tr.get("rollout_logprobs")
                    or ([0.0] * len(tr["response_ids"] or []) if with_lp else None),
                    "reward_score": tr.get("reward"),
                    "num_turns": tr["num_turns"],
                    "routed_experts": routing(tr.get("routed_experts")),
                },
                P,
                R,
                pad_id,
            )
        )
    want, num_turns = postprocess(rows)
    for name, w in want.items():
        if name not in got:
            fail("agentrl's batch has no %s; verl's has" % name)
        g = got[name]
        if g.dtype != w.dtype or g.shape != w.shape:
            fail("%s: agentrl %s %s, verl %s %s" % (name, g.dtype, tuple(g.shape), w.dtype, tuple(w.shape)))
        if not torch.equal(g, w):
            r = (g != w).any(dim=-1).nonzero().flatten().tolist()[0]
            cols = (g[r] != w[r]).nonzero().flatten().tolist()
            fail(
                "%s row %d (%s): %d columns differ, first %s: agentrl %s, verl %s"
                % (name, r, ids[r], len(cols), cols[:8], g[r][cols[:8]].tolist(), w[r][cols[:8]].tolist())
            )
    for name in ("rm_scores", "rollout_log_probs", "routed_experts"):
        if name in got and name not in want:
            fail("agentrl's batch has %s; verl's has none for these rows" % name)
    nt = json.loads(meta["non_tensor_batch"])
    if [int(x) for x in nt["__num_turns__"]] != num_turns:
        fail("__num_turns__: agentrl %s, verl %s" % (nt["__num_turns__"], num_turns))
    print("ok: torch %s, %d rows match verl's postprocessing (%s)" % (torch.__version__, len(ids), ", ".join(sorted(want))))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))

"""Goldens for the in-process engine's penalties and top logprobs.

Regenerate (Debian's python3-torch; the output is deterministic):

    /usr/bin/python3 cuda/testdata/penalties_golden.py > cuda/testdata/penalties_golden.json

The semantics are vLLM's, computed here with PyTorch tensor operations in
float32 as vLLM runs them:
  - repetition penalty over prompt ∪ output (vllm/_custom_ops.py,
    apply_repetition_penalties_torch): where the id occurs, logits > 0 are
    divided by the penalty, the others multiplied;
  - then frequency and presence penalties over the output only
    (vllm/model_executor/layers/utils.py, apply_penalties):
    logits -= frequency_penalty * counts; logits -= presence_penalty * (counts > 0).
Both at vllm-project/vllm commit 00358600ed52e00c3c99b35e54aa916f900c4c15.
The logprobs are torch.log_softmax of the penalized logits divided by the
temperature (1 for greedy), and the top ones torch.topk of them.
"""
import json

import torch

V = 1000
K = 20


def case(seed, prompt_len, output_len, rep, pres, freq, temp):
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(V, generator=g) * 3).to(torch.float32)
    # Few distinct ids so the output repeats tokens (counts > 1).
    prompt = torch.randint(0, 60, (prompt_len,), generator=g)
    output = torch.randint(0, 60, (output_len,), generator=g)
    z = logits.clone().unsqueeze(0)
    counts = torch.zeros((1, V + 1), dtype=torch.long)
    counts.scatter_add_(1, output.unsqueeze(0), torch.ones_like(output.unsqueeze(0)))
    counts = counts[:, :V]
    pmask = torch.zeros((1, V + 1), dtype=torch.long)
    pmask.scatter_add_(1, prompt.unsqueeze(0), torch.ones_like(prompt.unsqueeze(0)))
    pmask = pmask[:, :V] > 0
    omask = counts > 0
    r = torch.tensor([rep], dtype=torch.float32).unsqueeze(1).repeat(1, V)
    pen = torch.where(pmask | omask, r, torch.tensor(1.0))
    z *= torch.where(z > 0, 1.0 / pen, pen)
    z -= torch.tensor([freq], dtype=torch.float32).unsqueeze(1) * counts
    z -= torch.tensor([pres], dtype=torch.float32).unsqueeze(1) * omask
    z = z[0]
    lp = torch.log_softmax(z / (temp if temp > 0 else 1.0), dim=0)
    top = torch.topk(lp, K)
    return {
        "seed": seed, "logits": logits.tolist(), "prompt": prompt.tolist(), "output": output.tolist(),
        "repetition_penalty": rep, "presence_penalty": pres, "frequency_penalty": freq, "temperature": temp,
        "penalized": z.tolist(), "argmax": int(torch.argmax(z)),
        "top_ids": top.indices.tolist(), "top_logprobs": top.values.tolist(),
    }


cases = [
    case(1, 30, 40, 1.0, 0.5, 0.3, 0.0),
    case(2, 10, 80, 1.0, -0.7, 1.1, 0.0),
    case(3, 50, 25, 1.3, 1.5, 0.0, 0.0),
    case(4, 20, 60, 1.0, 0.0, 2.0, 1.0),
    case(5, 40, 40, 1.1, 2.0, -0.5, 0.7),
    case(6, 0, 1, 1.0, 0.4, 0.4, 1.3),
]
print(json.dumps({"generator": "cuda/testdata/penalties_golden.py", "torch": torch.__version__, "cases": cases}))

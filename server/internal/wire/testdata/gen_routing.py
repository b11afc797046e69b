"""Writes routing.json: routed-experts payloads as the engines encode them,
made with NumPy itself, for TestRoutingGolden.

- vLLM (GenerateResponseChoice.routed_experts): base64 of np.save's .npy
  bytes of a (positions, layers, topk) array, uint8 or uint16.
- SGLang (meta_info.routed_experts): base64 of the flat row-major array's
  bytes, int32 unless meta_info.routed_experts_dtype says otherwise
  (routed_experts_capturer.py encode_routed_experts_for_wire).

Regenerate from the repository root with Debian's python3-numpy:
  /usr/bin/python3 server/internal/wire/testdata/gen_routing.py
"""
import base64, io, json, os

import numpy as np

rng = np.random.default_rng(7)
cases = []
for name, shape, dtype in [("npy uint8", (5, 3, 2), np.uint8), ("npy uint16", (7, 4, 8), np.uint16),
                           ("npy one position", (1, 2, 1), np.uint16), ("npy no positions", (0, 3, 2), np.uint8),
                           ("npy int16", (3, 2, 2), np.int16), ("npy int32", (4, 2, 3), np.int32)]:
    high = 255 if dtype == np.uint8 else 300
    a = rng.integers(0, high, size=shape).astype(dtype)
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    cases.append({"name": name, "npy": base64.b64encode(buf.getvalue()).decode(), "layers": shape[1], "topk": shape[2],
                  "values": a.reshape(-1).astype(int).tolist()})
for name, shape, dtype, wire in [("flat int32", (6, 4, 2), np.int32, None), ("flat uint16", (3, 5, 4), np.uint16, "uint16"),
                                 ("flat uint8", (2, 2, 2), np.uint8, "uint8")]:
    a = rng.integers(0, 250, size=shape).astype(dtype)
    cases.append({"name": name, "flat": base64.b64encode(a.tobytes()).decode(), "dtype": wire or "",
                  "layers": shape[1], "topk": shape[2], "values": a.reshape(-1).astype(int).tolist()})
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "routing.json")
with open(out, "w") as f:
    json.dump({"numpy": np.__version__, "cases": cases}, f, indent=1)
    f.write("\n")

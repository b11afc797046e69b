#!/usr/bin/python3
"""Measures OpenBLAS SGEMM (through Debian's numpy) on the prefill shape
(tokens × hidden) · (hidden × 2·intermediate), the GEMM peak the engine's
prefill is compared with. Usage: blas_gemm.py [T] [K] [N] [reps]"""
import json
import sys
import time

import numpy as np

T, K, N, reps = (int(a) for a in (sys.argv[1:] + ["512", "768", "5632", "5"][len(sys.argv) - 1:]))
rng = np.random.default_rng(1)
x = rng.standard_normal((T, K), dtype=np.float32)
w = rng.standard_normal((N, K), dtype=np.float32)
x @ w.T  # warm up
rates = []
for _ in range(reps):
    t = time.perf_counter()
    x @ w.T
    rates.append(2 * T * K * N / (time.perf_counter() - t))
rates.sort()
print(json.dumps({"peer": "OpenBLAS sgemm (numpy %s)" % np.__version__, "shape": [T, K, N],
                  "gflops": rates[len(rates) // 2] / 1e9, "all": [r / 1e9 for r in rates]}))

"""A test-only benchmark for the regression gate's power: the same work, plus a known extra
fraction of it when GPUPERF_SLOWDOWN is set (0.05 = 5% more identical matmuls per call).

Run by tools/gpu_run_gate.sh and tools/cpu_gate_evidence.sh, never by the shipped suite.
"""

import os

import pytest

SLOWDOWN = float(os.environ.get("GPUPERF_SLOWDOWN", "0"))
BASE_CALLS = 100  # matmuls per call; a slowdown s adds round(100 * s) more


@pytest.mark.gpuperf(remeasure=1)
def test_slowdown_matmul(gpu_benchmark):
    import torch

    gpu = torch.cuda.is_available()
    n = 4096 if gpu else 192
    device = "cuda" if gpu else "cpu"
    dtype = torch.bfloat16 if gpu else torch.float32
    g = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=dtype, generator=g)
    calls = BASE_CALLS + round(BASE_CALLS * SLOWDOWN)

    def work():
        for _ in range(calls):
            torch.mm(a, a)

    # the work counted is the base work: extra matmuls are a slowdown, not more throughput
    r = gpu_benchmark(work, work=BASE_CALLS * 2 * n**3, unit="flop")
    assert r.outcome == "ok"

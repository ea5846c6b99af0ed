"""A test-only benchmark for the regression gate's power: the same work, plus a known extra
fraction of it when GPUPERF_SLOWDOWN is set (0.05 = 5% more identical casts per call).

The work is an fp32->bf16 cast, memory-bound: on the H200 casts repeated within 0.05%
between sessions, while back-to-back matmuls moved by about 2% with the card's power
capping (docs/performance.md). Run by tools/gpu_run_gate.sh, never by the shipped suite.
"""

import os

SLOWDOWN = float(os.environ.get("GPUPERF_SLOWDOWN", "0"))
BASE_CALLS = 100  # casts per call; a slowdown s adds round(100 * s) more


def test_slowdown_cast(gpu_benchmark):
    import torch

    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    numel = (256 << 20) // 4 if gpu else 1 << 18  # 256 MiB of fp32 on a GPU
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(numel, device=device, generator=g)
    y = torch.empty(numel, device=device, dtype=torch.bfloat16)
    calls = BASE_CALLS + round(BASE_CALLS * SLOWDOWN)

    def work():
        for _ in range(calls):
            y.copy_(x)

    # the work counted is the base work: extra casts are a slowdown, not more throughput
    r = gpu_benchmark(work, work=BASE_CALLS * numel * 6, unit="bytes")
    assert r.outcome == "ok"

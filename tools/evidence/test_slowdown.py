"""Test-only benchmarks for the regression gate's power: the same work, plus a known extra
fraction of it when GPUPERF_SLOWDOWN is set (0.05 = 5% more identical work per call).

- test_slowdown_cast: an fp32->bf16 cast, memory-bound: judged in time.
- test_slowdown_mlp: a bf16 Llama-7B MLP block (2048 tokens, 4096 -> 11008 -> 4096),
  compute-bound: judged in time and per SM clock cycle. The slowdown repeats the block
  (100 blocks per call, 105 for 5%): the same kernels, unlike a scaled matrix dimension,
  which changed the kernel choice and made the block 64% slower rather than 5%.

Run by tools/gpu_run_gate.sh and tools/gpu_run_verdict.sh, never by the shipped suite.
"""

import os

import pytest

SLOWDOWN = float(os.environ.get("GPUPERF_SLOWDOWN", "0"))
BASE_CALLS = 100  # casts (or MLP blocks) per call; a slowdown s adds round(100 * s) more


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


@pytest.mark.gpuperf(bound="compute")
def test_slowdown_mlp(gpu_benchmark):
    import torch
    import torch.nn.functional as F

    gpu = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if gpu else ("cpu", torch.float32)
    tokens, hidden, inner = (2048, 4096, 11008) if gpu else (64, 64, 172)
    g = torch.Generator(device=device).manual_seed(0)

    def rand(*shape):
        return (torch.randn(*shape, device=device, generator=g) * 0.02).to(dtype)

    x, w_gate, w_up, w_down = rand(tokens, hidden), rand(inner, hidden), rand(inner, hidden), rand(hidden, inner)
    blocks = BASE_CALLS + round(BASE_CALLS * SLOWDOWN)

    def work():
        for _ in range(blocks):
            F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)

    flop = BASE_CALLS * 3 * 2 * tokens * hidden * inner
    r = gpu_benchmark(work, work=flop, unit="flop")
    assert r.outcome == "ok" and r.bound == "compute"

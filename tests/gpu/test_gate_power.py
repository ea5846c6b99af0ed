"""GPU-only benchmarks for the regression gate's power (never shipped, skipped without a GPU
by the plugin's own marker): the same work, plus a known extra fraction of it when
GPUPERF_SLOWDOWN is set (0.05: 5% more identical work per call).

- test_gate_cast: fp32/bf16 casts, memory-bound (the memory-bandwidth noise class).
- test_gate_mlp: bf16 Llama MLP blocks, compute-bound (judged in time and per SM clock
  cycle). The slowdown repeats whole blocks (20 per call, 21 for 5%): the same kernels,
  unlike a scaled matrix dimension, which changed the kernel choice and made the block 64%
  slower rather than 5%.

Three of each, so that each class has a pool. Run by tests/gpu/gate_power.sh (3 baseline
sessions, then A/A, 5% and 10% slower sessions; docs/performance.md has the results).
"""

import os

import pytest

SLOWDOWN = float(os.environ.get("GPUPERF_SLOWDOWN", "0"))
pytestmark = pytest.mark.gpu_requires_vram("8GiB")


@pytest.mark.parametrize(
    ("src", "dst", "mib"),
    [("float32", "bfloat16", 256), ("float32", "float16", 128), ("bfloat16", "float32", 256)],
)
def test_gate_cast(gpu_benchmark, src, dst, mib):
    import torch

    base_calls = 100
    numel = (mib << 20) // torch.empty((), dtype=getattr(torch, src)).element_size()
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(numel, device="cuda", generator=g).to(getattr(torch, src))
    y = torch.empty(numel, device="cuda", dtype=getattr(torch, dst))
    calls = base_calls + round(base_calls * SLOWDOWN)

    def work():
        for _ in range(calls):
            y.copy_(x)

    moved = numel * (x.element_size() + y.element_size())
    # the work counted is the base work: extra casts are a slowdown, not more throughput
    r = gpu_benchmark(work, work=base_calls * moved, unit="bytes")
    assert r.outcome == "ok"


@pytest.mark.gpuperf(bound="compute")
@pytest.mark.parametrize(
    ("tokens", "hidden", "inner"), [(2048, 4096, 11008), (1024, 4096, 11008), (2048, 5120, 13824)]
)
def test_gate_mlp(gpu_benchmark, tokens, hidden, inner):
    import torch
    import torch.nn.functional as F

    base_blocks = 20
    g = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape):
        return (torch.randn(*shape, device="cuda", generator=g) * 0.02).to(torch.bfloat16)

    x, w_gate, w_up, w_down = rand(tokens, hidden), rand(inner, hidden), rand(inner, hidden), rand(hidden, inner)
    blocks = base_blocks + round(base_blocks * SLOWDOWN)

    def work():
        for _ in range(blocks):
            F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)

    flop = base_blocks * 3 * 2 * tokens * hidden * inner
    r = gpu_benchmark(work, work=flop, unit="flop")
    assert r.outcome == "ok" and r.bound == "compute"

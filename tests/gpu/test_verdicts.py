"""GPU-only benchmarks for the verdicts and the confirmation (never shipped, skipped without a
GPU by the plugin's own marker): a user's own small file, as the verdict and fresh-process
issues describe it. GPUPERF_SLOWDOWN (0.05, 0.10) adds that fraction of identical work to
each call of the GPU-bound benchmarks and of the launch-bound step; the sweep's launch-bound
point is never slowed. A file slowdown.txt beside this one, where it exists, gives the
fraction instead: a change to the code, which the paired stage's base build does not share
(tests/gpu/paired.sh commits it at 0 and edits it in the working tree).

- test_v_copy: a 256 MiB bf16 copy, memory-bound (bandwidth class).
- test_v_mlp: a bf16 Llama MLP block, compute-bound: judged in time and per SM clock cycle.
- test_v_attention: SDPA bf16 attention as a latency (lower is better), GPU-bound and
  compute-bound: judged per clock cycle too.
- test_v_sweep: a bf16 matmul at batch 8 (launch-bound: microseconds per call; 10 a call),
  256 and 2048 (20 a call).
- test_v_launch: a step of 200 small elementwise kernels, launch-bound (the host's launch
  rate sets its wall time; its GPU kernel time is the figure that can be decided).

The order loads the GPU before the latency runs (copy, MLP first), so that the run measures
the latency on a warm, power-capped card while a confirmation measures it alone. Driven by
tests/gpu/verdicts.sh; docs/performance.md has the results.
"""

import os
from pathlib import Path

import pytest

_FILE = Path(__file__).with_name("slowdown.txt")
SLOWDOWN = float(
    _FILE.read_text().strip() if _FILE.is_file() else os.environ.get("GPUPERF_SLOWDOWN", "0")
)
pytestmark = pytest.mark.gpu_requires_vram("8GiB")


def _reps(base: int) -> int:
    return base + round(base * SLOWDOWN)


def test_v_copy(gpu_benchmark):
    import torch

    numel = (256 << 20) // 2
    x = torch.randn(numel, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    calls = _reps(50)

    def work():
        for _ in range(calls):
            y.copy_(x)

    r = gpu_benchmark(work, work=50 * 2 * x.numel() * x.element_size(), unit="bytes")
    assert r.outcome == "ok"


@pytest.mark.gpuperf(bound="compute")
def test_v_mlp(gpu_benchmark):
    import torch
    import torch.nn.functional as F

    tokens, hidden, inner = 2048, 4096, 11008
    g = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape):
        return (torch.randn(*shape, device="cuda", generator=g) * 0.02).to(torch.bfloat16)

    x, wg, wu, wd = rand(tokens, hidden), rand(inner, hidden), rand(inner, hidden), rand(hidden, inner)
    blocks = _reps(20)

    def work():
        for _ in range(blocks):
            F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)

    r = gpu_benchmark(work, work=20 * 3 * 2 * tokens * hidden * inner, unit="flop")
    assert r.outcome == "ok" and r.bound == "compute"


@pytest.mark.gpuperf(bound="compute")
def test_v_attention(gpu_benchmark):
    import torch
    import torch.nn.functional as F

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(8, 32, 2048, 128, device="cuda", generator=g).to(torch.bfloat16)
               for _ in range(3))  # fmt: skip
    calls = _reps(20)

    def work():
        for _ in range(calls):
            F.scaled_dot_product_attention(q, k, v, is_causal=True)

    r = gpu_benchmark.latency(work, unit="ms")
    assert r.outcome == "ok"


@pytest.mark.gpuperf(bound="compute")
@pytest.mark.parametrize("batch", [8, 256, 2048])
def test_v_sweep(gpu_benchmark, batch):
    import torch

    a = torch.randn(batch, 4096, device="cuda").to(torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda").to(torch.bfloat16)
    # 20 matmuls, so that 5% slower is one more (10 took none: round(0.5) is 0); the
    # launch-bound point measures the host and is never slowed
    base = 20 if batch > 8 else 10
    calls = _reps(base) if batch > 8 else base

    def work():
        for _ in range(calls):
            a @ w

    r = gpu_benchmark(work, work=base * 2 * batch * 4096 * 4096, unit="flop")
    assert r.outcome == "ok"


def test_v_launch(gpu_benchmark):
    import torch

    x = torch.randn(4096, device="cuda")
    kernels = _reps(200)

    def work():
        y = x
        for _ in range(kernels):
            y = y * 1.0001
        return y

    r = gpu_benchmark(work, work=200, unit="items")
    assert r.outcome == "ok"

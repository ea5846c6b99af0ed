"""GPU-only: a benchmark measured beside another process on the same GPU is flagged
gpu-shared (measure/gpushare.py, issue #33 point 2); skipped without a GPU by the plugin's
own marker. Driven by tests/gpu/gpu_shared.sh, which runs it alone and beside a bounded
matmul loop of its own and sets GPUPERF_EXPECT_SHARED (1: beside it, 0: alone); without
that variable the test only measures."""

import os

import pytest

pytestmark = pytest.mark.gpu_requires_vram("4GiB")


def test_gpu_shared_matmul(gpu_benchmark):
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def work():
        for _ in range(10):
            torch.mm(a, b)

    r = gpu_benchmark(work, work=10 * 2 * 4096**3, unit="flop")
    expect = os.environ.get("GPUPERF_EXPECT_SHARED")
    if expect is None:
        return
    seen = "gpu-shared" in r.flags()
    assert seen == (expect == "1"), (
        f"expected {'a' if expect == '1' else 'no'} gpu-shared flag; flags {r.flags()}, "
        f"gpu_shared {r.gpu_shared}, notes {r.notes}"
    )
    if seen:
        pids = [p["pid"] for p in (r.gpu_shared or {}).get("processes", [])]
        neighbour = os.environ.get("GPUPERF_NEIGHBOUR_PID")
        assert neighbour is None or int(neighbour) in pids, (neighbour, r.gpu_shared)

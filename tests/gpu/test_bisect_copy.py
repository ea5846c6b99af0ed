"""GPU-only benchmark for `gpuperf bisect`'s GPU run (never shipped, skipped without a GPU
by the plugin's own marker): a bf16 copy whose work a call is CALLS copies; the culprit
commit of tests/gpu/bisect_call.sh's repository raises CALLS by 5% (more kernel work, not
a sleep)."""

import pytest

CALLS = 40
pytestmark = pytest.mark.gpu_requires_vram("4GiB")


def test_copy(gpu_benchmark):
    import torch

    numel = (256 << 20) // 2
    x = torch.randn(numel, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)

    def work():
        for _ in range(CALLS):
            y.copy_(x)

    r = gpu_benchmark(work, work=40 * 2 * x.numel() * x.element_size(), unit="bytes")
    assert r.outcome == "ok"

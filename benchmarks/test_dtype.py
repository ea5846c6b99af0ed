"""FP32 / TF32 / FP16 / BF16: matmul throughput and cast bandwidth against copy bandwidth."""

import pytest

from pytest_gpuperf.workloads.dtypes import cast_bytes, matmul_flop, randn


@pytest.mark.gpu_dtype("fp32", "tf32", "fp16", "bf16")
def test_matmul(gpu_benchmark, gpu_dtype, gpu, device):
    n = 8192 if gpu else 256
    a, b = randn((n, n), gpu_dtype, device, 1), randn((n, n), gpu_dtype, device, 2)
    result = gpu_benchmark(lambda: a @ b, work=matmul_flop(n, n, n), unit="flop")
    assert result.throughput.median > 0
    assert result.time.ci_low <= result.time.median <= result.time.ci_high


def test_copy_bandwidth(gpu_benchmark, gpu, device):
    import torch

    numel = (1 << 30) // 4 if gpu else 1 << 22  # 1 GiB of fp32 on a GPU
    src = randn((numel,), torch.float32, device)
    dst = torch.empty_like(src)
    result = gpu_benchmark(lambda: dst.copy_(src), work=2 * src.nbytes, unit="bytes")
    assert result.throughput.unit == "GB/s"


CASTS = [("fp32", "fp16"), ("fp32", "bf16"), ("fp16", "fp32"), ("bf16", "fp16")]


@pytest.mark.parametrize(("src", "dst"), CASTS, ids=[f"{a}-to-{b}" for a, b in CASTS])
def test_cast_bandwidth(gpu_benchmark, gpu, device, src, dst):
    import torch

    from pytest_gpuperf import DTYPES

    src_t, dst_t = DTYPES[src].torch_dtype(), DTYPES[dst].torch_dtype()
    numel = (1 << 30) // src_t.itemsize if gpu else 1 << 22  # 1 GiB of source on a GPU
    x = randn((numel,), src_t, device)
    out = torch.empty(numel, dtype=dst_t, device=device)
    work = cast_bytes(numel, src_t, dst_t)
    result = gpu_benchmark(lambda: out.copy_(x), work=work, unit="bytes")
    assert result.throughput.median > 0
    assert out.dtype == dst_t

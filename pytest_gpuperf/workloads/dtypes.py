"""FP32/TF32/FP16/BF16 work: matmul, casts and copies, with their FLOP and byte counts."""

from __future__ import annotations

from typing import Any


def matmul_flop(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def randn(shape: tuple[int, ...], dtype: Any, device: Any, seed: int = 0) -> Any:
    """Random normal data (never zeros: zeros run faster than real data on tensor cores)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)


def cast_bytes(numel: int, src: Any, dst: Any) -> int:
    """Bytes a cast moves through memory: read every source element, write every target."""
    return numel * (src.itemsize + dst.itemsize)

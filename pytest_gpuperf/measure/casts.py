"""Hidden dtype conversions: count the casts that happen inside measured work.

A TorchDispatchMode sees every aten operation below Python, so it sees the casts a model
does without being asked: RMSNorm's upcast to float32, a peft adapter's cast of its input to
the adapter's dtype, a float32 input meeting a bfloat16 model. Each conversion is counted by
(source dtype, target dtype) with the bytes it moved (read plus written).

    with CastAudit() as audit:
        trainer.step(batch)
    audit.count, audit.bytes, audit.by_pair   # {("torch.bfloat16", "torch.float32"): [n, bytes]}

The audit slows the work it watches (every op passes through Python): audit one step, time
the others.
"""

from __future__ import annotations

from typing import Any


def _dispatch_mode_base() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


class CastAudit:
    """Context manager counting dtype conversions; usable in any benchmark."""

    def __init__(self) -> None:
        self.by_pair: dict[tuple[str, str], list[int]] = {}
        self._mode: Any = None

    @property
    def count(self) -> int:
        return sum(n for n, _ in self.by_pair.values())

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.by_pair.values())

    def record(self, src: Any, dst_dtype: Any, numel: int) -> None:
        key = (str(src.dtype), str(dst_dtype))
        moved = numel * (src.element_size() + _itemsize(dst_dtype))
        entry = self.by_pair.setdefault(key, [0, 0])
        entry[0] += 1
        entry[1] += moved

    def summary(self) -> str:
        if not self.by_pair:
            return "no dtype conversions"
        parts = [
            f"{src.removeprefix('torch.')}->{dst.removeprefix('torch.')} x{n} ({b / 2**20:.1f} MiB)"
            for (src, dst), (n, b) in sorted(self.by_pair.items(), key=lambda kv: -kv[1][1])
        ]
        return f"{self.count} dtype conversions, {self.bytes / 2**20:.1f} MiB: " + ", ".join(parts)

    def __enter__(self) -> CastAudit:
        import torch

        audit = self
        aten = torch.ops.aten
        to_copy = {aten._to_copy.default}
        copies = {aten.copy_.default, aten.copy.default}

        class _Mode(_dispatch_mode_base()):  # type: ignore[misc]
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func in to_copy and args and isinstance(args[0], torch.Tensor):
                    dst = kwargs.get("dtype")
                    if dst is not None and dst != args[0].dtype:
                        audit.record(args[0], dst, args[0].numel())
                elif func in copies and len(args) >= 2 and isinstance(args[1], torch.Tensor):
                    dst_t, src_t = args[0], args[1]
                    if isinstance(dst_t, torch.Tensor) and dst_t.dtype != src_t.dtype:
                        audit.record(src_t, dst_t.dtype, dst_t.numel())
                return func(*args, **kwargs)

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mode is not None:
            self._mode.__exit__(*exc)
            self._mode = None


def _itemsize(dtype: Any) -> int:
    import torch

    return torch.empty((), dtype=dtype).element_size()

"""Requirement markers -> skip decisions. Pure: no pytest item, no device access.

Each marker is parsed once (at collection) into a frozen requirement; `evaluate` checks it
against a DeviceSnapshot (at setup, on the device the test actually gets) and returns the
skip reason, or None when the test may run. Bad arguments raise MarkerError, whose text
names the marker and the value; the plugin adds the test's node id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.units import SizeError, format_size, parse_size

if TYPE_CHECKING:
    from .device import DeviceSnapshot, GPUInfo


class MarkerError(ValueError):
    pass


# ----------------------------------------------------------------------------- dtypes


@dataclass(frozen=True)
class DTypeSpec:
    """A dtype a benchmark can be parametrized over."""

    name: str  # canonical id: fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2
    torch_name: str  # attribute of torch
    min_capability: tuple[int, int] | None  # on CUDA; None = any
    bytes_per_element: int
    description: str

    def torch_dtype(self) -> Any:
        import torch

        return getattr(torch, self.torch_name)


DTYPES: dict[str, DTypeSpec] = {
    s.name: s
    for s in (
        DTypeSpec("fp32", "float32", None, 4, "IEEE float32"),
        DTypeSpec("tf32", "float32", (8, 0), 4, "float32 with TF32 tensor-core matmuls"),
        DTypeSpec("fp16", "float16", (5, 3), 2, "IEEE float16"),
        DTypeSpec("bf16", "bfloat16", (8, 0), 2, "bfloat16"),
        DTypeSpec("fp8_e4m3", "float8_e4m3fn", (8, 9), 1, "float8 e4m3"),
        DTypeSpec("fp8_e5m2", "float8_e5m2", (8, 9), 1, "float8 e5m2"),
    )
}

DTYPE_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
}


def resolve_dtype(value: object) -> DTypeSpec:
    if not isinstance(value, str):
        # accept torch dtypes without importing torch: str(torch.bfloat16) == "torch.bfloat16"
        text = str(value)
        if text.startswith("torch."):
            value = text.removeprefix("torch.")
        else:
            raise MarkerError(f"expected a dtype name such as 'bf16', got {value!r}")
    key = value.strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPES:
        raise MarkerError(
            f"unknown dtype {value!r}; known: {', '.join(DTYPES)} "
            f"(aliases: {', '.join(DTYPE_ALIASES)})"
        )
    return DTYPES[key]


def parse_dtype_marker(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[DTypeSpec, ...]:
    if kwargs:
        raise MarkerError(f"gpu_dtype takes dtype names only, got keyword(s) {sorted(kwargs)}")
    names: list[Any] = []
    for a in args:
        if isinstance(a, list | tuple):
            names.extend(a)
        else:
            names.append(a)
    if not names:
        raise MarkerError("gpu_dtype needs at least one dtype name, e.g. gpu_dtype('fp16', 'bf16')")
    specs = tuple(resolve_dtype(n) for n in names)
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise MarkerError(f"gpu_dtype {s.name!r} is listed twice")
        seen.add(s.name)
    return specs


# ----------------------------------------------------------------------- requirements


@dataclass(frozen=True)
class VRAM:
    bytes: int


@dataclass(frozen=True)
class MIG:
    profile: str | None = None  # e.g. "1g.10gb"; None = any MIG instance


@dataclass(frozen=True)
class GPUs:
    count: int


@dataclass(frozen=True)
class Capability:
    major: int
    minor: int


@dataclass(frozen=True)
class CpuOnly:
    pass


Requirement = VRAM | MIG | GPUs | Capability | CpuOnly


def _one_arg(name: str, args: Sequence[Any], kwargs: dict[str, Any], kw: str) -> Any:
    if kw in kwargs:
        if args or len(kwargs) > 1:
            raise MarkerError(f"{name} takes one argument, got args={args!r} kwargs={kwargs!r}")
        return kwargs[kw]
    if len(args) != 1 or kwargs:
        raise MarkerError(
            f"{name} takes exactly one argument, got args={args!r}"
            + (f" kwargs={kwargs!r}" if kwargs else "")
        )
    return args[0]


def vram_asked(item: Any) -> int | None:
    """The most GPU memory `item`'s gpu_requires_vram markers ask, in bytes; None where it
    has none (a marker that does not parse raises MarkerError: the setup's checks, which
    read the same `requirements`, fail its test first)."""
    return max((r.bytes for r in requirements(item) if isinstance(r, VRAM)), default=None)


def parse_requires_vram(args: Sequence[Any], kwargs: dict[str, Any]) -> VRAM:
    value = _one_arg("gpu_requires_vram", args, kwargs, "size")
    try:
        size = parse_size(value)
    except SizeError as exc:
        raise MarkerError(str(exc)) from None
    bare = not isinstance(value, str) or not any(c.isalpha() for c in value)
    if bare and size < 2**20:  # gpu_requires_vram(40) would need 40 bytes: always met
        n = str(value).strip()
        raise MarkerError(
            f"gpu_requires_vram({value!r}): {n} bytes is surely not meant: "
            f"write '{n}GiB' or {n} * 2**30"
        )
    return VRAM(size)


_MIG_RE = re.compile(r"^\d+g\.\d+gb$")


def parse_requires_mig(args: Sequence[Any], kwargs: dict[str, Any]) -> MIG:
    if not args and not kwargs:
        return MIG(None)
    value = _one_arg("gpu_requires_mig", args, kwargs, "profile")
    if value is None:
        return MIG(None)
    if not isinstance(value, str) or not _MIG_RE.match(value.strip().lower()):
        raise MarkerError(f"expected a MIG slice profile such as '1g.10gb', got {value!r}")
    return MIG(value.strip().lower())


def parse_requires_gpus(args: Sequence[Any], kwargs: dict[str, Any]) -> GPUs:
    value = _one_arg("gpu_requires_gpus", args, kwargs, "n")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MarkerError(f"expected a GPU count of at least 1, got {value!r}")
    return GPUs(value)


def parse_requires_capability(args: Sequence[Any], kwargs: dict[str, Any]) -> Capability:
    value = _one_arg("gpu_requires_capability", args, kwargs, "capability")
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        major, minor = value
    else:
        text = value if isinstance(value, str) else None
        m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text) if text is not None else None
        if m is None:
            raise MarkerError(f"expected a compute capability such as '8.0', got {value!r}")
        major, minor = int(m.group(1)), int(m.group(2))
    if major < 1 or minor < 0:
        raise MarkerError(f"{value!r} is not a compute capability")
    return Capability(major, minor)


def parse_cpu_only(args: Sequence[Any], kwargs: dict[str, Any]) -> CpuOnly:
    if args or kwargs:
        raise MarkerError(f"gpu_cpu_only takes no arguments, got args={args!r} kwargs={kwargs!r}")
    return CpuOnly()


PARSERS: dict[str, Callable[[Sequence[Any], dict[str, Any]], Requirement]] = {
    "gpu_requires_vram": parse_requires_vram,
    "gpu_requires_mig": parse_requires_mig,
    "gpu_requires_gpus": parse_requires_gpus,
    "gpu_requires_capability": parse_requires_capability,
    "gpu_cpu_only": parse_cpu_only,
}


def requirements(item: Any) -> Iterator[Requirement]:
    """Each requirement `item`'s markers state (PARSERS' markers, closest first); one that
    does not parse raises MarkerError naming its marker."""
    for name, parse in PARSERS.items():
        for m in item.iter_markers(name):
            try:
                yield parse(m.args, dict(m.kwargs))
            except MarkerError as exc:
                raise MarkerError(f"@pytest.mark.{name}: {exc}") from None


# -------------------------------------------------------------------------- decisions


def usable_memory(gpu: GPUInfo | None, vram_cap: int | None) -> int | None:
    """The bytes of GPU memory a test may use on `gpu`: its own, or the emulated card's
    `vram_cap` where smaller or where NVML could not tell; None without a GPU, or where
    neither is known. A gpu_requires_vram marker is judged against it, and the paired
    stage fits two builds of a test in it (paired/plan.held_twice)."""
    if gpu is None:
        return None
    have = gpu.memory_total
    if vram_cap is not None and (have is None or vram_cap < have):
        return vram_cap
    return have


def evaluate(req: Requirement, snap: DeviceSnapshot, vram_cap: int | None = None) -> str | None:
    """Why the test must be skipped on this device, or None if it may run.

    `vram_cap`: memory limit imposed by emulation of a smaller GPU, if any.
    """
    gpu = snap.primary
    if isinstance(req, CpuOnly):
        return None if gpu is None else f"CPU-only variant; this run has {gpu.name}"
    if isinstance(req, GPUs):
        if snap.gpu_count < req.count:
            return f"needs {req.count} GPU(s), {snap.gpu_count} visible"
        return None
    if gpu is None:
        what = {
            VRAM: lambda r: f"needs a GPU with {format_size(r.bytes)}",
            MIG: lambda r: "needs a MIG instance",
            Capability: lambda r: f"needs a GPU of compute capability {r.major}.{r.minor}",
        }[type(req)](req)
        return f"{what}; no GPU visible"  # why none is: said once, not on every test
    if isinstance(req, VRAM):
        have = usable_memory(gpu, vram_cap)
        label = "on " + (f"MIG {gpu.mig_profile}" if gpu.is_mig_instance else gpu.name)
        if have != gpu.memory_total:
            label += " (emulated cap)"
        if have is None:
            return None  # cannot tell: let it run and fail honestly if it does not fit
        if have < req.bytes:
            need, avail = format_size(req.bytes), format_size(have)
            return f"needs {need} of GPU memory, {avail} available {label}"
        return None
    if isinstance(req, MIG):
        if not gpu.is_mig_instance:
            mode = "MIG mode on" if gpu.mig_mode else "not a MIG instance"
            return f"needs a MIG instance{_of(req.profile)}; {gpu.name} is {mode}"
        if req.profile is not None and gpu.mig_profile != req.profile:
            return f"needs MIG slice {req.profile}, running on {gpu.mig_profile}"
        return None
    if isinstance(req, Capability):
        cc = gpu.compute_capability
        if cc is None:
            return None
        if cc < (req.major, req.minor):
            return (
                f"needs compute capability {req.major}.{req.minor}, "
                f"{gpu.name} has {gpu.capability_str}"
            )
        return None
    raise TypeError(f"unknown requirement {req!r}")  # pragma: no cover


def _of(profile: str | None) -> str:
    return f" of slice {profile}" if profile else ""


def evaluate_dtype(spec: DTypeSpec, snap: DeviceSnapshot) -> str | None:
    """Why this dtype cannot run here, or None. On the CPU every dtype runs (slowly)."""
    gpu = snap.primary
    if gpu is None or spec.min_capability is None or gpu.compute_capability is None:
        return None
    if gpu.compute_capability < spec.min_capability:
        need = ".".join(map(str, spec.min_capability))
        return f"{spec.name} needs compute capability {need}, {gpu.name} has {gpu.capability_str}"
    return None

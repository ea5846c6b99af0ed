"""--gpuperf-emulate: run on a large GPU as if it had a smaller card's memory. The memory cap is
applied to this process's CUDA allocator; speed figures stay the real GPU's."""

from __future__ import annotations

from typing import Any

from .device import DeviceSnapshot
from .profiles import Profile, ProfileError, Registry


class EmulationError(ValueError):
    """--gpuperf-emulate cannot be honoured here; the message says why."""


def emulated(registry: Registry, name: str | None) -> Profile | None:
    return registry.get(name) if name else None


def cap_bytes(profile: Profile | None) -> int | None:
    """Bytes of GPU memory the emulated card has, or None when not emulating."""
    if profile is None or profile.memory_gib is None:
        return None
    return int(profile.memory_gib * 2**30)


def check(registry: Registry, name: str | None, snap: DeviceSnapshot) -> None:
    """A known profile with a memory size, smaller than this GPU. Raises EmulationError."""
    if not name:
        return
    try:
        prof = registry.get(name)
    except ProfileError as exc:
        raise EmulationError(f"--gpuperf-emulate: {exc}") from None
    if prof.memory_gib is None:
        raise EmulationError(
            f"--gpuperf-emulate={prof.name}: the profile has no memory size to emulate"
        )
    gpu = snap.primary
    if gpu is None:
        raise EmulationError(
            f"--gpuperf-emulate={prof.name} caps GPU memory, and this run has no GPU "
            f"({snap.note or 'CPU only'})"
        )
    cap = cap_bytes(prof)
    if gpu.memory_total is not None and cap is not None and cap > gpu.memory_total:
        raise EmulationError(
            f"--gpuperf-emulate={prof.name} ({prof.memory_gib:g} GiB) is larger than this "
            f"GPU ({gpu.name}, {gpu.memory_total / 2**30:.1f} GiB): cannot emulate it"
        )


def apply(cap: int | None, torch: Any) -> bool:
    """Cap this process's CUDA allocator to `cap` bytes, less what is already in use here
    (the CUDA context: the emulated card would have one too). True when applied."""
    if cap is None or not torch.cuda.is_available():
        return False
    free, total = torch.cuda.mem_get_info()
    usable = cap - (total - free)
    torch.cuda.set_per_process_memory_fraction(max(0.0, min(1.0, usable / total)))
    return True

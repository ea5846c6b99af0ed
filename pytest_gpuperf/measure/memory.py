"""GPU memory of one measurement, whatever ran before it in the process.

torch's peak counters (`max_memory_allocated`, `max_memory_reserved`) are the process's:
they count tensors an earlier test left alive, the caching allocator's blocks cached for
it, and the model a fixture built for several tests. A peak read from them changes with
what ran before (on the H200 the same matmul read 0.78 GiB alone and 8.6 or 36 GiB in
`-n 2` workers that had run the model tests). So a measurement's peak is its *step's
own*: the most the timed calls needed above what was live when they began.

The window opens after the warm-up (`open_window`): the state the work keeps between
calls is created by its first call (an optimizer's moments, cuBLAS workspaces, compiled
kernels), so it is resident at the window's start however many times the work ran
before. Opening it, the host synchronises, collects garbage and empties the allocator's
cache (cached but unallocated blocks are nobody's), then notes what is allocated and
reserved and resets torch's peaks. `close_window` gives the peaks above those marks:

    peak_allocated = peak requested bytes - requested bytes at the window's start
    peak_reserved  = max_memory_reserved() - reserved at the window's start

`peak_allocated` is the gated memory figure: torch's `requested_bytes` statistic counts
the sizes the step's tensors asked for, so it is the same to the byte whatever ran before
(`max_memory_allocated` counts allocator blocks, which can be a cached block up to 1 MiB
larger than asked for: on the H200 a bf16 MLP block read 129 MiB after other tests and
130 MiB alone). Where torch lacks the statistic, allocated blocks stand in.
`peak_reserved` depends on the allocator's cache: a step whose tensors fit in free space of
segments that other live tensors hold needs no new reservation (the same MLP reserved 0 B
after other tests and 44 MiB alone), so it is reported, informational, never judged.

What was live when the window opened (`resident`: the test's fixtures, the state the
work keeps, and anything another test left behind) is reported beside the peak,
informational; resident + peak is the total the process held.

Another test's memory (`FixtureMemory`): memory allocated when a test's setup begins
that none of its fixtures holds. An out-of-memory point or a largest batch found while it
is resident answers "does it fit" for less memory than the card has, so such a result is
flagged with the amount (FOREIGN_FLAG_BYTES and over).

Torch is never imported here: the CUDA functions take the module, the others find it in
`sys.modules` and answer None when CUDA was never initialised.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Mark:
    """What was allocated and reserved when a measurement's window opened (bytes)."""

    allocated: int
    reserved: int
    requested: int | None = None  # torch's requested bytes (the tensors' own sizes)


@dataclass(frozen=True)
class StepMemory:
    """A step's own peaks above its window's marks, and what was resident then (bytes)."""

    peak_allocated: int
    peak_reserved: int
    resident: int


def open_window(torch: Any) -> Mark:
    """Synchronise, collect garbage, empty the allocator's cache, note what is allocated
    and reserved, reset torch's peak counters."""
    cuda = torch.cuda
    cuda.synchronize()
    gc.collect()
    cuda.empty_cache()
    mark = Mark(
        int(cuda.memory_allocated()), int(cuda.memory_reserved()), _requested(cuda, "current")
    )
    cuda.reset_peak_memory_stats()
    return mark


def _requested(cuda: Any, which: str) -> int | None:
    """torch's `requested_bytes` statistic (the sizes tensors asked for, before the
    allocator rounds them or hands out a whole cached block it does not split), or None
    where this torch does not keep it."""
    stats = getattr(cuda, "memory_stats", None)
    if stats is None:
        return None
    value = stats().get(f"requested_bytes.all.{which}")
    return int(value) if isinstance(value, int | float) else None


def close_window(torch: Any, mark: Mark, exclude: int = 0) -> StepMemory:
    """The peaks since `open_window` above its marks. `exclude`: bytes of the plugin's own
    that were live at the mark (the L2 flush buffer), left out of `resident`."""
    cuda = torch.cuda
    cuda.synchronize()
    peak_requested = _requested(cuda, "peak")
    if peak_requested is not None and mark.requested is not None:
        allocated = peak_requested - mark.requested  # exact: no rounding, no unsplit block
    else:
        allocated = int(cuda.max_memory_allocated()) - mark.allocated
    return StepMemory(
        peak_allocated=max(0, allocated),
        peak_reserved=max(0, int(cuda.max_memory_reserved()) - mark.reserved),
        resident=max(0, mark.allocated - exclude),
    )


def allocated_now() -> int | None:
    """Bytes torch has allocated on the current GPU, or None when CUDA is not in use in
    this process (torch not imported, or CUDA never initialised). Imports nothing."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return None
    return int(cuda.memory_allocated())


def release_cached() -> bool:
    """Give the caching allocator's unused blocks back to the driver (before a fresh
    process needs the GPU: what this process cached is nobody's, and could make the fresh
    one run out of memory where the run did not). False where CUDA was never initialised."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return False
    gc.collect()
    cuda.synchronize()
    cuda.empty_cache()
    return True


@dataclass
class FixtureMemory:
    """The GPU memory each live fixture's setup allocated, to tell a test's own resident
    memory from another test's. `setup`/`finished` are called around each fixture's setup
    and after its teardown; `begin(names)` when a test's setup begins."""

    held: dict[int, tuple[str, int]] = field(default_factory=dict)  # id(fixturedef) -> ...

    def setup(self, fixturedef: Any, before: int | None, after: int | None) -> None:
        if after is None:
            return
        grew = after - (before or 0)
        if grew > 0:
            self.held[id(fixturedef)] = (str(fixturedef.argname), grew)

    def finished(self, fixturedef: Any) -> None:
        self.held.pop(id(fixturedef), None)

    def own(self, names: Any) -> int:
        """Bytes held by the live fixtures among `names` (a test's fixture names)."""
        wanted = set(names)
        return sum(n for name, n in self.held.values() if name in wanted)

    def begin(self, names: Any, allocated: int | None) -> int | None:
        """Another test's memory when a test's setup begins: what is allocated, less what
        its own live (higher-scoped) fixtures hold. None without CUDA."""
        if allocated is None:
            return None
        return max(0, allocated - self.own(names))


def foreign_now(at_setup: int | None, own: int, allocated: int | None) -> int | None:
    """Another test's memory still resident: at most what was foreign when the test's
    setup began, and at most what is allocated beyond its own fixtures now (what the test
    freed of it since is no longer counted; what the test allocated itself may still be,
    so this is an upper bound). None without CUDA."""
    if at_setup is None or allocated is None:
        return None
    return max(0, min(at_setup, allocated - own))

"""Is another process using the GPU? NVML's list of the compute processes on the device,
read before and after each measurement (as hostload.py reads the host's load).

A shared GPU runner runs other jobs' kernels on the same card: they take SMs, memory
bandwidth and power from the benchmark, which slows without a word. Each measurement reads
NVML's running compute processes on the benchmark's device (its MIG instance, on a MIG
slice; MPS clients too) before and after, and a result during which a process other than
this one (and the processes it started, or that started it: a confirmation's parent run, a
distributed benchmark's ranks) had a context on the device carries the flag `gpu-shared`
and a note naming the PIDs and the memory each used (`gpu_shared` in the results JSON).

The process list is the signal. NVML's utilisation counter is not used to flag: it is the
share of time in which any kernel ran, which the benchmark's own kernels fill, so it cannot
tell another process's load from ours. A process that starts and ends inside one
measurement is not seen; an idle one that holds a context on the device is (it shares the
device's memory, and NVML cannot say how busy each process is).

Where NVML cannot list the processes (NotSupported, a MIG slice without permission, or a
container whose PID namespace hides this process from the list, so that no PID can be
attributed) nothing is flagged, and the run says so once (`ProcessWatch.unavailable`).

The judge treats a flagged result like a busy host's (judging/busy.py): its regressed or
improved verdicts become inconclusive; the save leaves it out of the baseline unless
`--gpuperf-save-gpu-shared`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..hardware.nvml import NVML

# each list, newest binding first (older pynvml has no _v3; the unversioned name is v3 now)
LISTS = (
    ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v3",
     "nvmlDeviceGetComputeRunningProcesses_v2"),
    ("nvmlDeviceGetMPSComputeRunningProcesses", "nvmlDeviceGetMPSComputeRunningProcesses_v3",
     "nvmlDeviceGetMPSComputeRunningProcesses_v2"),
)  # fmt: skip
MEMORY_UNKNOWN = 2**64 - 1  # NVML_VALUE_NOT_AVAILABLE, where a binding leaves it as is


def read_processes(lib: NVML, handle: Any) -> tuple[dict[int, int | None] | None, str | None]:
    """PID -> GPU memory used (bytes, None where NVML does not say) of the compute
    processes on the device now, or (None, why NVML could not list them). MPS clients are
    added where NVML lists them; the compute list decides whether there is an answer."""
    found: dict[int, int | None] = {}
    why = None
    for i, names in enumerate(LISTS):
        procs = None
        for name in names:
            procs, why = lib.attempt(name, handle)
            if why is None:
                break
        if procs is None:
            if i == 0:
                return None, why
            continue
        for p in procs:
            pid, used = getattr(p, "pid", None), getattr(p, "usedGpuMemory", None)
            if isinstance(pid, int):
                ok = isinstance(used, int) and 0 <= used < MEMORY_UNKNOWN
                found[pid] = used if ok else found.get(pid)
    return found, None


def parent_of(pid: int, proc: Path = Path("/proc")) -> int | None:
    """The parent PID of `pid` (Linux /proc), or None where it cannot be read."""
    try:
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def lineage(pid: int, parent: Callable[[int], int | None] = parent_of) -> list[int]:
    """`pid` and its ancestors, nearest first (at most 64: a loop in /proc cannot hang)."""
    out = [pid]
    while len(out) < 64:
        up = parent(out[-1])
        if not up or up in out:
            break
        out.append(up)
    return out


class ProcessWatch:
    """Reads the processes on one device for each measurement of a run (one per run, so
    that a device that cannot list them is noted once). `parent` and `pid` are seams for
    tests (no real process tree is needed)."""

    def __init__(self, lib: NVML, handle: Any, pid: int | None = None,
                 parent: Callable[[int], int | None] = parent_of) -> None:  # fmt: skip
        self.lib, self.handle = lib, handle
        self.pid = os.getpid() if pid is None else pid
        self.parent = parent
        self.unavailable: str | None = None  # why the processes cannot be told apart
        self.noted = False  # the run was told once

    def read(self) -> dict[int, int | None] | None:
        procs, why = read_processes(self.lib, self.handle)
        if procs is None:
            self.unavailable = self.unavailable or f"NVML cannot list them ({why})"
        return procs

    def foreign(self, *reads: dict[int, int | None] | None) -> dict[int, int | None] | None:
        """The processes of these reads that are not this process's own lineage (itself,
        its ancestors, its descendants), or None when they cannot be told apart: a read
        that NVML refused, or a list without this process in it although the benchmark
        ran on the device (another PID namespace: a container's)."""
        if any(r is None for r in reads) or not reads:
            return None
        last = reads[-1] or {}
        if self.pid not in last:
            self.unavailable = self.unavailable or (
                f"NVML's list of them does not include this process (PID {self.pid}): "
                "another PID namespace, as in a container, where no PID can be attributed"
            )
            return None
        mine = set(lineage(self.pid, self.parent))
        out: dict[int, int | None] = {}
        for r in reads:
            for pid, used in (r or {}).items():
                if pid in mine or self.pid in lineage(pid, self.parent):
                    continue
                out[pid] = used if used is not None else out.get(pid)
        return out

    def stamp(self, result: Any, before: dict[int, int | None] | None,
              after: dict[int, int | None] | None) -> None:  # fmt: skip
        """Flag `result` gpu-shared when another process was on the device before or after
        it was measured; note once per run when that cannot be told."""
        others = self.foreign(before, after)
        if others is None:
            if self.unavailable and not self.noted:
                self.noted = True
                result.notes.append(
                    f"another process on this GPU cannot be detected: {self.unavailable}; "
                    "results are not flagged gpu-shared"
                )
            return
        if not others:
            return
        result.gpu_shared = {"processes": [{"pid": p, "used_memory": m}
                                           for p, m in sorted(others.items())]}  # fmt: skip
        result.notes.append(f"measured on a shared GPU: {describe(result.gpu_shared)}")


def describe(shared: dict[str, Any]) -> str:
    """What was seen, for a note: the other processes' PIDs and the GPU memory each used."""
    from ..core.units import format_size

    procs = shared.get("processes") or []
    named = ", ".join(
        f"PID {p.get('pid')}"
        + (f" ({format_size(p['used_memory'])})" if p.get("used_memory") is not None else "")
        for p in procs
    )
    return f"{len(procs)} other process(es) on this GPU while measuring: {named}"

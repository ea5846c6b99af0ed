"""Is the host busy? The load average and the CPU steal while a benchmark was measured.

On a loaded host a CPU figure measures the other work as much as ours: two runs 86x apart
both showed an interval of ±1%, because the interval describes the samples, not the host.
So each measurement reads /proc/loadavg and /proc/stat's steal counter before and after,
and a result measured while the 1-minute load average exceeded the number of cores, or
while more than STEAL_LIMIT of the CPU time was stolen by the hypervisor, carries the flag
`busy-host` (shown beside it; `host` in the results JSON).

Load alone does not say whether a sample was disturbed. On Linux each CPU sample is read
with the calling thread's run-queue wait beside it (/proc/thread-self/schedstat: the time it
was ready to run while other work had the CPU); elsewhere with the process's CPU time
beside its wall time (a CPU-bound sample whose CPU time falls well short of its wall time
was preempted). The samples that were not disturbed are the ones summarised when at least
min_samples of them remain, and such a result is not busy, however high the load (its
figure is what the work costs when it has the CPU). Where too few remain, work that waits
(a sleep, I/O) is judged on each sample's wall time less its run-queue wait (`unqueued`),
so a precise measurement of it is never refused for the load alone; CPU-bound work, and
work that is not CPU-bound where the kernel does not say (nothing to tell a preemption by),
is flagged when the host is loaded.

On the CPU a busy-host result's verdict against the baseline is inconclusive rather than
regressed or improved (`busy_verdicts`): the load, not the code, may explain the change. On
a GPU the flag is shown but the verdict stands: GPU-bound work does not wait for the host,
and launch-bound work is judged in its own noise class already.

`read_host` is the one place that reads the host (`gpu_benchmark` calls it before and
after each measurement); tests replace it with monkeypatch (no real load is needed).
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.stats import median


def describe(host: dict[str, Any]) -> str:
    text = (
        f"load average {host['load1']:g} on {host['cores']} cores, "
        f"{host['steal'] * 100:.1f}% CPU steal"
    )
    if host.get("samples"):
        text += f", {host['preempted']} of {host['samples']} samples preempted"
    return text


STEAL_LIMIT = 0.05  # a fraction of the CPU time over the measurement
# A sample's CPU time over its wall time (the process's: all its threads): CPU-bound work
# reaches CPU_BOUND in its best sample; a sample of it is undisturbed at UNDISTURBED of the
# median sample's share or more, and never below UNDISTURBED of one
# core (a process that did not have one core to itself was preempted, whatever its other
# samples had: three busy loops beside a 2-core matmul: 124 of 400 samples at 1.0, the
# rest at 0.1-0.3)
CPU_BOUND = 0.5
UNDISTURBED = 0.9
# A sample whose thread waited on the run queue for more than this share of it waited
# (`found["waited"]`): beside busy loops a sample's wait was 0 or a whole time slice
WAIT_SHARE = 0.01


def undisturbed(
    walls: list[float], cpus: list[float], need: int, waits: list[float] | None = None
) -> tuple[list[float], dict[str, Any] | None]:
    """The samples' times that no other work disturbed, when at least `need` remain; else
    all of them. With `waits` (the calling thread's run-queue seconds per call, each
    sample, where the kernel says) a sample that waited is disturbed (`unqueued`);
    without, a CPU-bound sample whose CPU time (`cpus`) fell short of its wall time. With
    what was found ({"samples", "preempted", "enough"}, and "waited" with waits), or None
    where nothing can tell a preemption (no run-queue wait, and work that is not CPU-bound:
    no sample kept the CPU busy)."""
    if len(cpus) != len(walls) or not walls:
        return walls, None
    if waits is not None and len(waits) == len(walls):
        return unqueued(walls, cpus, need, waits)
    ok = _cpu_bound_ok(walls, cpus)
    if ok is None:
        return walls, None
    kept = [w for w, o in zip(walls, ok, strict=True) if o]
    enough = len(kept) >= max(1, need)
    found = {"samples": len(walls), "preempted": len(walls) - len(kept), "enough": enough}
    return (kept if enough else walls), found


def unqueued(
    walls: list[float], cpus: list[float], need: int, waits: list[float]
) -> tuple[list[float], dict[str, Any]]:
    """The samples whose thread never waited on the run queue, where `need` of them did
    (their wall time: what the work costs on an idle host). Else, for work that is not
    CPU-bound, each sample's wall time less its wait: what the work cost, its sleeps and
    I/O waits included, as if it had the CPU whenever it could run (4 ms sleeps beside
    3-8 busy loops on 2 cores: wall median 7.5-8.0 ms, this 4.065-4.071 ms, 4.08 idle). Not
    for CPU-bound work: a preempted sample's own CPU time grows too (the other work emptied
    its caches: the README matmul at load 13, 177-183 us a call less its waits, 158-170 us
    in the samples that never waited, 159 idle), so too few clean samples leave it
    disturbed, as without the run queue (docs/evidence/cpu-2026-12-07-runqueue). A wait
    longer than its sample was read across the sample's edges: that sample counts as
    waited, its wall time kept."""
    valid = [q <= w for w, q in zip(walls, waits, strict=True)]
    clean = [q <= WAIT_SHARE * w for w, q in zip(walls, waits, strict=True)]
    waited = len(walls) - sum(clean)
    times = [w - q if v else w for w, q, v in zip(walls, waits, valid, strict=True)]
    # CPU-bound or not by each sample's CPU time over its time less its wait
    share_ok = _cpu_bound_ok(times, cpus, whole_core=False)
    if share_ok is not None:  # another of the work's threads may have lost the CPU
        clean = [a and b for a, b in zip(clean, share_ok, strict=True)]
    kept = [w for w, c in zip(walls, clean, strict=True) if c]
    found = {"samples": len(walls), "preempted": len(walls) - len(kept),
             "enough": len(kept) >= max(1, need), "waited": waited}  # fmt: skip
    if found["enough"]:
        return kept, found
    if share_ok is None:  # waiting work: each sample less its wait
        found["enough"] = len(times) >= max(1, need)
        found["unqueued"] = True
        return times, found
    return walls, found


def _cpu_bound_ok(
    walls: list[float], cpus: list[float], whole_core: bool = True
) -> list[bool] | None:
    """Which CPU-bound samples had the CPU: their CPU time over their time reaches UNDISTURBED
    of the median sample's share (and of one core, `whole_core`: where the calling thread's
    own preemptions are still in the times); None where the work is not CPU-bound."""
    # a sample no wall time passed in (a coarse clock) was not preempted either
    shares = [c / w if w > 0 else math.inf for w, c in zip(walls, cpus, strict=True)]
    finite = [s for s in shares if s < math.inf]
    if not finite or max(finite) < CPU_BOUND:
        return None
    # the share of an undisturbed sample: the median one's, not the highest, since some
    # samples may run more threads than the work does (torch's idle thread team spins for
    # a while after its count was lowered: 777 of 784 quiet samples read "preempted"
    # against the highest, 20 of 27 against the 75th percentile)
    floor = UNDISTURBED * (max(median(finite), 1.0) if whole_core else median(finite))
    return [s >= floor for s in shares]


@dataclass(frozen=True)
class HostSample:
    load1: float  # 1-minute load average
    steal: int  # CPU time stolen by the hypervisor, all CPUs (USER_HZ ticks)
    total: int  # all CPU time, same unit
    cores: int


def read_host(proc: Path = Path("/proc")) -> HostSample | None:
    """The host's load now, or None where /proc does not say (not Linux)."""
    try:
        load1 = float((proc / "loadavg").read_text().split()[0])
        with (proc / "stat").open() as fh:
            fields = fh.readline().split()
    except (OSError, ValueError, IndexError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(x) for x in fields[1:] if x.isdigit()]
    steal = ticks[7] if len(ticks) > 7 else 0
    return HostSample(load1, steal, sum(ticks[:8]), os.cpu_count() or 1)



class RunQueue:
    """The calling thread's run-queue wait so far, in seconds (`read()`), from
    /proc/thread-self/schedstat; `open_run_queue` returns None where the kernel does not say.
    Opened once per measurement (closed with the reader): a read is one pread, outside the
    timed window."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        weakref.finalize(self, os.close, fd)

    def read(self) -> float:
        return int(os.pread(self.fd, 64, 0).split()[1]) / 1e9


def open_run_queue(path: str = "/proc/thread-self/schedstat") -> RunQueue | None:
    """The reader, where schedstat counts (its on-CPU time is above 0: a kernel without
    schedstat accounting reads 0 0 0)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fields = os.pread(fd, 64, 0).split()
        if len(fields) >= 2 and int(fields[0]) > 0:
            return RunQueue(fd)
    except (OSError, ValueError):
        pass
    os.close(fd)
    return None


def assess(before: HostSample | None, after: HostSample | None) -> dict[str, Any] | None:
    """The host's load over one measurement: {"load1", "cores", "steal", "busy"}."""
    if before is None or after is None:
        return None
    elapsed = after.total - before.total
    steal = (after.steal - before.steal) / elapsed if elapsed > 0 else 0.0
    load1 = max(before.load1, after.load1)
    cores = after.cores
    return {
        "load1": round(load1, 2),
        "cores": cores,
        "steal": round(max(0.0, steal), 4),
        "busy": load1 > cores or steal > STEAL_LIMIT,
    }


def stamp(result: Any, before: HostSample | None, after: HostSample | None) -> None:
    """The host's load over the measurement, on the result; a loaded host does not make
    the result busy where enough of its samples ran undisturbed (`result.preemption`).
    No note per test: the run says it once (`busy_line`)."""
    host = assess(before, after)
    if host is None:
        return
    found = getattr(result, "preemption", None)
    if found is not None:
        host["preempted"], host["samples"] = found["preempted"], found["samples"]
        if found.get("unqueued"):
            host["waited"], host["unqueued"] = found["waited"], True
        host["busy"] = host["busy"] and not found["enough"]
    result.host = host


def busy_line(results: Iterable[Any]) -> str | None:
    """Once per run: what the load did to its CPU results (None: the host was idle or the
    load cost nothing). A result is busy (its verdict inconclusive) only where too few of
    its samples ran undisturbed; the others kept their undisturbed samples."""
    loaded = [r for r in results if r.backend == "cpu" and r.host and "load1" in r.host]
    busy = [r for r in loaded if r.host.get("busy")]
    calm = [r for r in loaded if not r.host.get("busy")]
    waited = [r for r in calm if r.host.get("unqueued") and r.host.get("waited")]
    dropped = [r for r in calm if r.host.get("preempted") and not r.host.get("unqueued")]
    if not busy and not dropped and not waited:
        return None
    worst = max(busy or dropped or waited, key=lambda r: r.host["load1"]).host
    where = f"load average up to {worst['load1']:g} on {worst['cores']} cores"
    parts = []
    if waited:
        n, total = _tally(waited, "waited")
        parts.append(
            f"{len(waited)} CPU benchmark(s) of work that waits (sleep, I/O) were timed less "
            f"their run-queue wait ({n} of {total} samples waited for the CPU; their verdicts "
            "stand)"
        )
    if dropped:
        left, total = _tally(dropped, "preempted")
        parts.append(
            f"{len(dropped)} CPU benchmark(s) kept only their undisturbed samples "
            f"({left} of {total} preempted samples left out; their verdicts stand)"
        )
    if busy:
        parts.append(
            f"{len(busy)} CPU benchmark(s) measured on a busy host (flagged busy-host: too "
            "few undisturbed samples, or work that is not CPU-bound; their verdicts are "
            "inconclusive)"
        )
    return f"gpuperf: {where}: " + "; ".join(parts)


def _tally(results: list[Any], key: str) -> tuple[int, int]:
    """Of these results' samples, how many were `key` (waited, preempted), and how many in all."""
    return sum(r.host[key] for r in results), sum(r.host["samples"] for r in results)


def too_disturbed(result: Any, workers: int = 0) -> str | None:
    """Why this result must not enter a baseline (None: it may): a busy-host CPU result
    (too few undisturbed samples, or none that could be told) measured the other work as
    much as its own, and a CPU measurement under pytest-xdist with `workers` of 2 or more
    shared the CPU with the other workers' benchmarks (pytest-benchmark disables itself
    there)."""
    if _beside_workers(result, workers):
        return (f"too disturbed to be a baseline: measured on the CPU beside {workers - 1} "
                "other pytest-xdist worker(s); save CPU baselines without -n")  # fmt: skip
    host = getattr(result, "host", None)
    if result.backend != "cpu" or not host or not host.get("busy"):
        return None
    if not host.get("samples"):
        return f"too disturbed to be a baseline: measured on a busy host ({describe(host)})"
    kept = host["samples"] - host["preempted"]
    return (
        f"too disturbed to be a baseline: {host['preempted']} of {host['samples']} samples "
        f"preempted, {kept} undisturbed ({describe(host)})"
    )


def _beside_workers(result: Any, workers: object) -> bool:
    """A CPU measurement under pytest-xdist with 2 or more workers: they time each other."""
    return (isinstance(workers, int) and workers >= 2 and result.backend == "cpu"
            and result.kind == "measured")  # fmt: skip


def xdist_cpu_warning(workers: object, results: Iterable[Any]) -> str | None:
    """Under pytest-xdist with more than one worker, CPU benchmarks time each other."""
    n = sum(1 for r in results if _beside_workers(r, workers))
    if not n:
        return None
    return (
        f"gpuperf: WARNING: {n} CPU benchmark(s) ran under pytest-xdist with {workers} "
        "workers, which share the CPU and time each other; run them without -n for figures "
        "worth comparing"
    )

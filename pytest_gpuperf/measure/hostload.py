"""Is the host busy? The load average and the CPU steal while a benchmark was measured.

On a loaded host a CPU figure measures the other work as much as ours: two runs 86x apart
both showed an interval of ±1%, because the interval describes the samples, not the host.
So each measurement reads /proc/loadavg and /proc/stat's steal counter before and after,
and a result measured while the 1-minute load average exceeded the number of cores, or
while more than STEAL_LIMIT of the CPU time was stolen by the hypervisor, carries the flag
`busy-host` (shown beside it; `host` in the results JSON).

On the CPU a busy-host result's verdict against the baseline is inconclusive rather than
regressed or improved (`busy_verdicts`): the load, not the code, may explain the change. On
a GPU the flag is shown but the verdict stands: GPU-bound work does not wait for the host,
and launch-bound work is judged in its own noise class already.

`read_host` is the one place that reads the host (`gpu_benchmark` calls it before and
after each measurement); tests replace it with monkeypatch (no real load is needed).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def describe(host: dict[str, Any]) -> str:
    return (
        f"load average {host['load1']:g} on {host['cores']} cores, "
        f"{host['steal'] * 100:.1f}% CPU steal"
    )


STEAL_LIMIT = 0.05  # a fraction of the CPU time over the measurement


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
    host = assess(before, after)
    if host is None:
        return
    result.host = host
    if host["busy"]:
        result.notes.append(f"measured on a busy host: {describe(host)}")


def xdist_cpu_warning(workers: object, results: Iterable[Any]) -> str | None:
    """Under pytest-xdist with more than one worker, CPU benchmarks time each other."""
    if not isinstance(workers, int) or workers < 2:
        return None
    n = sum(1 for r in results if r.backend == "cpu" and r.kind == "measured")
    if not n:
        return None
    return (
        f"gpuperf: WARNING: {n} CPU benchmark(s) ran under pytest-xdist with {workers} "
        "workers, which share the CPU and time each other; run them without -n for figures "
        "worth comparing"
    )

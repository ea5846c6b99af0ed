"""A virtual clock for tests whose outcome depends on measured times.

CI runs on shared CPUs that move 10-50% between sessions, so a test that compares real
timings can fail on a busy runner. Here the engine's clock (`pytest_gpuperf.measure.timing.time`)
is replaced by a clock that only moves when the benchmark "works": `spin(s)` advances it
by `s` plus a small seeded jitter. Every sample, stop decision, session median and verdict
is then the same on every run and every machine, and no test spends real time spinning.
The process's CPU time (`process_time`) moves with `spin` too (the work is CPU-bound);
`preempt(s)` moves the wall clock and the thread's run-queue wait (hostload.RunQueue):
other work held the CPU for `s` seconds; `sleep(s)` moves the wall clock alone (the work
waited on something else). `install(..., run_queue=False)` reads as a kernel without
schedstat (no run-queue wait: preemption told by CPU time alone).

The jitter seed changes from one pytest session to the next in a fixed sequence (a counter
file in the current directory), so saved baseline sessions differ a little, as real ones do.
This file is also copied into pytester projects, which import it as `vclock`.
"""

from __future__ import annotations

import random
import types
from pathlib import Path

JITTER = 1e-4  # relative sd of one call's time: 0.01%
COUNTER = ".vclock-sessions"


class Clock:
    def __init__(self, seed: int) -> None:
        self.now = 1000.0
        self.cpu = 10.0
        self.waited = 0.0  # the thread's run-queue seconds
        self.rng = random.Random(seed)

    def perf_counter(self) -> float:
        return self.now

    def process_time(self) -> float:
        return self.cpu

    def spin(self, seconds: float) -> None:
        step = seconds * (1 + self.rng.gauss(0.0, JITTER))
        self.now += step
        self.cpu += step

    def preempt(self, seconds: float) -> None:
        self.now += seconds
        self.waited += seconds

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def read(self) -> float:  # hostload.RunQueue's
        return self.waited


CLOCK = Clock(0)


def next_seed(directory: Path) -> int:
    path = directory / COUNTER
    seed = int(path.read_text()) if path.exists() else 0
    path.write_text(str(seed + 1))
    return seed


def install(monkeypatch, seed: int, run_queue: bool = True) -> Clock:
    """Make the engine read `CLOCK`, a fresh clock with this seed, until monkeypatch undoes it;
    and the host read as idle (pytest_gpuperf.measure.hostload.read_host), so that the runner's own
    load never flags a result busy-host here."""
    import pytest_gpuperf.measure.hostload as hostload
    import pytest_gpuperf.measure.timing as timing

    global CLOCK
    CLOCK = Clock(seed)
    clock = types.SimpleNamespace(perf_counter=CLOCK.perf_counter, process_time=CLOCK.process_time)
    monkeypatch.setattr(timing, "time", clock)
    idle = hostload.HostSample(load1=0.0, steal=0, total=0, cores=64)
    monkeypatch.setattr(hostload, "read_host", lambda: idle)
    clock_now = CLOCK
    monkeypatch.setattr(hostload, "open_run_queue", lambda: clock_now if run_queue else None)
    return CLOCK


def spin(seconds: float) -> None:
    CLOCK.spin(seconds)


def preempt(seconds: float) -> None:
    CLOCK.preempt(seconds)


def sleep(seconds: float) -> None:
    CLOCK.sleep(seconds)


CONFTEST = """
import os
import pathlib

import pytest

import vclock

SEED = vclock.next_seed(pathlib.Path.cwd())


@pytest.fixture(autouse=True)
def virtual_clock(monkeypatch):
    return vclock.install(monkeypatch, SEED, run_queue=not os.environ.get("VCLOCK_NO_RUNQUEUE"))
"""


def add_to(pytester) -> None:
    """Give a pytester project this clock: `from vclock import spin` in its tests."""
    pytester.makepyfile(vclock=Path(__file__).read_text())
    pytester.makeconftest(CONFTEST)

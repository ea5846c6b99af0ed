"""Long-lived round processes of many builds, a few slots each: `gpuperf bisect`'s
measurement (cli/bisect.py), run by the paired stage's worker and driver (worker.py,
rounds.py). A build's processes start once and then measure round after round ("go <i>
more"), so a further round costs the test's own run, not a process start (CUDA, imports,
the test's setup: 8.5-10.9 s a process on an H200, docs/evidence/h200-2026-12-07-bisect).

A build has `slots` processes, started together; the caller says which slot measures a
round, so that a process's own level (a GPU's can differ by 1-2% between processes) shows
as slots that disagree (judging/bisection.py). The builds named in `keep` (the walk's ends)
keep their processes until `close`; of the others, one build's at a time: starting another
build's stops the least recently used first, so the GPU holds at most (len(keep) + 1) x
slots copies of a test's models. A process's own modules are checked every round
(provenance), the files it imported when it ends (abprobe): a build that measured another
build's code is an error naming it."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rounds import (
    Build,
    Proc,
    RoundsError,
    answer,
    check_imports,
    check_modules,
    one_round,
    start_process,
    stop_processes,
)

ANSWER_S = 3600.0  # the longest a process may take to start or to measure one round


class WrongBuild(RoundsError):
    """A build's process imported another build's code (`key`: that build)."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(why)
        self.key = key


@dataclass
class Costs:
    """What the processes cost (seconds): a build's processes started together until all
    are ready (`starts`), a process's first round (its models built, the GPU warmed) and
    its later rounds (the test's own run), a build made ready (a worktree and its setup:
    `preps`, the caller's); `prior`: a resumed run's saved figures, used until this run
    measures its own."""

    starts: list[float] = field(default_factory=list)
    firsts: list[float] = field(default_factory=list)
    laters: list[float] = field(default_factory=list)
    preps: list[float] = field(default_factory=list)
    prior: dict[str, float] = field(default_factory=dict)

    def _of(self, values: list[float], name: str) -> float | None:
        if values:
            return statistics.median(values)
        x = self.prior.get(name)
        return float(x) if isinstance(x, int | float) else None

    @property
    def start_s(self) -> float | None:
        return self._of(self.starts, "start_s")

    @property
    def round_s(self) -> float | None:
        """One process's later round (one side)."""
        return self._of(self.laters, "round_s")

    @property
    def first_extra_s(self) -> float | None:
        """What a process's first round costs beyond a later one."""
        first = self._of(self.firsts, "first_s")
        later = self.round_s
        return None if first is None else max(0.0, first - (later or 0.0))

    @property
    def prep_s(self) -> float | None:
        return self._of(self.preps, "prep_s")

    def saved(self) -> dict[str, float]:
        """The figures a resumed run starts from."""
        out = {"start_s": self.start_s, "round_s": self.round_s, "prep_s": self.prep_s,
               "first_s": self._of(self.firsts, "first_s")}  # fmt: skip
        return {k: round(v, 3) for k, v in out.items() if v is not None}


@dataclass
class _Member:
    build: Build
    work: Path
    tree: Path
    env: dict[str, str]
    procs: list[Proc] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # rounds asked of each live process
    used: int = 0  # when it last measured (a tick): the least recent is stopped first
    generation: int = 0  # how many times its processes were started


class Pool:
    """The builds' processes, started on a build's first round."""

    def __init__(self, root: Path, slots: int, keep: Collection[str],
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.root, self.slots, self.keep, self.clock = root, slots, set(keep), clock
        self.members: dict[str, _Member] = {}
        self.costs = Costs()
        self.started = 0  # processes started
        self.tick = 0

    def add(self, key: str, build: Build, work: Path, tree: Path, env: dict[str, str]) -> None:
        """A build whose processes start on its first round (`work` holds the probe
        directory: rounds.install_worker)."""
        self.members[key] = _Member(build, work, tree, env)

    def alive(self, key: str) -> bool:
        m = self.members.get(key)
        return m is not None and bool(m.procs)

    def round(self, key: str, slot: int) -> dict[str, Any]:
        """One round of build `key` in its process `slot` (its processes started first,
        where none lives): the round's payload (worker.py: results, outcomes, modules).
        RoundsError when a process fails; WrongBuild when a stopped build's process
        imported another build's code."""
        m = self.members[key]
        if not m.procs:
            self._start(key, m)
        self.tick += 1
        m.used = self.tick
        proc, i = m.procs[slot], m.rounds[slot]
        t0 = self.clock()
        data = one_round(proc, i, False, self.clock() + ANSWER_S)
        (self.costs.firsts if i == 0 else self.costs.laters).append(self.clock() - t0)
        m.rounds[slot] += 1
        try:
            check_modules(proc, data.get("modules") or {}, m.tree)
        except RoundsError as exc:
            raise WrongBuild(key, str(exc)) from None
        return data

    def _start(self, key: str, m: _Member) -> None:
        """Stop the least recently used processes of builds not kept (one build's live
        beside the kept ones), then start this build's `slots` processes and wait until
        each is ready: all of it is the start's cost."""
        t0 = self.clock()
        if key not in self.keep:
            for other in sorted(self.members, key=lambda k: self.members[k].used):
                if other != key and other not in self.keep and self.members[other].procs:
                    self.stop(other)
        m.generation += 1
        probe = m.work / "probe"
        for s in range(self.slots):
            name = f"p{m.generation}-{s}"
            m.procs.append(start_process(m.build, m.work, name, m.env, probe))
            m.rounds.append(0)
            self.started += 1
        try:
            for proc in m.procs:
                ready = answer(proc, self.clock() + ANSWER_S)
                if ready[:2] == ["ready", "0"]:
                    raise RoundsError("its pytest collected none of the tests to measure")
        except RoundsError as exc:
            procs, m.procs, m.rounds = m.procs, [], []
            stop_processes(procs, kill=False)  # ended: their logs hold the whole error
            raise RoundsError(f"{exc} {_errors(procs)}".strip()) from None
        self.costs.starts.append(self.clock() - t0)

    def stop(self, key: str, kill: bool = False) -> None:
        """End build `key`'s processes (asked to stop; `kill`: at once, no proof checked);
        WrongBuild where one imported another build's code."""
        m = self.members.get(key)
        if m is None or not m.procs:
            return
        procs, m.procs, m.rounds = m.procs, [], []
        stop_processes(procs, kill=kill)
        if kill:
            return
        for proc in procs:
            try:
                check_imports(proc, self.root, m.tree)
            except RoundsError as exc:
                raise WrongBuild(key, str(exc)) from None

    def close(self, kill: bool = False) -> None:
        """End every build's processes; the first WrongBuild after all are stopped."""
        first: WrongBuild | None = None
        for key in list(self.members):
            try:
                self.stop(key, kill)
            except WrongBuild as exc:
                first = first or exc
        if first is not None:
            raise first


def _errors(procs: list[Proc]) -> str:
    """The error lines (pytest's "E ..." and "...Error...") of ended processes' logs."""
    found: list[str] = []
    for proc in procs:
        with contextlib.suppress(OSError):
            text = proc.log.read_text(encoding="utf-8", errors="replace")
            found += [x.strip() for x in text.splitlines()
                      if x.startswith("E ") or "Error" in x]  # fmt: skip
    return " | ".join(dict.fromkeys(found[-3:]))

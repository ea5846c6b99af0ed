"""The bisection engine of `gpuperf bisect`: which commits of a range good..bad changed a
figure. Pure: the commits, a `measure(commit, against, rounds)` callable and a clock come in;
no git, no processes, no files (cli/bisect.py runs the rounds and writes the state file).

Every commit is measured against the good and against the bad build in paired rounds: each
round's figure is the log ratio commit/against, so what moves both sides of a round (the
card's state) cancels. A build's rounds run in `Settings.processes` long-lived processes
(slots): round i of a pair in slot i % processes of each side, so a process's own level
(on a GPU it can differ by 1-2% from the next process's) is not averaged away by more
rounds in the same process: each slot's mean is kept (`Est.slots`), the half range of the
slots' means is added whole to the interval (as the paired stage adds a process effect,
paired/judge.py), and a step must hold in every slot. A level difference between two
commits comes from those pairs (via the good build or via the bad one, whichever interval
is narrower; two measurements' half-widths add in quadrature, their slots' means subtract
slot by slot: the shared build's process cancels), with Student's t interval at the
engine's confidence. Judged against the smallest step reported (half the tolerance,
`Settings.step`), a difference is

- a STEP: beyond that size and beyond its interval (the ladder's rule, judging/verdict.py),
  and beyond that size on the same side in every slot;
- FLAT: its whole interval inside that size;
- otherwise unsure: its pairs get more rounds (doubled, up to `max_rounds`); still unsure
  there, a difference whose estimate reaches the step size is reported undecided (never a
  culprit), a smaller one is no step shown.

The range good..bad is walked only where it is a STEP (flat or unsure: the change is not in
the code between them, or cannot be placed: said, no walk). A segment (a, b) known to hold
a step is split at its middle measurable commit m, and each half that is a STEP is split
again, so a probe between two steps splits the range both ways and each step of at least
half the tolerance is named; an adjacent pair is a culprit. A commit that cannot be measured
(`Skip`: no build, no import, a failed test) is named and stepped over, as `git bisect skip`:
a culprit whose neighbours could not be measured is reported with them as candidates.

The engine replays from what it has measured (the state: each pair's rounds, the skipped
commits), so a run killed and resumed asks `measure` only for what it had not yet got. A
budget in seconds stops it before the next measurement; the segments still open are the
narrowest ranges reached; with a `cost` (the seconds a measurement will likely take) it
also stops before a measurement that the budget left cannot hold.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .verdict import t_quantile

STATE_SCHEMA = "pytest-gpuperf/bisect-state-1"
# each decision's confidence: a walk makes about ten (two a probe), so at the gate's 0.99 a
# one-step range of 24 commits named a false culprit beside the true one in 4-5 of 100
# seeded noisy ranges, at 0.999 in 3 of 600 (tests/test_bisection.py's simulation)
CONFIDENCE = 0.999
STEP, FLAT, UNSURE = "step", "flat", "unsure"
Key = tuple[str, str]  # (commit, the commit it is measured against: the good or the bad one)
# new rounds' log ratios commit/against: (commit, against, rounds, index of the first: its
# slot is index % processes)
Measure = Callable[[str, str, int, int], Sequence[float]]
Cost = Callable[[str, str, int], float]  # the seconds measure(commit, against, rounds) will take


class Skip(Exception):
    """The commit cannot be measured (it does not build or import, or its test fails)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BisectError(Exception):
    """Bad input, or a range that cannot be bisected: one line, exit 2."""


class _OutOfBudget(Exception):
    """The budget is spent: no further measurement is started."""


@dataclass(frozen=True)
class Settings:
    """How the engine decides: the tolerance (relative), the rounds each pair starts with
    and the most it may get, the confidence of each interval, the budget in seconds of
    measuring in this run (None: none), the processes (slots) a build's rounds run in."""

    tolerance: float = 0.03
    rounds: int = 5
    max_rounds: int = 40
    confidence: float = CONFIDENCE
    budget_s: float | None = None
    processes: int = 2

    def __post_init__(self) -> None:
        if not 0 < self.tolerance < 1:
            raise BisectError(f"tolerance must be between 0 and 1, got {self.tolerance!r}")
        if not 2 <= self.rounds <= self.max_rounds:
            raise BisectError(f"rounds must be at least 2 and at most max rounds "
                              f"({self.max_rounds}), got {self.rounds}")  # fmt: skip
        if not 1 <= self.processes <= self.rounds:
            raise BisectError(f"processes must be at least 1 and at most the rounds "
                              f"({self.rounds}), got {self.processes}")  # fmt: skip
        if self.budget_s is not None and not self.budget_s > 0:
            raise BisectError(f"the budget must be a positive number of seconds, got "
                              f"{self.budget_s!r}")  # fmt: skip

    @property
    def step(self) -> float:
        """The smallest step reported, in log units: half the tolerance."""
        return math.log1p(self.tolerance / 2)


@dataclass(frozen=True)
class Est:
    """A log-ratio difference, the half-width of its interval, the pairs it came from, and
    its mean in each process slot (empty: exact, as a build against itself)."""

    mean: float
    half: float
    parts: tuple[Key, ...] = ()
    slots: tuple[float, ...] = ()

    def minus(self, other: Est) -> Est:
        n = max(len(self.slots), len(other.slots))
        mine, theirs = self.slots or (0.0,) * n, other.slots or (0.0,) * n
        # slots of other counts (a state of other settings) are not compared: none
        same = len(mine) == len(theirs)
        slots = tuple(x - y for x, y in zip(mine, theirs, strict=True)) if same else ()
        return Est(self.mean - other.mean, math.hypot(self.half, other.half),
                   self.parts + other.parts, slots)  # fmt: skip

    def negated(self) -> Est:
        return Est(-self.mean, self.half, self.parts, tuple(-x for x in self.slots))


@functools.lru_cache(maxsize=256)
def _t(confidence: float, df: int) -> float:
    return t_quantile(confidence, df)


def pair_estimate(ratios: Sequence[float], confidence: float, key: Key,
                  processes: int = 1) -> Est:  # fmt: skip
    """The mean of the slots' mean log ratios (round i in slot i % processes), its t
    half-width over the rounds (infinite under 2 rounds) plus half the range of the slots'
    means: more rounds in the same processes never narrow it below their disagreement."""
    n = len(ratios)
    if n < 2:
        return Est(ratios[0] if ratios else 0.0, math.inf, (key,))
    k = max(1, min(processes, n))
    slots = tuple(statistics.fmean(ratios[i::k]) for i in range(k))
    spread = (max(slots) - min(slots)) / 2
    mean = math.fsum(ratios) / n  # floats: statistics.stdev's exact sums cost a walk seconds
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in ratios) / (n - 1))
    half = _t(confidence, n - 1) * sd / math.sqrt(n) + spread
    return Est(statistics.fmean(slots), half, (key,), slots if k > 1 else ())


def step_of(e: Est, step: float) -> str:
    """STEP, FLAT or UNSURE: a difference against the smallest step reported (a STEP in
    every process slot's mean too, on the same side)."""
    size = abs(e.mean)
    held = all(math.copysign(1.0, e.mean) * x >= step for x in e.slots)
    if size >= step and size > e.half and held:
        return STEP
    if size + e.half < step:
        return FLAT
    return UNSURE


@dataclass(frozen=True)
class Range:
    """The commits after `first_before` up to `last`: where a step lies (a culprit: `last`
    alone when `candidates` is one commit), or might (undecided), or was not yet placed
    (the budget). `change` is the level difference last vs first_before (log units)."""

    first_before: str
    last: str
    candidates: tuple[str, ...]
    change: float
    half: float
    why: str = ""


@dataclass
class Outcome:
    """What a bisection found. `verdict`: "walked" (the range was walked; the culprits and
    undecided ranges say what it found), "same" (good and bad do not differ by a step: the
    change is not in the code between them), "small" (no step shown at the most rounds: the
    estimate is under half the tolerance, its interval reaches beyond), "undecided"
    (whether they differ cannot be said) or "budget" (stopped: `open` holds the narrowest
    ranges reached)."""

    verdict: str
    total: Est | None
    culprits: list[Range] = field(default_factory=list)
    undecided: list[Range] = field(default_factory=list)
    open: list[Range] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    probes: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    spent_s: float = 0.0


class Bisection:
    """One bisection of `commits` (good first, bad last, in history order)."""

    def __init__(self, commits: Sequence[str], measure: Measure, settings: Settings, *,
                 state: dict[str, Any] | None = None,
                 save: Callable[[dict[str, Any]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 cost: Cost | None = None) -> None:  # fmt: skip
        if len(commits) < 2 or len(set(commits)) != len(commits):
            raise BisectError("a bisection needs at least two distinct commits, good first")
        self.commits = list(commits)
        self.good, self.bad = self.commits[0], self.commits[-1]
        self.measure, self.s, self.save, self.clock = measure, settings, save, clock
        self.cost = cost
        self.data: dict[Key, list[float]] = {}
        self.skipped: dict[str, str] = {}
        self.spent_before = 0.0  # measuring time of earlier runs (a resumed state's)
        self.spent = 0.0  # this run's
        self.calls = 0
        self.level: dict[Key, int] = {}  # the rounds each pair is judged on, this pass
        if state is not None:
            self._load(state)

    # ------------------------------------------------------------------ the state
    def state(self) -> dict[str, Any]:
        """What a resumed run needs: the commits, each pair's rounds, the skipped commits."""
        return {
            "schema": STATE_SCHEMA,
            "commits": self.commits,
            "pairs": [[c, a, r] for (c, a), r in sorted(self.data.items())],
            "skipped": dict(sorted(self.skipped.items())),
            "spent_s": round(self.spent_before + self.spent, 3),
        }

    def _load(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("schema") != STATE_SCHEMA:
            raise BisectError(f"not a bisect state ({STATE_SCHEMA})")
        if state.get("commits") != self.commits:
            raise BisectError("the state is of another range (its commits differ): start "
                              "anew without --resume, or remove the state file")  # fmt: skip
        try:
            for c, a, ratios in state["pairs"]:
                if (c, a) in self.data or not all(math.isfinite(float(x)) for x in ratios):
                    raise ValueError((c, a))
                self.data[(str(c), str(a))] = [float(x) for x in ratios]
            self.skipped = {str(k): str(v) for k, v in dict(state.get("skipped", {})).items()}
            self.spent_before = float(state.get("spent_s", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise BisectError(f"the state is malformed ({exc!r})") from None

    # ---------------------------------------------------------------- measuring
    def _ratios(self, key: Key) -> list[float]:
        """The rounds pair `key` is judged on now, measuring those it lacks: Skip where the
        commit cannot be measured, _OutOfBudget where the budget is spent."""
        commit, against = key
        if commit in self.skipped:
            raise Skip(self.skipped[commit])
        n = self.level.setdefault(key, self.s.rounds)
        have = self.data.get(key, [])
        if len(have) < n:
            if self._over_budget(commit, against, n - len(have)):
                raise _OutOfBudget
            t0 = self.clock()
            try:
                new = [float(x) for x in self.measure(commit, against, n - len(have),
                                                      len(have))]  # fmt: skip
            except Skip as exc:
                self.skipped[commit] = exc.reason
                self._saved()
                raise
            finally:
                self.spent += self.clock() - t0
                self.calls += 1
            if len(new) != n - len(have) or not all(math.isfinite(x) for x in new):
                raise BisectError(f"{commit[:12]} against {against[:12]}: asked for "
                                  f"{n - len(have)} rounds, got {new!r}"[:300])  # fmt: skip
            have = self.data[key] = have + new
            self._saved()
        return have[:n]

    def _over_budget(self, commit: str, against: str, rounds: int) -> bool:
        """Whether the budget is spent, or cannot hold the measurement's likely cost."""
        if self.s.budget_s is None:
            return False
        need = self.cost(commit, against, rounds) if self.cost is not None else 0.0
        return self.spent >= self.s.budget_s or self.spent + need > self.s.budget_s

    def _saved(self) -> None:
        if self.save is not None:
            self.save(self.state())

    def _pair(self, commit: str, against: str) -> Est:
        return pair_estimate(self._ratios((commit, against)), self.s.confidence,
                             (commit, against), self.s.processes)  # fmt: skip

    def _x(self, c: str) -> Est:
        """c's level against the good build's."""
        return Est(0.0, 0.0) if c == self.good else self._pair(c, self.good)

    def _y(self, c: str) -> Est:
        """c's level against the bad build's (good's: the good-bad pair, mirrored)."""
        if c == self.bad:
            return Est(0.0, 0.0)
        if c == self.good:
            return self._pair(self.bad, self.good).negated()
        return self._pair(c, self.bad)

    def diff(self, i: str, j: str) -> Est:
        """Level j - level i: via the good build or via the bad one, the narrower."""
        via_good = self._x(j).minus(self._x(i))
        via_bad = self._y(j).minus(self._y(i))
        return via_good if via_good.half <= via_bad.half else via_bad

    def judge(self, i: str, j: str) -> tuple[str, Est]:
        """The difference between i and j decided, with more rounds while unsure (the
        chosen route's pairs first, then the other's), up to max_rounds each."""
        while True:
            e = self.diff(i, j)
            verdict = step_of(e, self.s.step)
            if verdict != UNSURE:
                return verdict, e
            grow = [k for k in e.parts if self.level[k] < self.s.max_rounds]
            if not grow:
                both = self._x(j).parts + self._x(i).parts + self._y(j).parts + self._y(i).parts
                grow = [k for k in both if self.level[k] < self.s.max_rounds]
            if not grow:
                return UNSURE, e
            for k in dict.fromkeys(grow):
                self.level[k] = min(2 * self.level[k], self.s.max_rounds)

    # ---------------------------------------------------------------- walking
    def run(self) -> Outcome:
        """Walk the range: the outcome, the state saved after every measurement."""
        self.level = {}
        try:
            verdict, total = self.judge(self.good, self.bad)
        except Skip as exc:
            which = "bad" if self.bad in self.skipped else "good"
            raise BisectError(f"the {which} commit cannot be measured: {exc.reason}") from None
        except _OutOfBudget:
            whole = self._range(0, len(self.commits) - 1, None, "the budget ran out")
            return self._outcome("budget", None, [], [], [whole])
        if verdict != STEP:
            small = abs(total.mean) < self.s.step
            said = "same" if verdict == FLAT else "small" if small else "undecided"
            return self._outcome(said, total, [], [], [])
        return self._walk(total)

    def _walk(self, total: Est) -> Outcome:
        culprits: list[Range] = []
        undecided: list[Range] = []
        todo = [(0, len(self.commits) - 1)]
        while todo:
            a, b = todo.pop()
            try:
                found, unsure, more = self._segment(a, b)
            except Skip as exc:  # a probe measured before failed when asked for more rounds
                found, more = [], []
                unsure = [self._range(a, b, None, f"a probe of it failed on a later "
                                      f"measurement: {exc.reason}")]  # fmt: skip
            except _OutOfBudget:
                left = [self._range(x, y, None, "the budget ran out") for x, y in [*todo, (a, b)]]
                return self._outcome("budget", total, culprits, undecided,
                                     sorted(left, key=self._order))  # fmt: skip
            culprits += found
            undecided += unsure
            todo += more[::-1]  # the earlier half first
        return self._outcome("walked", total, culprits, undecided, [])

    def _segment(self, a: int, b: int) -> tuple[list[Range], list[Range], list[tuple[int, int]]]:
        """One segment judged to hold a step: (culprits, undecided ranges, segments to walk).
        It is judged again first: its ends may have got more rounds since (for another
        segment), and a step that no longer holds is not walked, nor named."""
        verdict, e = self.judge(self.commits[a], self.commits[b])
        if verdict != STEP:
            return [], self._unsure(a, b, e), []
        m = self._probe_in(a, b)
        if m is None:
            return [self._range(a, b, e)], [], []
        unsure, more = [], []
        for i, j in ((a, m), (m, b)):
            verdict, e = self.judge(self.commits[i], self.commits[j])
            if verdict == STEP:
                more.append((i, j))
            else:
                unsure += self._unsure(i, j, e)
        if not more and not unsure:
            e = self.diff(self.commits[a], self.commits[b])
            why = (f"no single step of at least half the tolerance: the change is spread "
                   f"over smaller ones on both sides of {self.commits[m][:12]}")  # fmt: skip
            unsure.append(self._range(a, b, e, why))
        return [], unsure, more

    def _unsure(self, i: int, j: int, e: Est) -> list[Range]:
        """A difference not shown to be a step: undecided where its estimate reaches the
        smallest step (a step may lie there), else nothing (no step shown)."""
        if abs(e.mean) < self.s.step:
            return []
        return [self._range(i, j, e, "a step of at least half the tolerance may lie here: "
                            "its interval is too wide to say")]  # fmt: skip

    def _probe_in(self, a: int, b: int) -> int | None:
        """The measurable commit nearest the middle of (a, b), measured against both
        builds; None where every commit between them is skipped (or there is none)."""
        middle = (a + b) / 2
        for m in sorted(range(a + 1, b), key=lambda k: (abs(k - middle), k)):
            if self.commits[m] in self.skipped:
                continue
            try:
                self._x(self.commits[m])
                self._y(self.commits[m])
            except Skip:
                continue
            return m
        return None

    def _range(self, a: int, b: int, e: Est | None, why: str = "") -> Range:
        cands = tuple(self.commits[a + 1 : b + 1])
        if e is not None and not why and len(cands) > 1:
            why = f"{len(cands) - 1} commit(s) before it could not be measured"
        return Range(self.commits[a], self.commits[b], cands,
                     e.mean if e else math.nan, e.half if e else math.nan, why)  # fmt: skip

    def _order(self, r: Range) -> int:
        return self.commits.index(r.last)

    def _outcome(self, verdict: str, total: Est | None, culprits: list[Range],
                 undecided: list[Range], open_: list[Range]) -> Outcome:  # fmt: skip
        spent = round(self.spent_before + self.spent, 3)
        return Outcome(verdict, total, sorted(culprits, key=self._order),
                       sorted(undecided, key=self._order), open_, dict(self.skipped),
                       self.probes(), self.calls, spent)  # fmt: skip

    def probes(self) -> list[dict[str, Any]]:
        """One row per commit measured or skipped, in history order: its rounds and its
        change against the good and the bad build (log units, with half-widths)."""
        rows = []
        for c in self.commits:
            row: dict[str, Any] = {"commit": c}
            for side, against in (("good", self.good), ("bad", self.bad)):
                ratios = self.data.get((c, against))
                if ratios:
                    e = pair_estimate(ratios, self.s.confidence, (c, against),
                                      self.s.processes)  # fmt: skip
                    row[f"vs_{side}"] = {"rounds": len(ratios), "change": e.mean,
                                         "half": e.half}  # fmt: skip
            if c in self.skipped:
                row["skipped"] = self.skipped[c]
            if len(row) > 1:
                rows.append(row)
        return rows


def rounds_needed(ratios: Sequence[float], s: Settings) -> int:
    """The rounds a probe's pairs will likely get, on the doubling ladder from `s.rounds` to
    `s.max_rounds`, at the spread of `ratios` (the good-bad rounds): the fewest whose
    half-width is within two thirds of the smallest step, where most flat pairs of the
    seeded simulation settle (tests/test_bisection.py). A rule of thumb for the estimate."""
    sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
    n = s.rounds
    while n < s.max_rounds and _t(s.confidence, n - 1) * sd / math.sqrt(n) > s.step * 2 / 3:
        n = min(2 * n, s.max_rounds)
    return n


def probes_for(commits: int) -> int:
    """The probes a one-step range of `commits` (good and bad included) takes, at most:
    a binary search of the commits between them."""
    return max(0, math.ceil(math.log2(max(1, commits - 1))))

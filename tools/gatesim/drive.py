"""One simulated run through the project's own judge, as pytest judges it: the baseline's
entries and the run's Results (one test a metric of model.py's suite), judge_run at the first
stage's share of the budget, the confirmation of the flagged tests on the same card
(confirmation.confirm, judged with the run's offsets), then the paired stage
(paired.stage.run_stage) at its share, with the budget the plugin gives it (the tests' own
seconds, at least BUDGET_FLOOR_S). Only the stage's measurement is simulated: its rounds
(paired.looks.measure_looks, replaced for the call by `SimLooks`) come from model.py, timed
by each test's real first-stage seconds; the base worktree is a scratch git repository's
commit. Everything that decides (candidates, what the budget affords, the looks, the base
check, the verdicts) is the plugin's code."""

from __future__ import annotations

import atexit
import dataclasses
import math
import shutil
import subprocess
import tempfile
import types
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from gatesim.model import CLASSES, Noise
from pytest_gpuperf.core.results import Result, Throughput
from pytest_gpuperf.core.stats import Summary
from pytest_gpuperf.judging.confirmation import confirm, flagged_tests
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.paired import looks as looks_mod
from pytest_gpuperf.paired.looks import MORE, PAIRS, Looks, one_look
from pytest_gpuperf.paired.plan import STOP_S, price, round_cap, saved
from pytest_gpuperf.paired.rounds import Measured, Timing, more_need
from pytest_gpuperf.paired.stage import BUDGET_FLOOR_S, STAGE_SHARE, run_stage

KERNELS = "throughput_kernels"
START_S = 5.0  # a process pair's start (H200: 1.7-7.9 s, plan.START_GUESS_S)
Z95 = 1.959963984540054
CODES = {"unchanged": 0, "regressed": 1, "improved": 2}  # anything else: 3 (inconclusive)


@cache
def scratch_commit() -> tuple[str, str]:
    """A scratch git repository with one commit (the paired stage's base): (root, commit)."""
    root = tempfile.mkdtemp(prefix="gatesim-")
    atexit.register(shutil.rmtree, root, True)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", root, *args], check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    git("-c", "user.name=gatesim", "-c", "user.email=gatesim@localhost", "commit", "-q",
        "--allow-empty", "-m", "base")  # fmt: skip
    return root, git("rev-parse", "HEAD")


def _summary(n: int, med: float, lo: float, hi: float) -> Summary:
    return Summary(n=n, median=med, ci_low=lo, ci_high=hi, confidence=0.95, ci_exact=True,
                   q1=lo, q3=hi, mean=med, stdev=0.0, min=lo, max=hi)  # fmt: skip


def result(noise: Noise, j: int, y: float, tol: float) -> Result:
    """Test m{j}'s Result at figure `y` (its kernel-time figure where it is one, beside a
    launch-bound wall time a fifth of it)."""
    h = y * noise.scur[j] * Z95
    r = Result(f"m{j}", None, "tokens", 1.0, backend="cuda", noise_class=CLASSES[noise.cls[j]],
               measure_s=float(noise.test_seconds[j]))  # fmt: skip
    r.time = _summary(10, 1 / y, 1 / (y + h), 1 / (y - h) if y > h else 1e9)
    r.throughput = Throughput("tokens/s", y, y - h, y + h)
    r.config = {"tolerance": tol, "memory_tolerance": tol}
    if noise.kern[j]:
        r.noise_class, r.launch_bound, r.bound = None, True, "memory"
        r.throughput = Throughput("tokens/s", y / 5, (y - h) / 5, (y + h) / 5)
        r.kernel_time = _summary(10, 1 / y, 1 / (y + h), 1 / (y - h) if y > h else 1e9)
    return r


def entries(noise: Noise, base: np.ndarray, commit: str) -> dict[str, dict[str, Any]]:
    """The baseline: each test's sessions (log values `base`, metrics x k) at `commit`."""
    out: dict[str, dict[str, Any]] = {}
    for j in range(noise.metrics):
        hist = [{"median": math.exp(x), "date": f"2026-12-0{1 + s % 9}T00:00:0{s % 10}",
                 "commit": commit} for s, x in enumerate(base[j])]  # fmt: skip
        metric = {"unit": "tokens/s", "direction": "higher", "median": hist[-1]["median"],
                  "noise_class": CLASSES[noise.cls[j]], "history": hist}  # fmt: skip
        e: dict[str, Any] = {"environment": {}, "commit": commit}
        if not noise.kern[j]:
            out[f"m{j}"] = {**e, "metrics": {"throughput": metric}}
            continue
        wall = [{**h, "median": h["median"] / 5, "flags": ["launch-bound"]} for h in hist]
        out[f"m{j}"] = {**e, "flags": {"launch_bound": True}, "metrics": {
            "throughput": {**metric, "median": wall[-1]["median"], "noise_class": "launch-bound",
                           "history": wall},
            KERNELS: metric}}  # fmt: skip
    return out


def _fields(obj: Any) -> dict[str, Any]:
    """A flat dataclass's fields as asdict gives them (without its deep copy)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def round_price(sec: float) -> float:
    """A round of a test, one side, whose first stage took `sec` seconds, as the stage plans
    it (plan.price, its sampling capped at a round's cap)."""
    return price(sec, [saved(sec, 0.0, 0, round_cap(None))])


@dataclasses.dataclass
class SimLooks:
    """measure_looks for one run: its rounds from model.py about the run's own levels
    (`level`, log, per metric) with the true change `change`, in the plugin's process
    pairs; a look's time from each test's price a round (plan.price, as the stage plans)."""

    noise: Noise
    rng: np.random.Generator
    level: np.ndarray
    change: np.ndarray
    tol: float
    sds: dict[int, tuple[float, float]] = dataclasses.field(default_factory=dict)
    templates: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    pair_u: dict[tuple[int, int], float] = dataclasses.field(default_factory=dict)

    def cost(self, t: str) -> float:
        return round_price(float(self.noise.test_seconds[int(t[1:])]))

    def _value(self, j: int, q: int, side: str) -> float:
        if j not in self.sds:
            table = self.noise.rounds.get(self.noise.round_class(j))
            pick = (
                table[self.rng.integers(len(table))] if table is not None and len(table) else (0, 0)
            )
            self.sds[j] = (float(pick[0]), float(pick[1]))
        w, p = self.sds[j]
        if (j, q) not in self.pair_u:
            self.pair_u[(j, q)] = float(self.rng.standard_normal()) * p
        x = self.level[j] + w / math.sqrt(2) * float(self.rng.standard_normal())
        return math.exp(x + (self.change[j] + self.pair_u[(j, q)] if side == "head" else 0.0))

    def round_dict(self, j: int, y: float) -> dict[str, Any]:
        """Test m{j}'s results dict of a round at figure `y`: `result(...).to_dict()`, its
        figures' fields rewritten on a copy of the test's first (asdict is most of the cost)."""
        r = result(self.noise, j, y, self.tol)
        if j not in self.templates:
            self.templates[j] = r.to_dict()
            return self.templates[j]
        d = {**self.templates[j], "time": _fields(r.time), "throughput": _fields(r.throughput)}
        if r.kernel_time is not None:
            d["kernel_time"] = _fields(r.kernel_time)
        return d

    def measure(self, tests: list[str], rounds: int, pair0: int, left: float) -> Measured:
        per = sum(2 * self.cost(t) for t in tests)
        fits = int((left - PAIRS * (START_S + STOP_S)) // per) if per > 0 else rounds
        n = max(2 * PAIRS, min(rounds, fits))
        pairs = [pair0 + p for p in range(PAIRS) for _ in range(n // PAIRS + (p < n % PAIRS))]
        got = Measured(pair=pairs, asked=rounds, timing=Timing(START_S, per, per),
                       wall_s=PAIRS * (START_S + STOP_S) + n * per,
                       seconds={t: 2 * n * self.cost(t) for t in tests})  # fmt: skip
        got.cut = "what the budget held" if n < rounds else ""
        for side in ("base", "head"):
            got.rounds[side] = [
                [self.round_dict(int(t[1:]), self._value(int(t[1:]), q, side)) for t in tests]
                for q in pairs
            ]
        return got

    def __call__(self, config: Any, results: Any, root: Path, commit: str, tests: list[str],
                 rounds: int, budget_s: float, more: Any = None, keep_first: Any = (),
                 setup: Any = None) -> Looks:  # fmt: skip
        got = self.measure(tests, rounds, 0, budget_s)
        left = budget_s - got.wall_s
        one = one_look(got, tests, left)
        if more is None or one:
            return Looks(got, note=one if more is not None else "", whole=True)
        again = more(got, tests)
        if not again:
            return Looks(got)
        if left < more_need(got, again, PAIRS):
            return Looks(got, note=f"no more rounds of the {len(again)} test(s): budget")
        return Looks(got, again=self.measure(again, MORE * rounds, PAIRS, left))


def first_stage(noise: Noise, base: np.ndarray, cur: np.ndarray, again: np.ndarray, *,
                tol: float, false_alarm: float) -> tuple[list[Result], Any, dict[str, Any]]:  # fmt: skip
    """Stage 1 of one run (log values: `base` metrics x k, the run `cur`, its confirmation
    `again`) at `false_alarm`, and the confirmation of what it flagged on this card:
    (the run's Results, stage 1's Judgement, the baseline entries)."""
    _, commit = scratch_commit()
    ent = entries(noise, base, commit)
    results = [result(noise, j, math.exp(cur[j]), tol) for j in range(noise.metrics)]
    first = judge_run(results, ent, {}, false_alarm=false_alarm)
    flagged = set(flagged_tests(results, first))
    if flagged:  # the fresh process on this card: the flagged tests, this run's offsets
        redo = [result(noise, j, math.exp(again[j]), tol) for j in range(noise.metrics)
                if f"m{j}" in flagged]  # fmt: skip
        confirm(results, first, redo, judge_run(redo, ent, {}, false_alarm=false_alarm,
                                                offsets=first.metric_offsets), None)  # fmt: skip
    return results, first, ent


def paired_stage(noise: Noise, results: list[Result], ent: dict[str, Any], level: np.ndarray,
                 change: np.ndarray, rng: np.random.Generator, *, tol: float,
                 false_alarm: float, rounds: int, looks: type[SimLooks] = SimLooks,
                 ) -> tuple[Any, SimLooks]:  # fmt: skip
    """The paired stage after stage 1 (run_stage at `false_alarm`, the budget the plugin
    gives it), its rounds drawn by `looks` about the base build's `level` with the true
    `change`: (the stage, the looks that measured it)."""
    root, _ = scratch_commit()
    sim = looks(noise, rng, level, change, tol)
    budget = max(BUDGET_FLOOR_S, float(noise.test_seconds.sum()))
    with mock.patch.object(looks_mod, "measure_looks", sim):
        stage = run_stage(types.SimpleNamespace(rootpath=root), results, ent, rounds=rounds,
                          false_alarm=false_alarm, budget_s=budget,
                          costs={r.nodeid: r.measure_s for r in results})  # fmt: skip
    return stage, sim


def codes_of(noise: Noise, results: list[Result]) -> np.ndarray:
    """Each metric's verdict code (its kernel-time figure's where it has one)."""
    codes = np.full(noise.metrics, 3, dtype=np.int8)
    for r in results:
        j = int(r.nodeid[1:])
        codes[j] = CODES.get(str(r.verdicts[KERNELS if noise.kern[j] else "throughput"].status), 3)
    return codes


def regressed_of(results: list[Result]) -> list[str]:
    """Every figure the run found regressed, as "m{j}:metric"."""
    return [f"{r.nodeid}:{m}" for r in results for m, v in r.verdicts.items()
            if v.status == "regressed"]  # fmt: skip


def judge_one(noise: Noise, base: np.ndarray, cur: np.ndarray, again: np.ndarray,
              level: np.ndarray, change: np.ndarray, rng: np.random.Generator, *,
              tol: float, false_alarm: float, rounds: int,
              paired: bool = True, keep: list[Result] | None = None,
              ) -> tuple[np.ndarray, dict[str, int], list[str], str]:  # fmt: skip
    """One run (log values: `base` metrics x k, the run `cur`, its confirmation `again`,
    the base build's level on this card `level`, the true change `change`): each metric's
    verdict code (its kernel-time figure's where it has one), each class shift's code,
    every figure the run found regressed (a wall time beside a kernel figure too, as
    "m{j}:metric") and the paired stage's line. `keep`: given the run's Results, with
    their verdicts and reasons (to read why)."""
    share = 1 - STAGE_SHARE if paired else 1.0
    results, first, ent = first_stage(noise, base, cur, again, tol=tol,
                                      false_alarm=false_alarm * share)  # fmt: skip
    line = ""
    if paired:
        stage, _ = paired_stage(noise, results, ent, level, change, rng, tol=tol,
                                false_alarm=false_alarm * STAGE_SHARE, rounds=rounds)  # fmt: skip
        line = stage.line if stage is not None else ""
    if keep is not None:
        keep.extend(results)
    shifts = {s.cls: CODES.get(str(s.verdict.status), 3) for s in first.shifts}
    return codes_of(noise, results), shifts, regressed_of(results), line

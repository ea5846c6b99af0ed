"""The paired stage's measurement (stage.py judges it): the rounds of both builds
(rounds.measure_rounds) in a worktree of the baseline's commit, in two looks: the
asked rounds in PAIRS process pairs, then up to MORE times as many of the tests the first
look left undecided, alone, in PAIRS more pairs (so that noise per process stays as
visible as in the first look), with what is left of the budget; on the CPU in as many more
pairs as the budget left holds (`second_size`).

Where the first look's rounds show that its tests no longer fit the budget (a test priced
up front at far less than its rounds take: docs/evidence/paired-stage-notes.md), the dearest
tests by what their rounds took are left to the first stage and the rest measured again in
new process pairs (`salvage`), instead of none."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.results import Result

PAIRS = 3  # process pairs: none may contradict a change (judge._each_pair); 2 let a figure
# whose level is drawn per process fail 1% of simulated A/A runs (issue 60)
WARM_S = 2.0  # seconds a CUDA run's round process loads the GPU before a call after idling
FILL = 0.8  # of the budget left, the CPU's second look plans its pairs in (second_size)
MORE = 2  # the second look's rounds, at the most, as a multiple of the rounds asked (gate-sim:
# a kernel figure at 3% a round caught 5% slower 76.6% -> 91.3% with 12 more after 6)


@dataclass
class Looks:
    """What the stage measured: the first look's rounds (`got`), the second's (None where
    it measured none), why it measured none ("" where it was not needed), whether the first
    look takes the stage's whole share, and the tests the first look dropped after its
    rounds showed they did not fit (with the line's words on them)."""

    got: Any
    again: Any = None
    note: str = ""
    whole: bool = False
    dropped: list[str] = field(default_factory=list)
    dropped_said: str = ""


def _env(gpu: str | None, select: Path, cuda: bool = False) -> dict[str, str]:
    """The round processes' environment: the run's, less pytest-xdist's worker variables,
    the step summary and PYTEST_ADDOPTS (the arguments hold them), as a fresh process of
    the gate's own (no confirmation, no paired stage of its own), on the run's GPU; where
    its tests ran on CUDA, each process loads the GPU for WARM_S before a call that may
    follow an idle card (worker.warm)."""
    from ..fresh.confirm import ENV_FLAG, fresh_environment
    from . import worker

    env = fresh_environment()
    env[ENV_FLAG] = "1"
    env[worker.SELECT] = str(select)
    if gpu:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if cuda:
        env[worker.WARM] = f"{WARM_S:g}"
    return env


def measure_looks(config: Any, results: list[Result], root: Path, commit: str,
                  tests: list[str], rounds: int, budget_s: float,
                  more: Callable[[Any, list[str]], list[str]] | None = None,
                  keep_first: Collection[str] = (),
                  setup: str | None = None) -> Looks:  # fmt: skip
    """The stage's rounds of `tests` within `budget_s`, in two looks where `more` names the
    first look's undecided tests (of the tests it measured). The first look takes the
    stage's whole share where the budget left cannot hold a second look of even the
    cheapest test (`one_look`), decided by what the rounds cost, not their figures, so each
    way spends about the share (docs/baselines.md). `keep_first`: tests with a figure the
    first stage decided (a checked figure), dropped last (`salvage`). `setup`: the shell
    command run in the base worktree first (--gpuperf-paired-setup, `base_ready`)."""
    import json

    from ..fresh.abtree import base_path, base_worktree, prune_stale
    from ..fresh.confirm import gpu_of
    from ..judging.abjudge import ABError
    from ..measure.memory import release_cached
    from . import rounds as r

    def select(name: str, chosen: list[str]) -> dict[str, str]:  # their rounds' environment
        (work / name).write_text(json.dumps(chosen), encoding="utf-8")
        cuda = any(x.backend == "cuda" for x in results if x.nodeid in chosen)
        return _env(gpu_of(results, chosen), work / name, cuda)

    prune_stale(root)
    try:
        with base_worktree(root, commit) as (work, tree):
            base_ready(root, tree, setup, budget_s)
            r.install_worker(work)
            head = r.head_build(config)
            extra = [p for p in base_path(root, tree, None).split(os.pathsep) if p]
            builds = {"head": head, "base": r.base_build(head, root, tree, extra)}
            release_cached()  # this process's cached GPU memory is the rounds' to use
            t0 = time.monotonic()
            looks, pair0 = Looks(None), PAIRS
            try:
                looks.got = r.measure_rounds(builds, select("select.json", tests), work, root,
                                           tree, rounds=rounds, pairs=PAIRS, budget_s=budget_s)
            except r.TooDear as exc:  # drop the dearest, measure the rest in new pairs
                left = budget_s - (time.monotonic() - t0)
                tests = _salvaged(looks, exc, tests, left, keep_first)
                try:
                    looks.got = r.measure_rounds(builds, select("select-kept.json", tests),
                                                 work, root, tree, rounds=rounds, pairs=PAIRS,
                                                 budget_s=left, pair0=PAIRS)  # fmt: skip
                except r.RoundsError as err:
                    raise r.RoundsError(f"{err}{looks.dropped_said}") from None
                pair0 = 2 * PAIRS
            try:
                one = one_look(looks.got, tests, budget_s - (time.monotonic() - t0))
                again = more(looks.got, tests) if more is not None and not one else []
            except Exception as exc:  # a bug here must not cost the first look
                looks.note = f"no second look: {type(exc).__name__}: {exc}"
                return looks
            if more is None or one:
                looks.note, looks.whole = (one if more is not None else ""), True
                return looks
            if not again:
                return looks
            left = budget_s - (time.monotonic() - t0)
            pairs, n = second_size(results, looks.got, again, left, rounds)
            looks.again, why = r.measure_more(builds, select("select-more.json", again), work,
                                              root, tree, looks.got, again, rounds=n,
                                              pairs=pairs, budget_s=left, pair0=pair0,
                                              least=PAIRS)  # fmt: skip
            if why:
                looks.note = (f"no more rounds of the {len(again)} test(s) still undecided "
                              f"after them: {why}")  # fmt: skip
            return looks
    except ABError as exc:  # git could not add the worktree
        raise r.RoundsError(str(exc)) from None


def second_size(results: list[Result], got: Any, tests: list[str], left: float,
                rounds: int) -> tuple[int, int]:  # fmt: skip
    """The second look's process pairs and rounds: MORE times the `rounds` asked, in PAIRS
    pairs; where none of `tests` ran on CUDA, in as many pairs of that many rounds a pair as
    FILL of the budget `left` holds, a pair priced by what the first look's rounds `got`
    cost (rounds.more_need). A CPU figure's level is drawn per process (1.7-2.8% on the
    2-core VM, docs/performance.md), so only more pairs narrow it, and a CPU process starts
    in seconds; a GPU's second look keeps PAIRS pairs, the size the project's simulator
    checked."""
    from .rounds import more_need

    if any(x.backend == "cuda" for x in results if x.nodeid in tests):
        return PAIRS, MORE * rounds
    per_pair = max(1, MORE * rounds // PAIRS)
    pair_s = more_need(got, tests, 1, per_pair)
    pairs = max(PAIRS, int(FILL * max(left, 0.0) // pair_s)) if pair_s > 0 else PAIRS
    return pairs, pairs * per_pair


def base_ready(root: Path, tree: Path, setup: str | None,
               budget_s: float | None = None) -> None:  # fmt: skip
    """Run the stage's setup command in the base worktree `tree` (fresh/abtree.run_setup,
    gpuperf ab's --setup) within the stage's `budget_s`, then refuse a worktree whose
    submodules are not checked out where the run's checkout has them (git worktree add
    leaves them empty: the base would import nothing, or another copy). ABError in one
    line, naming the command or the submodules."""
    from ..fresh.abtree import missing_submodules, run_setup
    from ..judging.abjudge import ABError

    if setup:  # within the stage's budget: a setup that hangs must not hang the run
        run_setup(setup, tree, "--gpuperf-paired-setup", budget_s)
    gone = sorted(set(missing_submodules(tree)) - set(missing_submodules(root)))
    if gone:
        raise ABError(f"the base worktree's submodule(s) {', '.join(gone)} are not checked out "
                      "(git worktree add leaves them empty): set --gpuperf-paired-setup="
                      "'git submodule update --init' (ini gpuperf_paired_setup)")  # fmt: skip


def _salvaged(looks: Looks, exc: Any, tests: list[str], left: float,
              keep_first: Collection[str]) -> list[str]:  # fmt: skip
    """The tests a first look whose rounds no longer fit (`exc`, a TooDear) measures again
    (`salvage`), the dropped ones and the line's words on them recorded in `looks`; the
    TooDear again where none is left."""
    kept, dropped = ([], tests) if exc.got is None else salvage(tests, exc.got, left, PAIRS,
                                                                 keep_first)  # fmt: skip
    if not kept:
        raise exc
    looks.dropped, looks.dropped_said = dropped, salvage_said(dropped, kept, exc.got)
    return kept


def salvage(tests: list[str], got: Any, left_s: float, pairs: int,
            keep_first: Collection[str] = ()) -> tuple[list[str], list[str]]:  # fmt: skip
    """After the first look's rounds `got` showed that its tests no longer fit
    (rounds.TooDear): the tests to measure again in `pairs` new process pairs within
    `left_s`, and those left to the first stage. The dearest by what their rounds took
    (`got.seconds`) go first, a test of `keep_first` (a checked figure) last, until the rest
    fit as rounds.more_need prices them (each pair its start, the first look's first
    round's extra, MIN_PER_PAIR rounds at the tests' mean a round so far, a first round's
    build included, and its end). The dearest goes in any case: all of them did not fit."""
    from .rounds import more_need

    cost = {t: got.seconds.get(t, 0.0) for t in tests}
    order = sorted(tests, key=lambda t: (t in keep_first, -cost[t], t))  # first to go first
    dropped, kept = order[:1], order[1:]
    while kept and more_need(got, kept, pairs) > left_s:
        dropped.append(kept.pop(0))
    return sorted(kept), dropped


def salvage_said(dropped: list[str], kept: list[str], got: Any) -> str:
    """The line's words on a first look that dropped its dearest tests (`salvage`)."""
    n = max(len(got.pair), 1)
    named = ", ".join(f"{t.split('::')[-1]} {got.seconds.get(t, 0.0) / n:.0f} s"
                      for t in dropped[:3])  # fmt: skip
    more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
    return (f"; its first {len(got.pair)} round(s) showed that its tests' rounds no longer fit "
            f"the budget, so {len(dropped)} test(s) were left out of the rounds (a round of "
            f"both builds: {named}{more}) and the other {len(kept)} re-measured in new "
            "process pairs")


def one_look(got: Any, tests: list[str], left: float) -> str:
    """Why the stage judges its first look at its whole share ("" where a second look
    could fit): the `left` seconds of its budget cannot hold a second look of even the
    cheapest of `tests` (rounds.more_need, by what the first look's rounds `got`
    cost). It reads the rounds' durations, not their figures: a duration follows a figure's
    noise only through its capped sampling, so each way spends about the stage's share."""
    from .rounds import more_need

    least = min((more_need(got, [t], PAIRS) for t in tests), default=0.0)
    if left >= least:
        return ""
    return (f"one look at the stage's whole share: the budget left ({max(left, 0):.0f} s) "
            f"holds no second look of even its cheapest test (about {least:.0f} s)")  # fmt: skip


def more_said(again: Any, note: str) -> str:
    """The second look in words: "; the 1 test(s) still undecided after them re-measured in
    12 more rounds (2 more processes a side, a round of both builds 3.1 s)", or why it
    measured none ("; no more rounds of the 2 test(s) still undecided after them: ...")."""
    if again is None:
        return f"; {note}" if note else ""
    tests = len({d.get("nodeid") for side in again.rounds.values() for r in side for d in r})
    n, asked = len(again.pair), again.asked
    cut = f" of the {asked} asked ({again.cut or 'what the budget held'})" if n < asked else ""
    return (f"; the {tests} test(s) still undecided after them re-measured in {n} more "
            f"rounds{cut} "
            f"({len(set(again.pair))} more processes a side, a round of both builds "
            f"{again.timing.round_cost:.1f} s)")  # fmt: skip


def rounds_said(measured: Any, budget_s: float) -> str:
    """ "6 rounds (a round of both builds 9.1 s, a pair's first 20.2 s, a process pair 7.9 s
    to start ...)", with "of the 8 asked (what the budget of 180 s held)" when fewer were
    measured than asked."""
    n, t = len(measured.pair), measured.timing
    text = f"{n} rounds"
    if n < measured.asked:
        text += (f" of the {measured.asked} asked ({measured.cut or 'what the budget held'}; "
                 f"budget {budget_s:.0f} s, --gpuperf-paired-budget)")  # fmt: skip
    text += (f" (a round of both builds {t.round_cost:.1f} s, a pair's first "
             f"{t.first_s:.1f} s, a process pair {t.start_s:.1f} s to start")  # fmt: skip
    per = sorted(measured.seconds.items(), key=lambda kv: -kv[1])[:3]
    if per and n:
        text += "; a test's measurement in a round, slowest: " + ", ".join(
            f"{nodeid.split('::')[-1]} {took / (2 * n):.1f} s" for nodeid, took in per
        )
    if getattr(measured, "warmed", 0.0) > 0:  # worker.warm
        text += f"; the GPU warmed {measured.warmed:.0f} s before calls after idling"
    return text + ")"

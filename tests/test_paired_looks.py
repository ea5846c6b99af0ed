"""The paired stage's two looks (paired/looks.py, paired/stage.py `_apply`,
paired/figures.py): the asked rounds judge every figure at half the stage's share; the
figures left inconclusive get up to MORE times as many rounds again, of their tests alone,
in PAIRS more process pairs, judged on all their rounds at the other half, still over every
figure re-measured. On the H200 a matmul's kernel time whose level is set each time the
test runs spread ±4% a round and read inconclusive at 4-6 rounds while every other figure
of the file was decided (docs/performance.md, 2026-12-02, fourth session); gate-sim: a 5%
slowdown of such figures caught 76.6% -> 91.3% with 12 more rounds after 6, the run-wide
A/A 0.275% -> 0.330% (docs/evidence/gate-sim-2026-12-02-ext)."""

from __future__ import annotations

import json
import math
import random
import re
import types

import pytest

from pytest_gpuperf.core.figures import KERNELS
from pytest_gpuperf.core.verdict import from_json, make
from pytest_gpuperf.judging.pairedrounds import PairedFigure
from pytest_gpuperf.paired.figures import extended, undecided_tests
from pytest_gpuperf.paired.looks import PAIRS
from pytest_gpuperf.paired.plan import STOP_S
from pytest_gpuperf.paired.stage import _apply

from . import vclock
from .gateproject import FAST
from .test_kernel_time import launch_bound
from .test_paired import ROUND_CLOCK, git
from .test_paired_kernels import _run


def _round(key: str, kernel_s: float | None) -> dict:
    r = launch_bound(0.010, kernel_s or 0.002, unit="flop", work=1e9, bound="compute", key=key)
    if kernel_s is None:
        r.kernel_time = None
    return r.to_dict()


def _measured(sides: dict[str, dict[str, list[float | None]]], pairs: list[int]):
    """Rounds of several tests: sides[side][key] is each round's kernel time of that test."""
    n = len(pairs)
    rounds = {s: [[_round(k, ts[i]) for k, ts in by_key.items()] for i in range(n)]
              for s, by_key in sides.items()}  # fmt: skip
    return types.SimpleNamespace(rounds=rounds, pair=pairs, seconds={})


def _levels(n: int, seed: int, sd: float = 0.04) -> list[float]:
    rng = random.Random(seed)
    return [0.002 * (1 + rng.gauss(0.0, sd)) for _ in range(n)]


def _two(key: str):
    r = _run("inconclusive")
    r.nodeid = key
    r.verdicts[KERNELS] = from_json({"status": "inconclusive", "reason": "wide", "change": -0.05})
    return r


def test_a_figure_the_first_look_leaves_undecided_is_decided_on_its_rounds_from_both():
    # a level set per run (±4% a round), the head 10% slower: 6 rounds cannot tell, 18 can
    steady, noisy = _two("t.py::mm"), _two("t.py::sweep")
    todo = [(steady, KERNELS, "compute"), (noisy, KERNELS, "compute")]
    base6, head6 = _levels(6, 1), [t * 1.1 for t in _levels(6, 2)]
    first = _measured({"base": {"t.py::mm": [0.002] * 6, "t.py::sweep": base6},
                       "head": {"t.py::mm": [0.0022] * 6, "t.py::sweep": head6}},
                      [0, 0, 0, 1, 1, 1])  # fmt: skip
    assert undecided_tests(todo, first, 0.0025) == ["t.py::sweep"]
    more = _measured({"base": {"t.py::sweep": _levels(12, 3)},
                      "head": {"t.py::sweep": [t * 1.1 for t in _levels(12, 4)]}},
                     [2] * 12)  # fmt: skip
    counts = _apply(todo, first, 0.005, "c" * 40, more)
    v, w = noisy.verdicts[KERNELS], steady.verdicts[KERNELS]
    assert counts == {"regressed": 2}
    assert v.status == "regressed" and v.paired["rounds"] == 18
    assert v.paired["processes"] == 3 and v.paired["round_pairs"][6:] == [2] * 12
    assert w.paired["rounds"] == 6 and w.paired["processes"] == 2  # decided at look 1
    # both looks at half of the stage's share, over the 2 figures re-measured
    assert v.paired["confidence"] == w.paired["confidence"] == pytest.approx(1 - 0.0025 / 2)


def test_the_same_rounds_without_the_second_look_stay_undecided():
    noisy = _two("t.py::sweep")
    first = _measured({"base": {"t.py::sweep": _levels(6, 1)},
                       "head": {"t.py::sweep": [t * 1.1 for t in _levels(6, 2)]}},
                      [0, 0, 0, 1, 1, 1])  # fmt: skip
    _apply([(noisy, KERNELS, "compute")], first, 0.005, "c" * 40)
    v = noisy.verdicts[KERNELS]
    assert v.status == "inconclusive" and v.paired["rounds"] == 6


def test_a_figure_missing_from_a_round_of_the_second_look_keeps_the_first_looks_verdict():
    f = PairedFigure("t.py::sweep", KERNELS, "compute", True, (1.0, 1.1), (1.0, 1.0), (0, 1))
    more = _measured({"base": {"t.py::sweep": [0.002, None]}, "head": {"t.py::sweep": [0.002] * 2}},
                     [2, 2])  # fmt: skip
    assert extended([f], more) == []
    whole = _measured({"base": {"t.py::sweep": [0.002] * 2}, "head": {"t.py::sweep": [0.002] * 2}},
                      [2, 2])  # fmt: skip
    (g,) = extended([f], whole)
    assert g.base[:2] == (1.0, 1.1) and len(g.base) == len(g.head) == len(g.within) == 4
    assert g.pair == (0, 1, 2, 2)


def test_a_figure_missing_from_the_first_look_is_not_taken_again():
    r = _two("t.py::sweep")
    first = _measured({"base": {"t.py::sweep": [0.002, None, 0.002, 0.002, 0.002, 0.002]},
                       "head": {"t.py::sweep": [0.003] * 6}}, [0, 0, 0, 1, 1, 1])  # fmt: skip
    assert undecided_tests([(r, KERNELS, "compute")], first, 0.0025) == []


# ------------------------------------------------------------------ end to end

LEVEL_BENCH = """
from vclock import spin

import work

def test_step(gpu_benchmark, virtual_clock):
    level = 1 + virtual_clock.rng.gauss(0.0, 0.04)  # set each time the test runs
    gpu_benchmark(lambda: spin(0.002 * work.FACTOR * level), work=64, unit="tokens")
"""


@pytest.mark.slow
def test_a_figure_whose_level_is_set_per_run_gets_more_rounds_and_is_caught(pytester, monkeypatch):
    # on the CPU the second look takes the pairs the budget left holds (second_size)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    vclock.add_to(pytester)
    pytester.makeconftest(ROUND_CLOCK)
    pytester.makepyfile(test_p=LEVEL_BENCH, work="FACTOR = 1.0\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(pytester.path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    for _ in range(3):
        pytester.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    (pytester.path / "work.py").write_text("FACTOR = 1.1\n")  # the head: 10% slower
    r = pytester.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-paired-budget=120")
    out = r.stdout.str()
    said = re.search(r"still undecided after them re-measured in (\d+) more rounds(?: of the "
                     r"\d+ asked \(.*?\))? \((\d+) more processes a side", out)  # fmt: skip
    assert said, out
    n, pairs = int(said.group(1)), int(said.group(2))
    assert pairs >= PAIRS and n == 4 * pairs, out  # MORE x 6 asked rounds / PAIRS a pair
    v = json.loads((pytester.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    assert v["paired"]["rounds"] == 6 + n and v["paired"]["processes"] == 3 + pairs, v["reason"]
    # each round ran the test anew, a lone test too (its level differs from round to round)
    assert len(set(v["paired"]["base_rounds"][:3])) == 3, v["paired"]["base_rounds"]
    assert v["status"] == "regressed" and r.ret == pytest.ExitCode.TESTS_FAILED, v["reason"]
    assert math.isclose(v["change"], -1 / 11, abs_tol=0.04)


def _fig(key, metric, base, head):
    n = len(base)
    return PairedFigure(key, metric, "compute", True, tuple(base), tuple(head),
                        tuple(i * 2 // n for i in range(n)), (0.001,) * n)  # fmt: skip


def test_a_compute_bound_figure_its_time_decided_is_not_measured_again():
    # the paired stage decides compute-bound work by its time (judge.clocked): a time
    # unchanged is decided whatever its per-clock twin says, so no second look; a time
    # undecided goes to the second look with its twin, even where the twin is unchanged
    from pytest_gpuperf.paired.figures import second_look, written

    r = _two("t.py::mlp")
    r.bound = "compute"
    time_f = _fig(r.key, "throughput", [1.0] * 4, [0.97] * 4)
    clock_f = _fig(r.key, "throughput_per_clock", [1.0] * 4, [1.0] * 4)
    wide = make("inconclusive", -0.03, 0.03, 0.05, 0.03, "wide")
    within = make("unchanged", 0.0, 0.0, 0.01, 0.03, "within tolerance")
    verdicts = {(r.key, "throughput"): within, (r.key, "throughput_per_clock"): wide}
    todo = [(r, "throughput", "compute")]
    assert written(r, "throughput", verdicts).status == "unchanged"
    assert second_look(todo, [time_f, clock_f], verdicts) == []
    # its time undecided: both go to the second look, judged together again
    verdicts = {(r.key, "throughput"): wide, (r.key, "throughput_per_clock"): within}
    assert written(r, "throughput", verdicts).status == "inconclusive"
    assert second_look(todo, [time_f, clock_f], verdicts) == [time_f, clock_f]
    # a time faster beyond the tolerance at the same cycles: power-state, decided
    faster = make("improved", 0.06, -0.06, 0.01, 0.03, "beyond tolerance and significant")
    verdicts = {(r.key, "throughput"): faster, (r.key, "throughput_per_clock"): within}
    assert written(r, "throughput", verdicts).status == "power-state"
    assert second_look(todo, [time_f, clock_f], verdicts) == []
    # a figure without usable rounds is never taken again (more rounds cannot mend it)
    verdicts = {(r.key, "throughput"): wide, (r.key, "throughput_per_clock"): wide}
    bad = _fig(r.key, "throughput", [1.0, 0.0], [1.0, 1.0])
    assert second_look(todo, [bad, clock_f], verdicts) == []


def test_a_cpu_second_look_takes_the_pairs_the_budget_left_holds_a_gpu_one_three():
    # the README example's A/A in a git checkout (2026-12-07, load 2.8): three more pairs
    # left it inconclusive, -1.01% ±2.73%; twenty read unchanged, +0.25% ±1.08%
    from pytest_gpuperf.paired.looks import FILL, MORE, second_size
    from pytest_gpuperf.paired.rounds import Measured

    got = Measured(pair=[0, 0, 1, 1, 2, 2], seconds={"t.py::a": 6.0, "t.py::b": 60.0})
    got.timing.start_s, got.timing.first_s, got.timing.round_s = 2.5, 1.5, 0.5
    cpu, gpu = _two("t.py::a"), _two("t.py::a")
    gpu.backend = "cuda"
    # a's round of both builds 1 s; a pair: 2.5 s to start, 1 s more in its first round,
    # 4 rounds (MORE x 6 / 3), STOP_S to end
    pair_s = 2.5 + 1.0 + 4 * 1.0 + STOP_S
    pairs, rounds = second_size([cpu], got, ["t.py::a"], 200.0, 6)
    assert pairs == int(FILL * 200.0 // pair_s) > PAIRS and rounds == 4 * pairs
    assert second_size([gpu], got, ["t.py::a"], 200.0, 6) == (PAIRS, MORE * 6)
    assert second_size([cpu], got, ["t.py::a"], 10.0, 6) == (PAIRS, 4 * PAIRS)  # the least


def test_the_second_look_starts_only_where_the_budget_left_holds_two_rounds_a_pair():
    from pytest_gpuperf.paired.rounds import Measured, measure_more

    got = Measured(pair=[0, 0, 0, 1, 1, 1], seconds={"t.py::a": 60.0, "t.py::b": 6.0})
    got.timing.start_s = 3.0
    # t.py::b: 1 s a round of both builds; 2 pairs x (3 s to start + 2 rounds + 5 s to stop)
    more, why = measure_more({}, {}, None, None, None, got, ["t.py::b"], rounds=12, pairs=2,
                             budget_s=19.0, pair0=2)  # fmt: skip
    assert more is None and why == ("the budget left (19 s) held fewer than 2 rounds a "
                                    "process pair of them (about 20 s)")  # fmt: skip


def test_a_pairs_first_round_counts_in_what_the_second_look_needs():
    # the H200 own file (2026-12-02, fifth session): with 47 s left the second look started,
    # its first round of two small tests took 22.1 s, and it stopped unmeasured
    from pytest_gpuperf.paired.rounds import Measured, measure_more, more_need

    got = Measured(pair=[0, 0, 1, 1], seconds={"t.py::a": 80.0, "t.py::b": 12.0})
    got.timing.start_s, got.timing.first_s, got.timing.round_s = 1.5, 35.0, 17.5
    # b: 3 s a round of both builds; a pair: 1.5 s to start, 17.5 s more in its first
    # round, 2 rounds, 5 s to end
    assert more_need(got, ["t.py::b"], 2) == pytest.approx(2 * (1.5 + 17.5 + 2 * 3.0 + 5.0))
    more, why = measure_more({}, {}, None, None, None, got, ["t.py::b"], rounds=12, pairs=2,
                             budget_s=47.0, pair0=2)  # fmt: skip
    assert more is None and "(about 60 s)" in why and "budget left (47 s)" in why


def test_where_no_second_look_can_fit_the_first_look_takes_the_whole_share():
    from pytest_gpuperf.paired.looks import one_look
    from pytest_gpuperf.paired.rounds import Measured

    got = Measured(pair=[0, 0, 1, 1], seconds={"t.py::a": 80.0, "t.py::b": 12.0})
    got.timing.start_s, got.timing.first_s, got.timing.round_s = 1.5, 35.0, 17.5
    said = one_look(got, ["t.py::a", "t.py::b"], 47.0)  # the cheapest, b, needs 90 s
    assert said == ("one look at the stage's whole share: the budget left (47 s) holds no "
                    "second look of even its cheapest test (about 90 s)")  # fmt: skip
    assert one_look(got, ["t.py::a", "t.py::b"], 90.0) == ""  # b fits: two looks
    # judged at the whole share over the 2 figures, not at half of it
    noisy, steady = _two("t.py::sweep"), _two("t.py::mm")
    todo = [(steady, KERNELS, "compute"), (noisy, KERNELS, "compute")]
    first = _measured({"base": {"t.py::mm": [0.002] * 6, "t.py::sweep": _levels(6, 1, 0.01)},
                       "head": {"t.py::mm": [0.002] * 6, "t.py::sweep": _levels(6, 2, 0.01)}},
                      [0, 0, 0, 1, 1, 1])  # fmt: skip
    _apply(todo, first, 0.005, "c" * 40, None, whole=True)
    assert noisy.verdicts[KERNELS].status == "inconclusive"
    assert noisy.verdicts[KERNELS].paired["confidence"] == pytest.approx(1 - 0.005 / 2)
    assert steady.verdicts[KERNELS].status == "unchanged"
    # its advice: with one look, the rounds to ask are all the rounds it needs

    found = re.search(r"about (\d+) paired rounds .*--gpuperf-paired-rounds=(\d+)",
                      noisy.verdicts[KERNELS].advice)  # fmt: skip
    assert found and found.group(1) == found.group(2), noisy.verdicts[KERNELS].advice


def test_the_second_looks_line_says_what_it_took_and_where_the_budget_cut_it():
    from pytest_gpuperf.paired.looks import more_said
    from pytest_gpuperf.paired.rounds import Measured

    again = Measured(pair=[2] * 4 + [3] * 4, asked=12)
    again.rounds = {"base": [[{"nodeid": "t.py::b"}]] * 8, "head": [[{"nodeid": "t.py::b"}]] * 8}
    again.timing.round_s = 2.5
    assert more_said(again, "") == (
        "; the 1 test(s) still undecided after them re-measured in 8 more rounds of the 12 "
        "asked (what the budget held) (2 more processes a side, a round of both builds 2.5 s)"
    )
    assert more_said(None, "no more rounds of the 1 test(s) still undecided after them: x") == (
        "; no more rounds of the 1 test(s) still undecided after them: x"
    )
    assert more_said(None, "") == ""

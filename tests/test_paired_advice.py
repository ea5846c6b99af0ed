"""What the paired stage says about a figure it cannot decide (judging/pairedrounds.py
`rounds_to_settle`, `settle_advice`; paired/stage.py `_apply`): its rounds' spread, whether
its level is set each time the test runs, and how many rounds would settle it. On the H200
(docs/performance.md, 2026-12-02, fourth session) a bf16 matmul's kernel time sat at
271-308 us by allocation while each allocation's own figure held within ±0.3%, so its
paired rounds spread ±4% and a 5% slowdown read INCONCLUSIVE in 3 of 3 runs."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.figures import KERNELS
from pytest_gpuperf.core.verdict import amend
from pytest_gpuperf.judging.pairedrounds import (
    SETTLE_CAP,
    PairedFigure,
    rounds_to_settle,
    settle_advice,
)
from pytest_gpuperf.judging.verdict import quantile
from pytest_gpuperf.paired.stage import _apply

from .test_paired_kernels import _rounds, _run

CONF = 1 - 0.005 / 8


def _half(var: float, n: int) -> float:
    return quantile(CONF, n - 1) * math.sqrt(var / n)


@given(st.floats(1e-8, 0.01), st.sampled_from([0.01, 0.03, 0.1]))
def test_the_rounds_to_settle_are_the_fewest_whose_interval_is_half_the_tolerance(var, tol):
    r = rounds_to_settle(var, CONF, tol)
    target = math.log1p(tol) / 2
    if r is None:
        assert _half(var, SETTLE_CAP) > target
        return
    assert 2 <= r <= SETTLE_CAP and _half(var, r) <= target
    assert r == 2 or _half(var, r - 1) > target
    # a noisier figure never needs fewer rounds
    assert (rounds_to_settle(var * 2, CONF, tol) or SETTLE_CAP + 1) >= r


def test_rounds_to_settle_of_the_h200_matmul_and_of_a_steady_figure():
    # ±4% a round (the sweep[256] matmul's kernel time): dozens of rounds for a 3% tolerance
    r = rounds_to_settle(math.log1p(0.04) ** 2, CONF, 0.03)
    assert r is not None and 40 < r < 200
    assert rounds_to_settle(math.log1p(0.001) ** 2, CONF, 0.03) == 4  # t with 1 df: 2 never do
    assert rounds_to_settle(1.0, CONF, 0.03) is None  # beyond the cap: no number is promised
    assert rounds_to_settle(float("nan"), CONF, 0.03) is None


def _fig(base, head, within):
    n = len(base)
    return PairedFigure("t.py::mm", KERNELS, "compute", True, tuple(base), tuple(head),
                        tuple(i * 2 // n for i in range(n)), tuple(within))  # fmt: skip


LEVELS = (616.4, 578.0, 600.8, 616.7)  # the H200's base rounds of sweep[256] (TFLOP/s)


def test_a_level_set_per_run_is_named_with_the_rounds_that_would_settle_it():
    head = (514.3, 564.8, 576.7, 578.0)  # slow5-1's head rounds
    text = settle_advice(_fig(LEVELS, head, [0.001] * 4), 0.03, CONF, 2.6)
    assert text.startswith("its paired difference varies ±")
    assert "a round (sd over 4 rounds)" in text
    assert "the base build's own rounds spread ±3.1% where a round's own interval is ±0.1%" in text
    assert "its level is set each time the test runs" in text
    sd = statistics.stdev(math.log(h / b) for b, h in zip(LEVELS, head, strict=True))
    r = rounds_to_settle(sd * sd, CONF, 0.03)
    assert f"about {r} paired rounds would narrow its interval to half the tolerance " \
           f"(--gpuperf-paired-rounds={r}; its test takes 2.6 s a round of both builds" in text
    assert text.endswith("or widen this benchmark's tolerance (@pytest.mark.gpuperf(tolerance=...))")
    # with a second look of twice the asked rounds, a third of them asked buys them all
    more = settle_advice(_fig(LEVELS, head, [0.001] * 4), 0.03, CONF, 2.6, more=2)
    assert f"(--gpuperf-paired-rounds={math.ceil(r / 3)};" in more
    # never an option value the stage refuses: beyond its most, it says so
    capped = settle_advice(_fig(LEVELS, head, [0.001] * 4), 0.03, CONF, 2.6, more=2, most=5)
    assert "(more than the stage measures: --gpuperf-paired-rounds is at most 5)" in capped
    assert "--gpuperf-paired-rounds=" not in capped


@pytest.mark.parametrize("within", [[0.02] * 4, [], [0.0] * 4])
def test_rounds_that_spread_as_their_own_intervals_say_nothing_of_a_level(within):
    # each round's own interval as wide as the rounds' spread (or none recorded, or rounds
    # that recorded a zero-width one: no interval): noise of the measurement, which longer
    # rounds do narrow
    text = settle_advice(_fig(LEVELS, LEVELS[::-1], within), 0.03, CONF)
    assert "level is set" not in text and "its test takes" not in text
    assert "paired rounds would narrow" in text


def test_one_round_gives_no_advice():
    assert settle_advice(_fig([600.0], [590.0], [0.001]), 0.03, CONF) == ""


def test_an_inconclusive_figure_keeps_the_first_stages_advice_then_the_rounds():
    r = _run("inconclusive")
    r.verdicts[KERNELS] = amend(r.verdicts[KERNELS], None,
                                advice="save more baseline sessions (3 so far)")
    base = [0.002 * (1 + d / 50) for d in (-1, 1, -1, 1, -1, 1)]  # ±2% round to round
    signs = (1, -1, 1, -1, 1, -1)  # the builds ±1.5% apart in turn
    head = [b * (1 + d * 0.015) for b, d in zip(base, signs, strict=True)]
    measured = _rounds(base, head)
    measured.seconds = {"t.py::mm": 30.0}  # both sides over the 6 rounds: 5 s a round
    _apply([(r, KERNELS, "compute")], measured, 0.005, "c" * 40)
    v = r.verdicts[KERNELS]
    assert v.status == "inconclusive" and v.stage1 is None  # stage 1's verdict stands
    first, paired = v.advice.split("; paired stage: ")
    assert first == "save more baseline sessions (3 so far)"
    assert "its level is set each time the test runs" in paired  # rounds of ±0.5% each
    assert "its test takes 5.0 s a round of both builds" in paired
    sd = math.log(1.015 / 0.985) / 2 * math.sqrt(6 / 5)  # the two values in turn, ddof 1
    assert v.paired["round_spread"] == pytest.approx(math.expm1(sd), rel=1e-9)


def test_a_checked_figure_not_borne_out_gets_the_rounds_advice():
    r = _run("improved")
    base = [0.002 * (1 + d / 20) for d in (-1, 1, -1, 1, -1, 1)]
    head = [0.002 * (1 + d / 20) for d in (1, -1, 1, -1, 1, -1)]
    _apply([(r, KERNELS, "compute")], _rounds(base, head), 0.005, "c" * 40)
    v = r.verdicts[KERNELS]
    assert v.status == "inconclusive" and v.advice.startswith("paired stage: its paired")


def test_a_decided_figure_carries_no_advice_but_its_spread():
    r = _run("regressed", change=-0.0834)
    base = [0.002 * (1 + d / 2000) for d in (-1, 0, 1, 0, 1, -1)]
    _apply([(r, KERNELS, "compute")], _rounds(base, [t * 1.1 for t in base]), 0.005, "c" * 40)
    v = r.verdicts[KERNELS]
    assert v.status == "regressed" and v.advice is None
    assert v.paired["round_spread"] == pytest.approx(0.0, abs=1e-9)


def test_gpuperf_ab_names_the_rounds_that_would_settle_an_inconclusive_figure():
    from pytest_gpuperf.cli.ab import judge_rounds

    key = ("t.py::test_r", "throughput")
    base = [{key: (100.0 * w, "GB/s", True)} for w in (1.0, 1.03, 0.97, 1.0)]
    head = [{key: (100.0 * w, "GB/s", True)} for w in (0.97, 1.0, 1.03, 1.03)]
    out = judge_rounds({"base": base, "head": head}, 0.03, 0.01)
    v = out["verdicts"]["t.py::test_r"]["throughput"]
    d = [math.log(h / b) for b, h in zip((1.0, 1.03, 0.97, 1.0), (0.97, 1.0, 1.03, 1.03), strict=True)]
    r = rounds_to_settle(statistics.variance(d), out["confidence"], 0.03)
    assert v["status"] == "inconclusive" and r is not None and r > 4
    assert f"about {r} paired rounds would narrow its interval to half the tolerance (--rounds {r})" in (
        v["advice"]), v["advice"]


@given(st.lists(st.floats(0.5, 2.0), min_size=2, max_size=8), st.floats(0.5, 2.0))
def test_one_figure_gets_one_advice_from_gpuperf_ab_and_the_paired_stage(ratios, level):
    """Issue 64: for the same test `gpuperf ab` advised "run more rounds" and the paired
    stage "not even 1000 paired rounds would narrow it". Given the same rounds, both now
    say the same, each naming its own options."""
    from pytest_gpuperf.cli.ab import judge_rounds
    from pytest_gpuperf.judging.pairedrounds import AB_ROUNDS

    key = ("t.py::test_r", "throughput")
    base = [level * (1 + 0.01 * (i % 3)) for i in range(len(ratios))]
    head = [b * x for b, x in zip(base, ratios, strict=True)]
    out = judge_rounds({"base": [{key: (b, "GB/s", True)} for b in base],
                        "head": [{key: (h, "GB/s", True)} for h in head]}, 0.03, 0.01)  # fmt: skip
    v = out["verdicts"][key[0]][key[1]]
    if v["status"] != "inconclusive":
        return
    fig = PairedFigure(key[0], key[1], "compute", True, tuple(base), tuple(head),
                       (0,) * len(base))  # fmt: skip
    stage = settle_advice(fig, 0.03, out["confidence"])
    ab = settle_advice(fig, 0.03, out["confidence"], asked=AB_ROUNDS)
    assert v["advice"] == ab
    for a, b in (("--gpuperf-paired-rounds=", "--rounds "), (", --gpuperf-paired-budget", ""),
                 ("@pytest.mark.gpuperf(tolerance=...)", "--tolerance")):  # fmt: skip
        stage = stage.replace(a, b)
    assert stage == ab

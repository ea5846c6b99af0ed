"""Judging a run against a baseline (baseline/judge.py): changed directions, zero figures."""

from pytest_gpuperf.baseline.judge import judge_run
from pytest_gpuperf.results import Result, Throughput

from .reportdata import history


def recorded(value, unit="ms", higher=False, metric="lat"):
    r = Result("t.py::test_x", metric, unit, 1.0, kind="recorded", higher_is_better=higher)
    r.throughput = Throughput(unit, value, value, value)
    return r


def test_a_changed_direction_is_incomparable_not_an_improvement():
    """record("lat", 5, "ms") saved, then record("lat", 10, "ms", higher_is_better=True):
    judged with the run's direction it read IMPROVED +100%."""
    r = recorded(10.0, higher=True)
    judge_run([r], history([5.0, 5.0, 5.0]), {})
    v = r.verdicts["value"]
    assert v["status"] == "incomparable"
    assert v["reason"] == "direction changed: baseline lower is better, now higher is better"


def test_a_value_that_was_always_zero_regresses_by_the_difference():
    """0 ms -> 5 ms could never regress (no ratio): a value exactly 0 in every saved session
    is a constant, and any move the bad way is a regression; one session tells nothing."""
    r = recorded(5.0, unit="casts", metric="casts")
    judge_run([r], history([0.0, 0.0, 0.0], unit="casts", metric="casts"), {})
    v = r.verdicts["value"]
    assert v["status"] == "regressed"
    assert v["reason"] == "was exactly 0 in all 3 baseline sessions, now 5 casts"
    same = recorded(0.0, unit="casts", metric="casts")
    judge_run([same], history([0.0, 0.0], unit="casts", metric="casts"), {})
    assert same.verdicts["value"]["status"] == "unchanged"
    once = recorded(5.0, unit="casts", metric="casts")
    judge_run([once], history([0.0], unit="casts", metric="casts"), {})
    assert once.verdicts["value"]["status"] == "inconclusive"
    assert "0 in the only baseline session" in once.verdicts["value"]["reason"]

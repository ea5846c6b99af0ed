"""Statistics and the stopping rule: pure, property-tested."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_gpuperf.core.stats import StopRule, median, median_ci_ranks, stop_decision, summarize

times = st.floats(min_value=1e-6, max_value=10.0, allow_nan=False, allow_infinity=False)
samples = st.lists(times, min_size=1, max_size=300)


@given(samples, st.floats(min_value=1e-3, max_value=1e3))
def test_summary_scales_with_the_samples(xs, factor):
    a, b = summarize(xs), summarize([x * factor for x in xs])
    for name in ("median", "ci_low", "ci_high", "q1", "q3", "min", "max"):
        assert math.isclose(getattr(b, name), getattr(a, name) * factor, rel_tol=1e-9)
    assert math.isclose(a.rel_ci_halfwidth, b.rel_ci_halfwidth, rel_tol=1e-6, abs_tol=1e-12)


@given(samples)
def test_median_lies_inside_its_interval_and_the_range(xs):
    s = summarize(xs)
    assert s.min <= s.ci_low <= s.median <= s.ci_high <= s.max
    assert s.q1 <= s.median <= s.q3


@given(samples)
def test_order_does_not_matter(xs):
    assert summarize(xs) == summarize(list(reversed(xs)))


def test_known_values():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.min == 1.0 and s.max == 100.0
    assert not s.ci_exact  # 5 samples cannot give a 95% interval; it is [min, max]
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5


@pytest.mark.parametrize(
    ("n", "ranks"), [(5, None), (6, (0, 5)), (10, (1, 8)), (20, (5, 14)), (100, (39, 60))]
)
def test_median_ci_ranks_match_tables(n, ranks):
    # 0-based; e.g. n=10 -> [x(2), x(9)], n=100 -> [x(40), x(61)] as in standard tables
    assert median_ci_ranks(n, 0.95) == ranks


@given(st.integers(min_value=6, max_value=3000))
def test_ci_ranks_are_symmetric_and_ordered(n):
    lo, hi = median_ci_ranks(n, 0.95)
    assert 0 <= lo < hi <= n - 1
    assert lo == n - 1 - hi


@given(times, st.integers(min_value=1, max_value=500))
def test_rule_stops_on_constant_samples(value, n):
    rule = StopRule(min_samples=1, min_time=0.0, max_time=100.0, target=0.005)
    d = stop_decision([value] * max(n, 6), elapsed=1.0, rule=rule)
    assert d.stop and d.reason == "converged" and d.rel_ci == 0


@given(samples, st.floats(min_value=0, max_value=20))
def test_rule_always_stops_at_the_budget(xs, elapsed):
    rule = StopRule(min_samples=1000, min_time=0, max_time=5.0, target=1e-9, hopeless_factor=1e9)
    d = stop_decision(xs, elapsed, rule)
    if elapsed >= 5.0:
        assert d.stop
    if d.stop and d.reason == "budget":
        assert elapsed >= 5.0


def test_rule_waits_for_minimums():
    rule = StopRule(min_samples=10, min_time=1.0, max_time=10.0, target=0.01)
    assert not stop_decision([1.0] * 9, 5.0, rule).stop
    assert not stop_decision([1.0] * 50, 0.5, rule).stop
    assert stop_decision([1.0] * 10, 1.0, rule).reason == "converged"


def test_rule_gives_up_when_the_target_is_hopeless():
    rule = StopRule(min_samples=10, min_time=0.1, max_time=10.0, target=0.001)
    noisy = [1.0, 2.0] * 15  # CI spans 50% of the median: a 0.1% target needs ~10^6 samples
    d = stop_decision(noisy, 0.2, rule)
    assert d.stop and d.reason == "noise-limited"
    # ... but not from a noise estimate of fewer than 30 samples
    assert not stop_decision(noisy[:20], 0.2, rule).stop


@given(samples)
def test_rule_scale_invariant(xs):
    assume(len(xs) >= 6)
    rule = StopRule(min_samples=1, min_time=0, max_time=100.0, target=0.01)
    a = stop_decision(xs, 1.0, rule)
    b = stop_decision([x * 1000 for x in xs], 1.0, rule)
    assert a.stop == b.stop and a.reason == b.reason


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"min_samples": 0}, "min_samples"),
        ({"max_time": 0}, "max_time"),
        ({"target": 0}, "target"),
        ({"confidence": 1.5}, "confidence"),
        ({"min_time": -1}, "min_time"),
    ],
)
def test_bad_rules(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        StopRule(**kwargs)


def test_summarize_rejects_nan_and_empty():
    with pytest.raises(ValueError, match="NaN"):
        summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="zero samples"):
        summarize([])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 400), st.sampled_from([0.8, 0.9, 0.95, 0.99, 0.999]))
def test_median_ci_ranks_are_the_narrowest_that_cover(n, confidence):
    """The binomial interval of the median, checked against exact binomial sums: it covers
    the median with at least `confidence`, and one rank narrower on each side would not."""
    from math import comb

    def coverage(lo, hi):  # P(x_(lo) <= median <= x_(hi)), 0-based ranks
        return sum(comb(n, i) for i in range(lo + 1, hi + 1)) / 2**n

    ranks = median_ci_ranks(n, confidence)
    if ranks is None:
        assert coverage(0, n - 1) < confidence
        return
    lo, hi = ranks
    assert hi == n - 1 - lo
    assert coverage(lo, hi) >= confidence - 1e-12
    if lo + 1 <= hi - 1:
        assert coverage(lo + 1, hi - 1) < confidence

"""The verdict: pure, property-tested."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_gpuperf.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    NEW,
    REGRESSED,
    SEVERITY,
    UNCHANGED,
    Current,
    Reference,
    judge,
    what_would_settle,
)

pos = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
rel = st.floats(min_value=0.0, max_value=0.2)
history = st.lists(st.floats(min_value=0.9, max_value=1.1), min_size=1, max_size=10)

# how good a verdict looks for the code under test, for monotonicity
LOOKS = {REGRESSED: 0, INCONCLUSIVE: 1, UNCHANGED: 2, IMPROVED: 3}


def cur(m, halfwidth=0.0):
    return Current(m, m * (1 - halfwidth), m * (1 + halfwidth))


@given(pos, rel, history, st.booleans())
def test_identical_values_never_regress(value, hw, hist, higher):
    ref = Reference(tuple(value * h for h in hist))
    v = judge(cur(ref.value, hw), ref, higher_is_better=higher, tolerance=0.03)
    assert v.status != REGRESSED and v.status != IMPROVED
    assert v.change == pytest.approx(0.0, abs=1e-12)


@given(pos, pos, rel, history, st.floats(min_value=1e-6, max_value=1e6), st.booleans())
def test_verdict_is_invariant_to_scaling(value, base, hw, hist, factor, higher):
    ref = Reference(tuple(base * h for h in hist))
    scaled = Reference(tuple(base * h * factor for h in hist))
    a = judge(cur(value, hw), ref, higher_is_better=higher, tolerance=0.05)
    b = judge(cur(value * factor, hw), scaled, higher_is_better=higher, tolerance=0.05)
    assume(abs(abs(a.worse) - 0.05) > 1e-9 and a.uncertainty is not None)
    assume(abs(abs(a.worse) - a.uncertainty) > 1e-9 and abs(a.uncertainty - 0.05) > 1e-9)
    assert a.status == b.status


@given(
    st.floats(min_value=0.0, max_value=0.5), st.floats(min_value=0.0, max_value=0.5), rel, history
)
def test_larger_slowdowns_never_look_better(s1, s2, hw, hist):
    small, large = sorted((s1, s2))
    ref = Reference(tuple(100.0 * h for h in hist))
    v_small = judge(cur(ref.value * (1 - small), hw), ref, higher_is_better=True, tolerance=0.03)
    v_large = judge(cur(ref.value * (1 - large), hw), ref, higher_is_better=True, tolerance=0.03)
    assert LOOKS[v_large.status] <= LOOKS[v_small.status] or v_small.status == INCONCLUSIVE


@given(st.floats(min_value=0.0, max_value=0.5), rel, history)
def test_direction_lower_is_better(growth, hw, hist):
    ref = Reference(tuple(1e9 * h for h in hist))
    up = judge(cur(ref.value * (1 + growth), hw), ref, higher_is_better=False, tolerance=0.05)
    down = judge(cur(ref.value * (1 + growth), hw), ref, higher_is_better=True, tolerance=0.05)
    if up.status == REGRESSED:
        assert down.status == IMPROVED
    assert up.worse == pytest.approx(-down.worse)


def test_clear_cases():
    ref = Reference((100.0, 100.5, 99.5) * 3 + (100.0,))  # 10 sessions
    assert judge(cur(90.0, 0.001), ref, higher_is_better=True, tolerance=0.03).status == REGRESSED
    assert judge(cur(110.0, 0.001), ref, higher_is_better=True, tolerance=0.03).status == IMPROVED
    assert judge(cur(99.0, 0.001), ref, higher_is_better=True, tolerance=0.03).status == UNCHANGED
    noisy = judge(cur(90.0, 0.30), ref, higher_is_better=True, tolerance=0.03)
    assert noisy.status == INCONCLUSIVE and "uncertainty" in noisy.reason
    assert "measure longer" in what_would_settle(noisy, 3)
    assert "save more baseline sessions" in what_would_settle(noisy, 1)


def test_between_session_variation_counts():
    steady = Reference((100.0, 100.0, 100.0, 100.0))
    wobbly = Reference((90.0, 110.0, 95.0, 105.0))  # sessions differ by ~8%
    now = cur(93.0, 0.001)
    assert judge(now, steady, higher_is_better=True, tolerance=0.03).status == REGRESSED
    assert judge(now, wobbly, higher_is_better=True, tolerance=0.03).status == INCONCLUSIVE


def test_no_history_is_new_and_bad_tolerance_is_an_error():
    assert judge(cur(1.0), Reference(()), higher_is_better=True, tolerance=0.03).status == NEW
    with pytest.raises(ValueError, match="tolerance"):
        judge(cur(1.0), Reference((1.0,)), higher_is_better=True, tolerance=0)


def test_severity_orders_regressions_first():
    assert min(SEVERITY, key=SEVERITY.get) == REGRESSED


def test_t_quantiles_are_conservative():
    from pytest_gpuperf.verdict import t99

    assert t99(1) == 63.657 and t99(2) == 9.925 and t99(9) == 3.25
    assert t99(11) == 3.169  # df 10's value: wider than df 11's 3.106
    assert t99(1000) == 2.66 > 2.576
    with pytest.raises(ValueError):
        t99(0)


def test_few_baseline_sessions_widen_the_uncertainty():
    few = Reference((100.0, 101.0, 99.0))
    many = Reference((100.0, 101.0, 99.0) * 3)
    a = judge(cur(96.0, 0.001), few, higher_is_better=True, tolerance=0.03)
    b = judge(cur(96.0, 0.001), many, higher_is_better=True, tolerance=0.03)
    assert a.uncertainty > b.uncertainty
    assert a.status == INCONCLUSIVE and b.status == REGRESSED

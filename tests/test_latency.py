"""gpu_benchmark.latency(fn): time per call, lower is better, measured by the engine and
gated like a throughput (the virtual clock decides every time)."""

import json

import pytest

from pytest_gpuperf.core.figures import metrics_of
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.settings import parse_layer
from pytest_gpuperf.measure.bench import GpuBenchmark

from . import vclock
from .fakes import snapshot
from .gateproject import FAST

LAYER = parse_layer({"min_time": 0.01, "max_time": 0.3, "warmup_time": 0.0, "min_samples": 6}, "t")


def _bench():
    return GpuBenchmark("t.py::test_lat", snapshot(), [LAYER], None)


def test_latency_is_the_engines_time_per_call_lower_is_better(monkeypatch):
    vclock.install(monkeypatch, seed=3)
    bench = _bench()
    r = bench.latency(lambda: vclock.spin(0.002))
    assert r.kind == "measured" and r.outcome == "ok" and r.higher_is_better is False
    assert r.throughput.unit == "ms"
    assert r.throughput.median == pytest.approx(2.0, rel=1e-3)
    # the engine's interval of the median, in the same unit
    assert r.throughput.ci_low == pytest.approx(r.time.ci_low * 1e3)
    assert r.throughput.ci_high == pytest.approx(r.time.ci_high * 1e3)
    assert r.throughput.ci_low <= r.throughput.median <= r.throughput.ci_high
    assert len(r.samples) >= 6 and r.stop_reason == "converged"  # the engine's stopping rule
    (m,) = metrics_of(r).values()  # the judged figure: in ms, lower is better
    assert m["direction"] == "lower" and m["unit"] == "ms" and m["noise_class"] == "model"
    assert Result.from_dict(json.loads(json.dumps(r.to_dict()))).higher_is_better is False
    us = bench.latency(lambda: vclock.spin(0.002), unit="us", metric="us")
    assert us.throughput.unit == "us" and us.throughput.median == pytest.approx(2000, rel=1e-3)
    assert [x.key for x in bench.results] == ["t.py::test_lat", "t.py::test_lat::us"]


def test_a_launch_bound_latency_is_judged_in_the_launch_class(monkeypatch):
    vclock.install(monkeypatch, seed=4)
    r = _bench().latency(lambda: vclock.spin(0.001))
    r.launch_bound = True  # as the engine flags it on a GPU
    assert metrics_of(r)["throughput"]["noise_class"] == "launch-bound"


@pytest.mark.parametrize("unit", ["min", "tokens", "", 3])
def test_a_latency_unit_is_a_fixed_unit_of_time(unit):
    with pytest.raises(ValueError, match="latency unit must be one of s, ms, us"):
        _bench().latency(lambda: None, unit=unit)


LATENCY = """
import os

from vclock import spin

def test_lat(gpu_benchmark):
    slow = float(os.environ.get("SLOW", "0"))
    r = gpu_benchmark.latency(lambda: spin(0.002 * (1 + slow)))
    assert r.throughput.unit == "ms"
"""


def test_a_slower_latency_regresses_against_the_baseline(pytester, monkeypatch):
    monkeypatch.delenv("SLOW", raising=False)
    vclock.add_to(pytester)
    pytester.makepyfile(test_l=LATENCY)
    for _ in range(2):
        pytester.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    saved = json.loads((pytester.path / "baselines" / "cpu.json").read_text())
    m = saved["entries"]["test_l.py::test_lat"]["metrics"]["throughput"]
    assert m["direction"] == "lower" and m["unit"] == "ms"

    same = pytester.runpytest(*FAST)
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["UNCHANGED *test_l.py::test_lat *"])

    monkeypatch.setenv("SLOW", "0.5")  # 3 ms a call instead of 2: worse, though larger
    slow = pytester.runpytest(*FAST, "--gpuperf-no-confirm")
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        ["PERFORMANCE REGRESSION test_l.py::test_lat throughput: 2.00 ms -> 3.00 ms: regressed +5?.*%*"]
    )
    monkeypatch.setenv("SLOW", "-0.5")  # 1 ms: an improvement, never a failure
    fast = pytester.runpytest(*FAST)
    fast.assert_outcomes(passed=1)
    fast.stdout.fnmatch_lines(["IMPROVED *test_l.py::test_lat *"])

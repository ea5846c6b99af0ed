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
    assert metrics_of(r)["latency"]["noise_class"] == "launch-bound"


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
    metrics = saved["entries"]["test_l.py::test_lat"]["metrics"]
    assert "throughput" not in metrics  # a latency is named latency (before 2026-12-02: throughput)
    m = metrics["latency"]
    assert m["direction"] == "lower" and m["unit"] == "ms"

    same = pytester.runpytest(*FAST)
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["UNCHANGED *test_l.py::test_lat *"])

    monkeypatch.setenv("SLOW", "0.5")  # 3 ms a call instead of 2: worse, though larger
    slow = pytester.runpytest(*FAST, "--gpuperf-no-confirm")
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        ["PERFORMANCE REGRESSION test_l.py::test_lat latency: 2.00 ms -> 3.00 ms: regressed +5?.*%*"]
    )
    slow.stdout.fnmatch_lines(["REGRESSED *test_l.py::test_lat *latency *3.00 ms *+5?.*% ±*% slower *"])
    monkeypatch.setenv("SLOW", "-0.5")  # 1 ms: an improvement, never a failure
    fast = pytester.runpytest(*FAST)
    fast.assert_outcomes(passed=1)
    fast.stdout.fnmatch_lines(["IMPROVED *test_l.py::test_lat *latency *1* ms *-*% faster *"])


# ---- a latency is named latency (before 2026-12-02 it was saved and written as "throughput")


def _old_names(metrics: dict) -> dict:
    """A latency's figures as a version before 2026-12-02 named them."""
    return {k.replace("latency", "throughput", 1) if k.startswith("latency") else k: v
            for k, v in metrics.items()}  # fmt: skip


def _as_old_baseline(path):
    data = json.loads(path.read_text())
    for e in data["entries"].values():
        e["metrics"] = _old_names(e["metrics"])
    path.write_text(json.dumps(data))


def _as_old_results(path):
    data = json.loads(path.read_text())
    for r in data["results"]:
        if "latency" in r:
            r["throughput"] = r.pop("latency")
            r["verdicts"] = _old_names(r["verdicts"])
    path.write_text(json.dumps(data))


def _sessions(path, key="test_l.py::test_lat"):
    return [(h["median"], h["date"]) for h in
            json.loads(path.read_text())["entries"][key]["metrics"]["latency"]["history"]]  # fmt: skip


def test_a_baseline_of_an_older_version_holds_a_latency_as_throughput_and_still_gates(
    pytester, monkeypatch
):
    """Before 2026-12-02 a latency was saved under "throughput" (direction lower): such a file is
    read with it as `latency`, its history whole, judged with no NEW or MISSING, and a save
    into it writes the figure under `latency` only, every old session kept."""
    monkeypatch.delenv("SLOW", raising=False)
    vclock.add_to(pytester)
    pytester.makepyfile(test_l=LATENCY)
    for _ in range(3):
        pytester.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    path = pytester.path / "baselines" / "cpu.json"
    before = _sessions(path)
    _as_old_baseline(path)
    old = json.loads(path.read_text())["entries"]["test_l.py::test_lat"]["metrics"]
    assert "latency" not in old and old["throughput"]["direction"] == "lower"

    same = pytester.runpytest(*FAST, "--gpuperf-baseline=compare")
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["UNCHANGED *test_l.py::test_lat *latency *2.00 ms *"])
    assert "NEW" not in same.stdout.str() and "MISSING" not in same.stdout.str()

    pytester.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    saved = json.loads(path.read_text())["entries"]["test_l.py::test_lat"]["metrics"]
    assert "throughput" not in saved  # no duplicate beside the new name
    after = _sessions(path)
    assert after[:3] == before and len(after) == 4


def test_gpuperf_compare_reads_either_version_of_a_results_file_and_a_baseline(
    pytester, monkeypatch, capsys
):
    """An older version's results file (a latency as "throughput") against a baseline of this
    version, and this version's results file against an older version's baseline: the same
    `latency` row, UNCHANGED, nothing new or missing."""
    from pytest_gpuperf.cli.main import main as gpuperf_main

    monkeypatch.delenv("SLOW", raising=False)
    vclock.add_to(pytester)
    pytester.makepyfile(test_l=LATENCY)
    for _ in range(2):
        pytester.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    pytester.runpytest(*FAST, "--gpuperf-json=new.json").assert_outcomes(passed=1)
    new = json.loads((pytester.path / "new.json").read_text())["results"][0]
    assert "throughput" not in new and new["latency"]["unit"] == "ms"
    assert set(new["verdicts"]) == {"latency"}
    (pytester.path / "old.json").write_text((pytester.path / "new.json").read_text())
    _as_old_results(pytester.path / "old.json")
    base = pytester.path / "baselines" / "cpu.json"
    old_base = pytester.path / "old-cpu.json"
    old_base.write_text(base.read_text())
    _as_old_baseline(old_base)
    cases = [("old.json", base), ("new.json", old_base), ("old.json", old_base)]
    for run, baseline in cases:
        capsys.readouterr()
        code = gpuperf_main(["compare", str(pytester.path / run), "--baseline", str(baseline)])
        out = capsys.readouterr().out
        assert code == 0, (run, baseline, out)
        (row,) = [line for line in out.splitlines() if "test_l.py::test_lat" in line]
        assert row.split()[:4] == ["UNCHANGED", "test_l.py::test_lat", "latency", "2.00"], row
        assert "NEW" not in out and "MISSING" not in out


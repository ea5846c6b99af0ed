"""Hostile input, round 3, the gate's part: a changed direction, a save run compared with
the file it saved into, zeros, and a dangling baseline symlink (each failed before)."""

import json
import os

import pytest

from pytest_gpuperf.__main__ import main as gpuperf_main
from pytest_gpuperf.baseline.judge import judge_run
from pytest_gpuperf.baseline.schema import BaselineError
from pytest_gpuperf.baseline.store import save
from pytest_gpuperf.results import Result, Throughput

from .gateproject import FAST


def recorded(value, unit="ms", higher=False, metric="lat"):
    r = Result("t.py::test_x", metric, unit, 1.0, kind="recorded", higher_is_better=higher)
    r.throughput = Throughput(unit, value, value, value)
    return r


def history(values, unit="ms", direction="lower", metric="lat"):
    return {f"t.py::test_x::{metric}": {"environment": {}, "metrics": {"value": {
        "unit": unit, "direction": direction, "median": values[-1],
        "history": [{"median": v, "date": f"d{i}"} for i, v in enumerate(values)]}}}}  # fmt: skip


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


def test_compare_judges_a_save_run_against_the_history_before_it(project, monkeypatch):
    """`gpuperf compare` on the JSON of a save run judged it against a history holding the
    run itself: a doubled latency read INCONCLUSIVE where the same run unsaved is REGRESSED."""
    project.makepyfile(
        test_l="import os\n\ndef test_latency(gpu_benchmark):\n"
        "    gpu_benchmark.record('ttft', float(os.environ.get('TTFT', '100')), 'ms')\n"
    )
    for _ in range(3):
        project.runpytest(*FAST, "test_l.py", "--gpuperf-baseline=save").assert_outcomes(passed=1)
    monkeypatch.setenv("TTFT", "200")
    project.runpytest(*FAST, "test_l.py", "--gpuperf-baseline=save", "--gpuperf-json=saved.json")
    data = json.loads((project.path / "saved.json").read_text())
    assert data["saved"] is True and isinstance(data["session_id"], str)
    base = json.loads((project.path / "baselines" / "cpu.json").read_text())
    hist = base["entries"]["test_l.py::test_latency::ttft"]["metrics"]["value"]["history"]
    assert [h["median"] for h in hist] == [100.0, 100.0, 100.0, 200.0]
    assert hist[-1]["session"] == data["session_id"]
    monkeypatch.chdir(project.path)
    assert gpuperf_main(["compare", "saved.json"]) == 1  # judged against the 3 before it
    # a save run's file that lost its session id is refused, not judged against itself
    data.pop("session_id")
    (project.path / "nosid.json").write_text(json.dumps(data))
    assert gpuperf_main(["compare", "nosid.json"]) == 2


def test_a_dangling_baseline_symlink_creates_no_directories(tmp_path):
    """A save through a link to a path whose directory does not exist made that directory
    (anywhere on disk); it is refused, and nothing is created."""
    target = tmp_path / "elsewhere" / "deep" / "cpu.json"
    link = tmp_path / "baselines" / "cpu.json"
    link.parent.mkdir()
    os.symlink(target, link)
    entry = history([1.0])["t.py::test_x::lat"]
    with pytest.raises(BaselineError, match=r"is a symbolic link to .*whose directory does not exist"):
        save(link, "cpu", {"t.py::test_x::lat": entry}, now="1")
    assert not (tmp_path / "elsewhere").exists()

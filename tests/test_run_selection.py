"""A results file says which tests its run selected, and one run is one run however many
formats it was written in (#21.9): `gpuperf compare` of a run made with `-k` must not call
the deselected benchmarks missing, and `gpuperf report` of one run's --gpuperf-json and
--benchmark-json reports one run."""

from __future__ import annotations

import json

import pytest

from pytest_gpuperf.baseline.explain import missing
from pytest_gpuperf.runfile import ResultsFileError, read_run, run_count, summary_from_payload

from . import reportdata as rd
from .gateproject import FAST, saved


def _selected_run(project):
    saved(project)
    r = project.runpytest(*FAST, "-k", "test_spin", "--gpuperf-json=out.json")
    r.assert_outcomes(passed=1, deselected=1)
    return project.path / "out.json"


def test_a_run_records_the_tests_it_selected(project):
    path = _selected_run(project)
    _, summary = read_run(path)
    assert summary.selected == ["test_b.py::test_spin"]
    entries = json.loads((project.path / "baselines" / "cpu.json").read_text())["entries"]
    measured = [r.key for r in summary.results]
    assert missing(entries, measured, summary.selected) == []
    assert missing(entries, measured, None) == ["test_b.py::test_other"]  # compare's view today


def test_selected_is_checked_when_read_and_optional():
    data = rd.payload([rd.recorded("t.py::test_a", "x", 1.0, "s", {})])
    assert summary_from_payload(data, "f.json").selected is None
    data["selected"] = ["t.py::test_a"]
    assert summary_from_payload(data, "f.json").selected == ["t.py::test_a"]
    data["selected"] = ["t.py::test_a", 3]
    with pytest.raises(ResultsFileError, match=r"f\.json: 'selected' must be a list of test ids"):
        summary_from_payload(data, "f.json")


def test_compare_does_not_call_a_deselected_benchmark_missing(project, capsys, monkeypatch):
    from pytest_gpuperf.__main__ import main

    path = _selected_run(project)
    monkeypatch.chdir(project.path)
    capsys.readouterr()
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    assert "test_spin" in out and "test_other" not in out


def _one_run_two_files(project):
    r = project.runpytest(*FAST, "--gpuperf-json=a.json", "--benchmark-json=b.json")
    r.assert_outcomes(passed=2)
    return project.path / "a.json", project.path / "b.json"


def test_one_run_in_two_formats_counts_once(project):
    a, b = _one_run_two_files(project)
    summaries = [read_run(a)[1], read_run(b)[1]]
    assert summaries[0].session_id and summaries[0].session_id == summaries[1].session_id
    assert run_count(summaries) == 1
    assert run_count([*summaries, rd_summary_without_id()]) == 2


def rd_summary_without_id():
    return summary_from_payload(rd.payload([rd.recorded("t.py::test_a", "x", 1.0, "s", {})]), "x")


def test_gpuperf_report_counts_runs_not_files(project, capsys):
    from pytest_gpuperf.__main__ import main

    a, b = _one_run_two_files(project)
    capsys.readouterr()
    assert main(["report", str(a), str(b), "-o", str(project.path / "r.html")]) == 0
    assert "from 1 run(s)" in capsys.readouterr().out

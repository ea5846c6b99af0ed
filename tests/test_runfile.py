"""Results files read back (runfile.py): selected tests, runs counted once, hostile files."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.cli.main import InputError, compare_files
from pytest_gpuperf.judging.explain import missing
from pytest_gpuperf.outputs.runfile import (
    ResultsFileError,
    read_results,
    read_run,
    run_count,
    summary_from_payload,
)

from . import reportdata as rd
from .gateproject import FAST, saved
from .reportdata import JSON, SETTINGS, VALID_BASELINE, VALID_RESULTS, as_bytes, mutants


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


def _git(where, *args):
    import subprocess

    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=where,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def test_the_results_file_records_the_runs_commit_and_whether_the_tree_was_dirty(project):
    """Issue 57: the results file recorded no commit, so `gpuperf baseline accept` stamped
    the accept's HEAD, and nothing said whether the code measured was a commit's at all."""
    _git(project.path, "init", "-q")
    _git(project.path, "add", "-A")
    _git(project.path, "commit", "-qm", "c")
    head = _git(project.path, "rev-parse", "HEAD")
    project.runpytest(*FAST, "--gpuperf-json=out.json", "--gpuperf-baseline=off")
    data, summary = read_run(project.path / "out.json")
    assert (data["commit"], data["dirty"]) == (head, False)
    assert summary.commit == head and summary.date == data["date"] and data["date"][:2] == "20"
    (project.path / "test_b.py").write_text((project.path / "test_b.py").read_text() + "\n")
    project.runpytest(*FAST, "--gpuperf-json=out.json", "--gpuperf-baseline=off")
    assert read_run(project.path / "out.json")[0]["dirty"] is True
    assert summary_from_payload(data, "f.json").dirty is False


def test_commit_dirty_and_date_are_optional_and_checked_when_read():
    data = rd.payload([rd.recorded("t.py::test_a", "x", 1.0, "s", {})])
    for name in ("commit", "dirty", "date"):
        data.pop(name, None)
    old = summary_from_payload(data, "f.json")  # a file written before 2026-12-07
    assert (old.commit, old.dirty, old.date) == (None, None, None)
    for name, bad in (("commit", 3), ("dirty", "no"), ("dirty", 0), ("date", [])):
        with pytest.raises(ResultsFileError, match=rf"f\.json: '{name}' must be "):
            summary_from_payload({**data, name: bad}, "f.json")


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2", None])
def test_xdist_workers_is_a_count_when_read_and_optional(bad):
    data = rd.payload([rd.recorded("t.py::test_a", "x", 1.0, "s", {})])
    assert data.pop("xdist_workers") == 0  # written: none started
    assert summary_from_payload(data, "f.json").xdist_workers == 0  # files before 2026-12-06
    data["xdist_workers"] = 3
    assert summary_from_payload(data, "f.json").xdist_workers == 3
    data["xdist_workers"] = bad
    with pytest.raises(ResultsFileError, match=r"f\.json: 'xdist_workers' must be a count, got "):
        summary_from_payload(data, "f.json")


def test_compare_does_not_call_a_deselected_benchmark_missing(project, capsys, monkeypatch):
    from pytest_gpuperf.cli.main import main

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
    from pytest_gpuperf.cli.main import main

    a, b = _one_run_two_files(project)
    capsys.readouterr()
    assert main(["report", str(a), str(b), "-o", str(project.path / "r.html")]) == 0
    assert "from 1 run(s)" in capsys.readouterr().out


def check_compare(tmp_path, results_doc, baseline_doc):
    results = tmp_path / "r.json"
    base = tmp_path / "cpu.json"
    results.write_bytes(as_bytes(results_doc))
    base.write_bytes(as_bytes(baseline_doc))
    before = (results.read_bytes(), base.read_bytes())
    try:
        rows, failed, used, *_ = compare_files(results, base)
    except InputError as exc:
        assert str(results) in str(exc) or str(base) in str(exc) or "the run" in str(exc)
    else:
        assert isinstance(failed, bool) and used == base
        assert all(len(r) == 7 for r in rows)
    assert (results.read_bytes(), base.read_bytes()) == before


@SETTINGS
@given(doc=JSON)
def test_arbitrary_json_to_compare(tmp_path, doc):
    check_compare(tmp_path, doc, VALID_BASELINE)


@SETTINGS
@given(doc=mutants(VALID_RESULTS))
def test_valid_results_with_one_value_replaced_to_compare(tmp_path, doc):
    check_compare(tmp_path, doc, VALID_BASELINE)


@SETTINGS
@given(doc=mutants(VALID_BASELINE))
def test_compare_against_a_mutated_baseline(tmp_path, doc):
    check_compare(tmp_path, VALID_RESULTS, doc)


def test_the_valid_documents_are_valid(tmp_path):
    """The mutation tests start from documents that pass: otherwise they prove little."""
    (tmp_path / "cpu.json").write_text(json.dumps(VALID_BASELINE))
    assert load(tmp_path / "cpu.json").profile == "cpu"
    (tmp_path / "r.json").write_text(json.dumps(VALID_RESULTS))
    rows, failed, *_ = compare_files(tmp_path / "r.json", tmp_path / "cpu.json")
    assert rows[0][0] == "UNCHANGED" and failed is False


def _latency_result():
    from pytest_gpuperf.core.results import Result, Throughput
    from pytest_gpuperf.core.verdict import from_json

    r = Result("t.py::test_lat", None, "calls", 1.0, higher_is_better=False)
    r.throughput = Throughput("ms", 2.0, 1.99, 2.01)
    r.verdicts = {"latency": from_json({"status": "unchanged", "change": 0.001, "worse": 0.001}),
                  "latency_kernels": from_json({"status": "unchanged"}),
                  "peak_allocated": from_json({"status": "unchanged"})}  # fmt: skip
    return r


def test_a_latency_is_written_as_latency_and_an_older_files_throughput_read_as_one():
    """Before 2026-12-02 a latency was written under "throughput", its verdicts too: read back,
    this version names it latency; a result holding both names is refused."""
    from pytest_gpuperf.core.results import Result

    r = _latency_result()
    d = json.loads(json.dumps(r.to_dict()))
    assert "throughput" not in d and d["latency"]["unit"] == "ms"
    assert Result.from_dict(d) == r
    old = {k: v for k, v in d.items() if k != "latency"}
    old["throughput"] = d["latency"]
    old["verdicts"] = {"throughput": d["verdicts"]["latency"],
                       "throughput_kernels": d["verdicts"]["latency_kernels"],
                       "peak_allocated": d["verdicts"]["peak_allocated"]}  # fmt: skip
    back = Result.from_dict(old)
    assert back == r and list(back.verdicts) == ["latency", "latency_kernels", "peak_allocated"]
    assert read_results([old], "f")[0].verdicts == r.verdicts
    with pytest.raises(ValueError, match="holds both 'latency' and 'throughput'"):
        Result.from_dict({**d, "throughput": d["latency"]})
    tp = {**old, "higher_is_better": True}  # a throughput's names stay as they are
    assert list(Result.from_dict(tp).verdicts) == ["throughput", "throughput_kernels", "peak_allocated"]

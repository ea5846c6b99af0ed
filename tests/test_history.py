"""The nightly history's store (history/record.py, store.py, importer.py, run/history.py,
cli/history.py): a run given --gpuperf-history (or ini gpuperf_history) records itself as
one file, never overwriting one; the file validates against the shipped schema and reads
back as series; a bad file is one line naming the file and the field; past results files
and baseline sessions import once; `gpuperf history` prints the changes with their commit
range and bisect command, and writes them as JSON."""

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_gpuperf.cli.main import main as gpuperf_main
from pytest_gpuperf.history.changes import find_changes
from pytest_gpuperf.history.importer import HistoryImportError, import_files
from pytest_gpuperf.history.record import dumps, write_run
from pytest_gpuperf.history.store import HistoryError, read_history
from pytest_gpuperf.run.history import record_history

from .gateproject import FAST
from .historydata import commit, noisy, record, write_series
from .inputs import schema_validator

SPIN = "test_b.py::test_spin"


@pytest.fixture
def validator():
    return schema_validator("history")


@pytest.mark.filterwarnings("ignore:Not saving anything:pytest_benchmark.logger.PytestBenchmarkWarning")
def test_runs_given_a_history_record_themselves_and_import_adds_nothing_twice(project, validator):
    """Two saves (--gpuperf-history) and a compare (ini gpuperf_history): three files that
    validate, read back as three runs with the compare's verdicts and the rule that decided
    them; importing the compare's results file and the baseline adds none of them again."""
    for mode in ("save", "save"):
        r = project.runpytest(*FAST, f"--gpuperf-baseline={mode}", "--gpuperf-history=hist")
        r.assert_outcomes(passed=2)
        r.stdout.fnmatch_lines(["*gpuperf: history: recorded this run as */hist/*.json"])
    r = project.runpytest(*FAST, "--gpuperf-baseline=compare", "-o", "gpuperf_history=hist",
                          "--gpuperf-json=run.json")  # fmt: skip
    r.assert_outcomes(passed=2)
    paths = sorted((project.path / "hist").glob("*.json"))
    assert len(paths) == 3
    for p in paths:
        assert [e.message for e in validator.iter_errors(json.loads(p.read_text()))] == []
    hist = read_history(project.path / "hist")
    saved = [r.saved for r in hist.runs]  # (three runs in one second: in any order)
    assert sorted(saved) == [False, True, True]
    s = hist.series[("cpu", SPIN, "throughput")]
    assert list(s.runs) == [0, 1, 2] and s.unit == "tokens/s" and s.higher
    assert [x >= 0 for x in s.status] == [not x for x in saved]  # judged in the compare only
    compare = hist.runs[saved.index(False)].name
    last = json.loads((project.path / "hist" / compare).read_text())["figures"]
    i = last["test"].index(SPIN)
    assert last["verdict"][i] in ("unchanged", "inconclusive", "improved", "regressed")
    assert last["rule"][i] and last["stage"][i] == "stage 1"
    assert last["n"][i] > 0 and last["ci_low"][i] <= last["median"][i] <= last["ci_high"][i]
    written, skipped = import_files(project.path / "hist",
                                    [project.path / "run.json", project.path / "baselines" / "cpu.json"])  # fmt: skip
    assert (written, skipped) == ([], 3)  # the compare's run, the two saved sessions


def test_a_file_is_never_overwritten_and_no_temporary_is_left(tmp_path):
    rec = record(0, [("b.py::test_x", "throughput", 100.0, "GB/s", "higher", "bandwidth", ())])
    first = write_run(tmp_path, rec)
    before = first.read_bytes()
    second = write_run(tmp_path, copy.deepcopy(rec))
    assert first != second and second.name == first.name.replace(".json", "-2.json")
    assert first.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name])


def test_without_hard_links_a_file_is_still_never_overwritten(tmp_path, monkeypatch):
    rec = record(0, [("b.py::test_x", "throughput", 100.0, "GB/s", "higher", "bandwidth", ())])
    first = write_run(tmp_path, rec)
    before = first.read_bytes()

    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr("os.link", no_links)
    second = write_run(tmp_path, copy.deepcopy(rec))
    assert second.name == first.name.replace(".json", "-2.json")
    assert first.read_bytes() == before and second.read_bytes() == before
    assert len(list(tmp_path.iterdir())) == 2


def test_a_history_that_cannot_be_written_fails_the_run_with_a_line(tmp_path):
    blocker = tmp_path / "hist"
    blocker.write_text("a file, not a directory")
    config = SimpleNamespace(getoption=lambda name: "hist", getini=lambda name: None,
                             rootpath=tmp_path)  # fmt: skip
    summary = SimpleNamespace(date="2026-06-01T02:00:00+00:00", commit=None, dirty=None,
                              session_id="s1", profile="cpu", saved=False,
                              device={"kind": "cpu"}, results=[])  # fmt: skip
    notes = []
    assert record_history(config, summary, notes) is True
    assert notes == [f"gpuperf: NOT WRITTEN: --gpuperf-history {blocker}: File exists"]
    assert blocker.read_text() == "a file, not a directory"
    summary.baseline_path = str(tmp_path / "baselines" / "cpu.json")
    config.getoption = lambda name: "baselines"
    notes.clear()
    assert record_history(config, summary, notes) is True
    assert notes == [f"gpuperf: NOT WRITTEN: --gpuperf-history {tmp_path / 'baselines'}: is the "
                     "baseline directory; give the history a directory of its own"]  # fmt: skip
    assert not (tmp_path / "baselines").exists()
    notes.clear()
    none = SimpleNamespace(getoption=lambda name: None, getini=lambda name: "", rootpath=tmp_path)
    assert record_history(none, summary, notes) is False and notes == []


def _valid(tmp_path):
    rec = record(0, [("b.py::test_x", "throughput", 100.0, "GB/s", "higher", "bandwidth", ()),
                     ("b.py::test_y", "latency", 2.0, "s", "lower", "model", ())])  # fmt: skip
    return rec


BAD = [
    (lambda d: d.update(date="yesterday"), "'date' must be an ISO 8601 time, got 'yesterday'"),
    (lambda d: d["figures"]["median"].__setitem__(1, "fast"),
     "figures 'median'[1] (b.py::test_y latency): must be a finite number, got 'fast'"),
    (lambda d: d["figures"]["verdict"].__setitem__(0, "great"), "figures 'verdict'[0] (b.py::test_x throughput): must be null or one of"),
    (lambda d: d["figures"]["unit"].pop(), "figures 'unit' must be a list of 2 values (one a figure)"),
    (lambda d: d["figures"]["direction"].__setitem__(0, "up"), "figures 'direction'[0] (b.py::test_x throughput): must be higher or lower"),
    (lambda d: d.update(saved="yes"), "'saved' must be true or false"),
    (lambda d: d.update(card={"driver": 580}), "'card' must be an object of strings or nulls"),
    (lambda d: d.update(version=2), "'version' 2 is not 1"),
    (lambda d: d.update(restarts=[{"test": "b.py::test_x"}]),
     "'restarts' must be a list of {test, figure, note} strings"),
]


@pytest.mark.parametrize(("edit", "said"), BAD)
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(tmp_path, validator, edit, said):
    rec = _valid(tmp_path)
    assert list(validator.iter_errors(rec)) == []
    edit(rec)
    path = tmp_path / "run.json"
    path.write_text(dumps(rec))
    with pytest.raises(HistoryError) as info:
        read_history(tmp_path)
    assert str(info.value).startswith(f"history file {path}: {said}")
    assert "\n" not in str(info.value)
    if "must be a list of 2" not in said:  # a column's length is the reader's to check
        assert list(validator.iter_errors(rec)) != []  # the schema refuses it too


def test_not_json_and_not_a_history_are_named(tmp_path):
    (tmp_path / "a.json").write_text("{not json")
    with pytest.raises(HistoryError, match=r"a\.json: is not JSON"):
        read_history(tmp_path)
    (tmp_path / "a.json").write_text('{"schema": "pytest-gpuperf/results-1"}')
    with pytest.raises(HistoryError, match=r"a\.json: 'schema' is not 'pytest-gpuperf/history-run'"):
        read_history(tmp_path)


def test_an_old_results_file_without_a_date_is_refused_naming_it(tmp_path):
    old = Path(__file__).parent.parent / "docs" / "evidence" / "cpu-2026-11-30.json"
    with pytest.raises(HistoryImportError, match=r"cpu-2026-11-30\.json: 'date' is missing"):
        import_files(tmp_path / "hist", [old])
    assert not (tmp_path / "hist").exists()  # nothing written


def test_gpuperf_history_prints_the_step_with_its_range_and_bisect_command(tmp_path, capsys):
    hist = tmp_path / "hist"
    hist.mkdir()
    values = noisy(12, 0.005, 1) + [v * 0.94 for v in noisy(12, 0.005, 2)]
    write_series(hist, values, test="b.py::test_x[bf16]")
    out = tmp_path / "changes.json"
    assert gpuperf_main(["history", str(hist), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "gpuperf history: 24 runs, 1 series, 1 changes (newest first)" in text
    assert f"gpuperf bisect --good {commit(11)[:12]} --bad {commit(12)[:12]} -- 'b.py::test_x[bf16]'" in text
    data = json.loads(out.read_text())
    assert (data["runs"], data["series"], data["left_out"], data["verdicts"]) == (24, 1, [], [])
    (c,) = data["changes"]
    assert {k: c[k] for k in ("test", "figure", "profile", "kind", "direction")} == {
        "test": "b.py::test_x[bf16]", "figure": "throughput", "profile": "h200", "kind": "step",
        "direction": "slower"}  # fmt: skip
    assert c["last_good"]["commit"] == commit(11) and c["first_bad"]["commit"] == commit(12)
    assert c["first_bad"]["run"] == "night0012.json" and -0.07 < c["change"] < -0.05


def test_gpuperf_history_says_a_bad_file_in_one_line_and_exits_2(tmp_path, capsys):
    (tmp_path / "x.json").write_text("[]")
    assert gpuperf_main(["history", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpuperf history: history file ") and "\n" not in err
    assert gpuperf_main(["history", "import", str(tmp_path)]) == 2


def test_runs_read_oldest_first_whatever_their_file_names(tmp_path):
    """An imported run older than the runs already held sorts before them by its date, and
    each series' points follow (history/store.py's reordering)."""
    fig = ("b.py::test_x", "throughput")
    for name, night, value in (("a.json", 2, 30.0), ("b.json", 0, 10.0), ("c.json", 1, 20.0)):
        (tmp_path / name).write_text(dumps(record(night, [(*fig, value, "GB/s", "higher",
                                                           "bandwidth", ())])))  # fmt: skip
    (tmp_path / "d.json").write_text(dumps(record(3, [("b.py::test_y", "throughput", 5.0,
                                                       "GB/s", "higher", "bandwidth", ())])))  # fmt: skip
    hist = read_history(tmp_path)
    assert [r.name for r in hist.runs] == ["b.json", "c.json", "a.json", "d.json"]
    s = hist.series[("h200", *fig)]
    assert (list(s.runs), list(s.median)) == ([0, 1, 2], [10.0, 20.0, 30.0])
    assert list(hist.series[("h200", "b.py::test_y", "throughput")].runs) == [3]


def test_changes_json_inside_the_history_is_refused(tmp_path, capsys):
    assert gpuperf_main(["history", str(tmp_path), "--json", str(tmp_path / "c.json")]) == 2
    assert "where it would be read as a run" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


def test_compact_archives_a_month_a_file_and_the_history_reads_the_same(tmp_path, validator, capsys):
    """40 nights from June 1: the 30 of June into one archive, July's 10 left as they are;
    the series, its step and the schema's check unchanged; compacting again moves nothing,
    and a compaction cut short (the archive written, the run files not yet removed) is
    read once."""
    values = noisy(20, 0.005, 21) + [v * 0.95 for v in noisy(20, 0.005, 22)]
    write_series(tmp_path, values)
    before = read_history(tmp_path)
    copies = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name < "night0030"}
    assert gpuperf_main(["history", "compact", str(tmp_path), "--before", "2026-07-01"]) == 0
    assert "30 runs before 2026-07-01 archived into 1 files: 2026-06-archive.json" in capsys.readouterr().out
    assert len(list(tmp_path.iterdir())) == 11
    archive = json.loads((tmp_path / "2026-06-archive.json").read_text())
    assert [e.message for e in validator.iter_errors(archive)] == []
    after = read_history(tmp_path)
    key = ("h200", "b.py::test_x", "throughput")
    assert list(after.series[key].median) == list(before.series[key].median)
    assert [r.commit for r in after.runs] == [r.commit for r in before.runs]
    assert [(c.kind, c.last_good, c.first_bad) for c in find_changes(after).changes] == [
        (c.kind, c.last_good, c.first_bad) for c in find_changes(before).changes]  # fmt: skip
    assert gpuperf_main(["history", "compact", str(tmp_path), "--before", "2026-07-01"]) == 0
    assert "0 runs" in capsys.readouterr().out
    for name, data in copies.items():  # cut short: the run files back beside their archive
        (tmp_path / name).write_bytes(data)
    again = read_history(tmp_path)
    assert again.duplicates == 30 and list(again.series[key].median) == list(before.series[key].median)


def test_compact_needs_a_date(tmp_path, capsys):
    write_series(tmp_path, noisy(6, 0.005, 1))
    assert gpuperf_main(["history", "compact", str(tmp_path), "--before", "June"]) == 2
    assert "--before 'June': not an ISO 8601 date" in capsys.readouterr().err
    assert gpuperf_main(["history", "compact", str(tmp_path)]) == 2
    assert len(list(tmp_path.iterdir())) == 6

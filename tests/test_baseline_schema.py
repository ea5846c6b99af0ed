"""The baseline file's format (baseline/schema.py): validation, merging, hostile JSON."""

import copy
import json
import math

import pytest
from hypothesis import given

from pytest_gpuperf.baseline.schema import HISTORY, BaselineError, BaselineFile, merge
from pytest_gpuperf.baseline.store import load, save

from .reportdata import (
    GOOD,
    JSON,
    SETTINGS,
    VALID_BASELINE,
    as_bytes,
    baseline_json,
    entry,
    mutants,
    update,
)


def test_round_trip_and_history(tmp_path):
    path = tmp_path / "h200.json"
    assert load(path) is None
    for i in range(HISTORY + 3):
        save(path, "h200", update("t.py::a", 100.0 + i), now=f"n{i}")
    b = load(path)
    hist = b.entries["t.py::a"]["metrics"]["throughput"]["history"]
    assert [h["median"] for h in hist] == [100.0 + i for i in range(3, HISTORY + 3)]
    assert b.entries["t.py::a"]["metrics"]["throughput"]["median"] == 100.0 + HISTORY + 2
    assert b.profile == "h200" and b.updated == f"n{HISTORY + 2}"
    # each saved session keeps its interval, so a report can draw the history with it
    assert all(h["ci_low"] < h["median"] < h["ci_high"] for h in hist)


def test_a_history_interval_that_is_not_a_number_is_refused(tmp_path):
    path = tmp_path / "h200.json"
    save(path, "h200", update("t.py::a", 100.0), now="n")
    data = json.loads(path.read_text())
    data["entries"]["t.py::a"]["metrics"]["throughput"]["history"][0]["ci_low"] = "low"
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=r"history\[0\]: ci_low must be a number"):
        load(path)


def test_saving_a_subset_keeps_the_other_entries(tmp_path):
    path = tmp_path / "cpu.json"
    save(path, "cpu", update("t.py::a", 1.0) | update("t.py::b", 2.0), now="1")
    save(path, "cpu", update("t.py::a", 3.0), now="2")
    b = load(path)
    assert set(b.entries) == {"t.py::a", "t.py::b"}
    assert b.entries["t.py::b"]["metrics"]["throughput"]["median"] == 2.0


def test_a_unit_change_restarts_the_history(tmp_path):
    path = tmp_path / "cpu.json"
    save(path, "cpu", update("k", 1.0), now="1")
    u = update("k", 5.0)
    u["k"]["metrics"]["throughput"]["unit"] = "samples/s"
    save(path, "cpu", u, now="2")
    assert len(load(path).entries["k"]["metrics"]["throughput"]["history"]) == 1


def bad(**changes):
    data = json.loads(json.dumps(GOOD))
    m = data["entries"]["k"]["metrics"]["throughput"]
    for k, v in changes.items():
        if k in ("version", "schema", "entries", "profile"):
            data[k] = v
        else:
            m[k] = v
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "is empty (truncated?)"),
        ('{"schema": "pytest-gpuperf/baseline", "vers', "is not valid JSON (truncated or edited?)"),
        ("[1, 2]", "expected a JSON object"),
        (bad(schema="other"), "not a pytest-gpuperf baseline"),
        (bad(version=99), "schema version 99 is not supported"),
        (bad(entries=[]), "'entries' must be an object"),
        (bad(median=-4.0), "median is -4.0: must be >= 0"),
        (bad(median="fast"), "median must be a number"),
        (bad(history=[]), "'history' must be a non-empty list"),
        (bad(history=[{"median": -1}]), "history[0] median is -1"),
        (bad(direction="up"), "direction must be 'higher' or 'lower'"),
        (bad().replace('"median": 5.0,', '"median": NaN,', 1), "holds NaN, not a number"),
        (bad().replace('"median": 5.0,', '"median": Infinity,', 1), "holds Infinity"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(tmp_path, text, fragment):
    path = tmp_path / "h200.json"
    path.write_text(text)
    with pytest.raises(BaselineError) as info:
        load(path)
    assert str(path) in str(info.value) and fragment in str(info.value)
    # and saving onto it refuses, leaving the file exactly as it was
    with pytest.raises(BaselineError):
        save(path, "h200", update("x", 1.0), now="n")
    assert path.read_text() == text


def test_profile_mismatch_is_refused(tmp_path):
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(GOOD))
    with pytest.raises(BaselineError, match="belongs to profile 'h200', not 'a100-40gb'"):
        save(path, "a100-40gb", update("x", 1.0), now="n")


def test_merge_refuses_an_entry_from_another_device(tmp_path):
    path = tmp_path / "h200.json"
    save(path, "h200", {"k": entry("NVIDIA H200")}, now="1")
    before = path.read_bytes()
    with pytest.raises(BaselineError, match=r"entry 'k' was measured on another device \(gpu 'NVIDIA H200' in the file, 'cpu: X' now\)"):
        save(path, "h200", {"k": entry("cpu: X", 0.7)}, now="2")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["entries"]["k"].update(environment="oops"), "'environment' must be an object"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"].update(ci_low=200.0), "does not contain the median"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"].update(n="many"), "n must be a whole number >= 1, got 'many'"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"].update(unit=""), "unit must be a non-empty string"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"]["history"][0].update(date=5), "date and commit must be strings"),
        (lambda d: d["entries"]["k"].update(flags=[]), "'flags' must be an object"),
        (lambda d: d.update(version=True), "schema version True is not supported"),
        (lambda d: d.update(version=1.0), "schema version 1.0 is not supported"),
        (lambda d: d["entries"]["k"].update(flags={"launch_bound": 1}), "'flags' must be an object of true, false, null or names"),
        (lambda d: d["entries"].update({" ": d["entries"]["k"]}), "an entry's key is empty"),
    ],
)
def test_every_field_is_validated(tmp_path, mutate, message):
    data = baseline_json("cpu", {"k": entry()})
    mutate(data)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=f"baseline file {path}: .*{message}".replace("(", r"\(").replace(")", r"\)")):
        load(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema": 1' + "0" * 400 + "}", "401-digit integer: too large"),
        ('{"a": 1' + "0" * 5000 + "}", "5001-digit integer: too large"),
        ("[" * 100000 + "]" * 100000, "nested too deeply"),
        ('{"a": 1, "a": 2}', "holds the key 'a' twice"),
        ('{"a": 1e999}', "not a pytest-gpuperf baseline"),
    ],
)
def test_hostile_json_gets_one_clear_error(tmp_path, text, message):
    path = tmp_path / "cpu.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=message):
        load(path)


def test_merge_result_passes_the_loaders_checks(tmp_path):
    bad = entry()
    bad["metrics"]["throughput"]["median"] = -1.0
    with pytest.raises(BaselineError, match=r"median is -1\.0: must be >= 0"):
        merge(None, tmp_path / "cpu.json", "cpu", {"k": bad}, "now")


def check_loader(path, content):
    path.write_bytes(content)
    try:
        b = load(path)
    except BaselineError as exc:
        assert str(exc).startswith(f"baseline file {path}: ")
    else:
        assert isinstance(b, BaselineFile)
        for e in b.entries.values():  # what loads can be compared: every figure is usable
            for m in e["metrics"].values():
                assert all(math.isfinite(h["median"]) and h["median"] >= 0 for h in m["history"])
    assert path.read_bytes() == content


@SETTINGS
@given(doc=JSON)
def test_arbitrary_json_to_the_loader(tmp_path, doc):
    check_loader(tmp_path / "cpu.json", as_bytes(doc))


@SETTINGS
@given(doc=mutants(VALID_BASELINE))
def test_a_valid_baseline_with_one_value_replaced(tmp_path, doc):
    check_loader(tmp_path / "cpu.json", as_bytes(doc))


@SETTINGS
@given(doc=mutants(VALID_BASELINE))
def test_a_save_never_changes_a_file_it_cannot_read(tmp_path, doc):
    path = tmp_path / "cpu.json"
    content = as_bytes(doc)
    path.write_bytes(content)
    try:
        load(path)
    except BaselineError:
        update = copy.deepcopy(VALID_BASELINE["entries"]["t.py::a"])
        del update["metrics"]["throughput"]["history"]
        try:
            save(path, "cpu", {"t.py::a": update}, now="n")
        except BaselineError:
            pass
        else:
            raise AssertionError("a save merged into an unreadable file")
        assert path.read_bytes() == content


def test_an_emulated_run_is_saved_and_loaded_with_its_flags(tmp_path):
    """`--gpuperf-emulate a100-40gb` saves flags {"emulated": "a100-40gb"}: a name, not a
    boolean (a stricter flag check refused every emulated save; a review caught it)."""
    from pytest_gpuperf.baseline.schema import entries_to_save
    from pytest_gpuperf.core.results import Result, Throughput

    r = Result("t.py::a", "max_batch", "samples", 1.0, kind="recorded", backend="cuda", emulated="a100-40gb")
    r.throughput = Throughput("samples", 24.0, 24.0, 24.0)
    path = tmp_path / "h200@a100-40gb.json"
    save(path, "h200@a100-40gb", entries_to_save([r], {}, date="d0", commit=None), now="n0")
    assert load(path).entries["t.py::a::max_batch"]["flags"]["emulated"] == "a100-40gb"


def test_a_version_1_file_keeps_its_process_peaks_aside_and_the_step_peak_starts_afresh(tmp_path):
    """Version 1 saved the process's peak memory (it depended on which tests ran before: the
    H200's -52..-75% and +62% "changes"); version 2 saves the step's own. A version-1 file
    is read with that figure moved aside, informational, nothing dropped, and the next save
    writes version 2 with the step's peak as a new history."""
    from pytest_gpuperf.baseline.schema import MIGRATED_PEAK, VERSION

    v1 = {"schema": "pytest-gpuperf/baseline", "version": 1, "profile": "h200",
          "updated": "2026-11-30", "entries": {"t.py::a": {"environment": {"gpu": "G"}, "metrics": {
              "throughput": {"unit": "tokens/s", "direction": "higher", "median": 100.0,
                             "history": [{"median": 100.0, "date": "d0"}]},
              "peak_reserved": {"unit": "bytes", "direction": "lower", "median": 9e9,
                                "noise_class": "memory",
                                "history": [{"median": 9e9, "date": "d0"},
                                            {"median": 4e9, "date": "d1"}]}}}}}  # fmt: skip
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(v1))
    metrics = load(path).entries["t.py::a"]["metrics"]
    assert "peak_reserved" not in metrics
    assert metrics[MIGRATED_PEAK]["gate"] is False
    assert [h["median"] for h in metrics[MIGRATED_PEAK]["history"]] == [9e9, 4e9]
    new = update("t.py::a", 101.0)
    new["t.py::a"]["metrics"]["peak_allocated"] = {
        "unit": "bytes", "direction": "lower", "median": 2e9, "ci_low": 2e9, "ci_high": 2e9,
        "n": 1, "noise_class": "memory"}  # fmt: skip
    save(path, "h200", new, now="n1")
    data = json.loads(path.read_text())
    assert data["version"] == VERSION == 2
    m = data["entries"]["t.py::a"]["metrics"]
    assert [h["median"] for h in m["peak_allocated"]["history"]] == [2e9]
    assert [h["median"] for h in m[MIGRATED_PEAK]["history"]] == [9e9, 4e9]
    assert len(m["throughput"]["history"]) == 2


def test_the_shipped_h200_baseline_is_version_2_with_its_process_peaks_aside():
    from pathlib import Path

    from pytest_gpuperf.baseline.schema import MIGRATED_PEAK

    b = load(Path(__file__).parent.parent / "baselines" / "h200.json")
    peaks = [e["metrics"].get(MIGRATED_PEAK) for e in b.entries.values()]
    assert sum(p is not None for p in peaks) == 49
    assert not any("peak_reserved" in e["metrics"] for e in b.entries.values())


def _file(entries):
    return json.dumps({"schema": "pytest-gpuperf/baseline", "version": 2, "profile": "h200",
                       "entries": entries})  # fmt: skip


def _old_latency(unit="ms", dates=("d0", "d1", "d2")):
    """A latency's figures as versions before 2026-12-02 saved them: under "throughput"."""
    hist = [{"median": 2.0 + i / 100, "date": d, "session": f"s{i}"} for i, d in enumerate(dates)]
    m = {"unit": unit, "direction": "lower", "median": hist[-1]["median"], "noise_class": "compute",
         "history": hist}  # fmt: skip
    return m, {**m, "unit": f"{unit} x GHz", "noise_class": "per-clock"}


def test_a_latency_saved_as_throughput_is_read_as_latency_with_its_twins_and_history(tmp_path):
    lat, clock = _old_latency()
    peak = {"unit": "bytes", "direction": "lower", "median": 8.0, "noise_class": "memory",
            "history": [{"median": 8.0, "date": "d2"}]}  # fmt: skip
    tp = {"unit": "tokens/s", "direction": "higher", "median": 9.0, "history": [{"median": 9.0}]}
    path = tmp_path / "h200.json"
    path.write_text(_file({
        "t.py::lat": {"environment": {}, "metrics": {"throughput": lat, "throughput_per_clock": clock,
                                                     "throughput_kernels": lat, "peak_allocated": peak}},
        "t.py::tp": {"environment": {}, "metrics": {"throughput": tp}}}))  # fmt: skip
    entries = load(path).entries
    assert entries["t.py::lat"]["metrics"] == {"latency": lat, "latency_per_clock": clock,
                                               "latency_kernels": lat, "peak_allocated": peak}  # fmt: skip
    assert entries["t.py::tp"]["metrics"] == {"throughput": tp}  # a throughput keeps its name
    assert "throughput" in json.loads(path.read_text())["entries"]["t.py::lat"]["metrics"]  # untouched


def test_a_latency_under_both_names_keeps_every_session_of_both(tmp_path):
    """An older version saved a latency as "throughput" into a file this version had saved
    it in as "latency": read with the two histories merged, in date order; of another unit,
    the old one is kept as it is, nothing dropped."""
    old, _ = _old_latency(dates=("2026-12-03", "2026-12-04", "2026-12-05"))
    new, _ = _old_latency(dates=("2026-12-01", "2026-12-02"))
    path = tmp_path / "h200.json"
    path.write_text(_file({"t.py::lat": {"environment": {}, "metrics": {
        "latency": new, "throughput": old}}}))  # fmt: skip
    (m,) = load(path).entries["t.py::lat"]["metrics"].values()
    assert [h["date"] for h in m["history"]] == [f"2026-12-0{i}" for i in range(1, 6)]
    assert m["median"] == old["median"]  # the summary of the one saved last
    other, _ = _old_latency(unit="us")
    path.write_text(_file({"t.py::lat": {"environment": {}, "metrics": {
        "throughput": other, "latency": new}}}))  # fmt: skip
    assert load(path).entries["t.py::lat"]["metrics"] == {"throughput": other, "latency": new}


def test_a_json_error_names_its_line_and_column_in_plain_words():
    """Issue 64: "Unterminated string starting at at line 97" (a doubled "at", no column)."""
    from pytest_gpuperf.baseline.store import parse_json

    text = '{\n  "schema": "pytest-gpuperf/baseline",\n  "vers'
    with pytest.raises(ValueError) as err:
        parse_json(text)
    assert str(err.value) == ("is not valid JSON (truncated or edited?): Unterminated string "
                              "starting at line 3, column 3")  # fmt: skip
    with pytest.raises(ValueError, match=r": Expecting property name .* at line 1, column 9$"):
        parse_json('{"a": 1,')

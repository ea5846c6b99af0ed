"""Baseline files: round trips, merging, every bad file, concurrent saves."""

import json
import multiprocessing
import os
import stat

import pytest

from pytest_gpuperf.baseline.schema import HISTORY, BaselineError
from pytest_gpuperf.baseline.store import load, save


def metric(median, unit="tokens/s", direction="higher"):
    return {
        "unit": unit,
        "direction": direction,
        "median": median,
        "ci_low": median * 0.99,
        "ci_high": median * 1.01,
        "n": 10,
    }


def update(key, median):
    return {
        key: {
            "environment": {"gpu": "G"},
            "date": "d",
            "commit": None,
            "flags": {},
            "metrics": {"throughput": metric(median)},
        }
    }


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


GOOD = {
    "schema": "pytest-gpuperf/baseline",
    "version": 1,
    "profile": "h200",
    "entries": {"k": {"metrics": {"throughput": {**metric(5.0), "history": [{"median": 5.0}]}}}},
}


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


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(GOOD))
    path.chmod(0)
    with pytest.raises(BaselineError, match="cannot be read"):
        load(path)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_a_directory_in_place_of_the_file(tmp_path):
    (tmp_path / "h200.json").mkdir()
    with pytest.raises(BaselineError, match="is not a regular file"):
        load(tmp_path / "h200.json")


def test_profile_mismatch_is_refused(tmp_path):
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(GOOD))
    with pytest.raises(BaselineError, match="belongs to profile 'h200', not 'a100-40gb'"):
        save(path, "a100-40gb", update("x", 1.0), now="n")


def _saver(args):
    path, worker = args
    for i in range(5):
        save(path, "cpu", update(f"w{worker}::{i}", float(worker * 10 + i)), now=f"{worker}-{i}")


def test_concurrent_saves_from_processes_lose_nothing(tmp_path):
    path = tmp_path / "cpu.json"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.map(_saver, [(path, w) for w in range(4)])
    b = load(path)
    assert len(b.entries) == 20
    assert b.entries["w3::4"]["metrics"]["throughput"]["median"] == 34.0
    assert not list(tmp_path.glob(".cpu.json.*.tmp"))  # no temporary files left behind

"""Arbitrary JSON, and valid files with one value replaced by arbitrary JSON, fed to the
baseline loader and to `gpuperf compare`: each gives a usable result or one clear error
naming the file, never another exception, and no file's bytes change."""

import copy
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gpuperf.__main__ import InputError, compare_files
from pytest_gpuperf.baseline.schema import BaselineError, BaselineFile
from pytest_gpuperf.baseline.store import load, save

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)

VALID_BASELINE = {
    "schema": "pytest-gpuperf/baseline",
    "version": 1,
    "profile": "cpu",
    "updated": "2026-11-30",
    "entries": {
        "t.py::a": {
            "environment": {"gpu": "cpu: X", "mig_profile": None, "emulated": None},
            "date": "2026-11-30",
            "commit": None,
            "flags": {"launch_bound": None},
            "metrics": {
                "throughput": {
                    "unit": "tokens/s",
                    "direction": "higher",
                    "median": 100.0,
                    "ci_low": 99.0,
                    "ci_high": 101.0,
                    "n": 10,
                    "history": [{"median": 100.0, "date": "d", "commit": None}, {"median": 100.01, "date": "e", "commit": None}, {"median": 99.99, "date": "f", "commit": None}],
                }
            },
        }
    },
}

VALID_RESULTS = {
    "schema": "pytest-gpuperf/results-1",
    "device": {"gpus": [], "cpu_model": "X", "packages": {}},
    "describe": "cpu",
    "profile": "cpu",
    "baseline": None,
    "results": [
        {
            "nodeid": "t.py::a",
            "metric": None,
            "unit": "tokens",
            "work_per_call": 64.0,
            "kind": "measured",
            "config": {"tolerance": 0.03},
            "time": {
                "n": 10, "median": 0.64, "ci_low": 0.63, "ci_high": 0.65, "confidence": 0.95,
                "ci_exact": True, "q1": 0.63, "q3": 0.65, "mean": 0.64, "stdev": 0.01,
                "min": 0.62, "max": 0.66,
            },
            "throughput": {"unit": "tokens/s", "median": 100.0, "ci_low": 98.5, "ci_high": 101.6},
        }
    ],
}


def paths(doc, prefix=()):
    """Every place in a JSON document where a value sits."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, (*prefix, i))


def replaced(doc, path, value):
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def mutants(valid):
    places = list(paths(valid))
    return st.tuples(st.sampled_from(places), JSON).map(lambda pv: replaced(valid, *pv))


def as_bytes(doc):
    return json.dumps(doc, allow_nan=True).encode()


SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])


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


def check_compare(tmp_path, results_doc, baseline_doc):
    results = tmp_path / "r.json"
    base = tmp_path / "cpu.json"
    results.write_bytes(as_bytes(results_doc))
    base.write_bytes(as_bytes(baseline_doc))
    before = (results.read_bytes(), base.read_bytes())
    try:
        rows, failed, used, _, _ = compare_files(results, base)
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
    rows, failed, _, _, _ = compare_files(tmp_path / "r.json", tmp_path / "cpu.json")
    assert rows[0][0] == "UNCHANGED" and failed is False

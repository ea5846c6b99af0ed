"""The JSON Schema files shipped in the package (pytest_gpuperf/schemas/; docs/baselines.md,
"JSON Schema"): the baseline file and the results file. What the plugin writes validates
(a real run on the CPU, save then compare, an accepted change, an emulated baseline), so do
the shipped baselines and the files the tests replay; and each schema refuses what the
plugin's own reader refuses (a schema that accepts anything would pass every other test
here). Needs the `jsonschema` library (the [test] extra): skipped, naming it, where it is
absent; under CI it fails (tests/inputs.py)."""

import copy
import json
from dataclasses import fields
from importlib.resources import files

import pytest

from pytest_gpuperf.baseline import schema as baseline_format
from pytest_gpuperf.baseline.schema import BaselineError, entries_to_save
from pytest_gpuperf.baseline.store import load, save
from pytest_gpuperf.cli.main import main as gpuperf_main
from pytest_gpuperf.core.figures import CLASSES
from pytest_gpuperf.core.results import Result, Throughput
from pytest_gpuperf.core.stats import Summary
from pytest_gpuperf.judging.verdict import SEVERITY
from pytest_gpuperf.outputs.runfile import ResultsFileError, read_run, summary_from_payload
from pytest_gpuperf.outputs.summary import SCHEMA as RESULTS_SCHEMA

from .gateproject import FAST
from .inputs import ROOT, schema_validator

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SPIN = "test_b.py::test_spin"

MORE = """
def test_latency(gpu_benchmark):
    from vclock import spin
    gpu_benchmark.latency(lambda: spin(0.001))

def test_recorded(gpu_benchmark):
    gpu_benchmark.record("max_batch", 24, "samples")
    gpu_benchmark.record("compile_s", 1.5, "s", gate=False)
"""


def schema(name):
    return json.loads((files("pytest_gpuperf") / "schemas" / f"{name}.schema.json").read_text())


@pytest.fixture
def validator():
    """validator("baseline" or "results"): a draft 2020-12 validator of the shipped schema."""
    return schema_validator


def errors(v, data):
    return [f"{e.json_path}: {e.message}"[:200] for e in v.iter_errors(data)]


@pytest.mark.parametrize(
    ("name", "const"), [("baseline", baseline_format.SCHEMA), ("results", RESULTS_SCHEMA)]
)
def test_each_schema_is_draft_2020_12_and_names_its_format_and_version(validator, name, const):
    validator(name)  # a valid draft 2020-12 schema
    s = schema(name)
    assert s["$schema"] == DRAFT
    assert s["$id"] and s["title"].strip() and len(s["description"]) > 80
    assert s["properties"]["schema"]["const"] == const
    assert "schema" in s["required"]
    if name == "baseline":  # the version written, and 1, which the loader migrates
        assert s["properties"]["version"]["enum"] == [1, baseline_format.VERSION]
        assert "version" in s["required"]


def test_the_schemas_know_every_field_and_name_the_plugin_knows():
    """A field added to a result, a noise class or a verdict status without its schema
    fails here, not in a user's validation."""
    b, r = schema("baseline")["$defs"], schema("results")["$defs"]
    assert b["metric"]["properties"]["noise_class"]["enum"] == list(CLASSES)
    assert r["verdict"]["properties"]["status"]["enum"] == list(SEVERITY)
    assert set(r["result"]["properties"]) == {f.name for f in fields(Result)} | {"key", "remeasured", "latency"}
    assert set(r["summary"]["properties"]) == set(r["summary"]["required"]) == {f.name for f in fields(Summary)}
    assert set(r["throughput"]["properties"]) == {f.name for f in fields(Throughput)}
    assert r["result"]["additionalProperties"] is False  # the reader refuses unknown fields


def test_the_shipped_baselines_validate(validator):
    v = validator("baseline")
    shipped = sorted((ROOT / "baselines").glob("*.json"))
    assert shipped
    for path in shipped:
        assert load(path) is not None
        assert errors(v, json.loads(path.read_text())) == [], path


OTHER_FORMATS = (".golden.verdicts.json",)  # tests/test_replay.py's verdict goldens


def test_the_json_files_the_tests_replay_validate(validator):
    """Every JSON file under tests/ is a baseline or a results file (both validated, and
    read by the plugin), or a verdict golden of tests/test_replay.py: none is left out
    unnoticed."""
    baseline, results = validator("baseline"), validator("results")
    seen = {"baseline": 0, "results": 0}
    for path in sorted((ROOT / "tests").rglob("*.json")):
        data = json.loads(path.read_text())
        if path.name.endswith(OTHER_FORMATS):
            continue
        if data.get("schema") == baseline_format.SCHEMA:
            assert errors(baseline, data) == [], path
            load(path)
            seen["baseline"] += 1
        else:
            assert data.get("schema") == RESULTS_SCHEMA, f"{path}: neither format"
            assert errors(results, data) == [], path
            read_run(path)
            seen["results"] += 1
    assert seen["baseline"] >= 3 and seen["results"] >= 3, seen


@pytest.mark.filterwarnings("ignore:Not saving anything:pytest_benchmark.logger.PytestBenchmarkWarning")
def test_a_real_cpu_run_save_compare_and_accept_writes_valid_files(project, validator, monkeypatch):
    """A pytester run on the CPU (throughput, latency, recorded and informational figures)
    saves, then compares (verdicts in its results), then `gpuperf baseline accept` writes
    a restart record: the baseline, the results files and the `gpuperf` section of
    pytest-benchmark's JSON validate at each step."""
    baseline, results = validator("baseline"), validator("results")
    project.makepyfile(test_c=MORE)
    path = project.path / "baselines" / "cpu.json"
    for name, mode in (("save.json", "save"), ("compare.json", "compare")):
        r = project.runpytest(*FAST, f"--gpuperf-baseline={mode}", f"--gpuperf-json={name}", f"--benchmark-json=pb-{name}")
        r.assert_outcomes(passed=4)
        run = json.loads((project.path / name).read_text())
        assert errors(results, run) == [], name
        assert errors(results, json.loads((project.path / f"pb-{name}").read_text())["gpuperf"]) == []
        assert errors(baseline, json.loads(path.read_text())) == [], f"after {name}"
    assert any(x["verdicts"] for x in run["results"])  # the compare run's verdicts validated
    assert any(x["unit"] == "ms" for x in json.loads(path.read_text())["entries"].values() for x in x["metrics"].values())

    monkeypatch.setenv("USER", "alice")
    accepted = gpuperf_main(["baseline", "accept", SPIN, "--from", "compare.json", "--reason", "new batch", "--force"])
    assert accepted == 0
    data = json.loads(path.read_text())
    assert data["entries"][SPIN]["metrics"]["throughput"]["history"][-1]["restart"]["reason"] == "new batch"
    assert errors(baseline, data) == []


def test_an_emulated_baseline_with_flagged_sessions_and_no_commit_validates(tmp_path, validator):
    """`<profile>@<card>.json`: environment and flags name the emulated profile (a string
    where other flags are booleans); saved outside git, every commit is null; a throttled
    session carries its flags in the history."""
    r = Result("t.py::a", "max_batch", "samples", 1.0, kind="recorded", backend="cuda", emulated="a100-40gb", gpu_uuid="GPU-1")
    r.throughput = Throughput("samples", 24.0, 24.0, 24.0)
    m = Result("t.py::b", None, "tokens", 64.0, backend="cuda", emulated="a100-40gb", throttled=True, launch_bound=False)
    m.throughput = Throughput("tokens/s", 900.0, 890.0, 910.0)
    m.time = Summary(9, 0.07, 0.069, 0.071, 0.95, True, 0.069, 0.071, 0.07, 0.001, 0.068, 0.072)
    path = tmp_path / "h200@a100-40gb.json"
    env = {"gpu": "NVIDIA H200", "emulated": "a100-40gb", "memory": 150754820096}
    for day in ("d0", "d1"):
        updates = entries_to_save([r, m], env, date=day, commit=None, session=f"s-{day}", host="runner-1")
        save(path, "h200@a100-40gb", updates, now=day)
    data = json.loads(path.read_text())
    entry = data["entries"]["t.py::b"]
    assert entry["flags"]["emulated"] == "a100-40gb" and entry["flags"]["throttled"] is True
    assert entry["metrics"]["throughput"]["history"][0]["flags"] == ["throttled"]
    assert {h["commit"] for h in entry["metrics"]["throughput"]["history"]} == {None}
    assert errors(validator("baseline"), data) == []


def _valid_baseline():
    return {
        "schema": "pytest-gpuperf/baseline", "version": 2, "profile": "cpu", "updated": "2026-12-01T00:00:00+00:00",
        "comment": "a team's own key: kept, allowed",
        "entries": {"t.py::test_a": {
            "environment": {"gpu": "cpu: AMD EPYC", "memory": 25275990016, "cuda": None},
            "date": "2026-12-01", "commit": None, "owner": "alice",
            "flags": {"launch_bound": False, "throttled": None, "emulated": None},
            "duration_s": 1.5,
            "metrics": {"throughput": {
                "unit": "tokens/s", "direction": "higher", "median": 10.0, "ci_low": 9.0, "ci_high": 11.0, "n": 5,
                "noise_class": "model", "gate": True,
                "history": [
                    {"median": 10.0, "date": "2026-11-30", "commit": "0123abcd", "session": "s1", "ci_low": None},
                    {"median": 10.0, "date": "2026-12-01", "commit": None, "flags": ["busy-host"],
                     "restart": {"date": "2026-12-01", "reason": "bigger batch", "commit": None, "who": None, "forced": ["busy-host"]}},
                ]}},
        }},
    }  # fmt: skip


def _metric(d):
    return d["entries"]["t.py::test_a"]["metrics"]["throughput"]


def _edit(change):
    def apply(d):
        change(d)
        return d

    return apply


BAD_BASELINES = {
    "a history median that is a string": _edit(lambda d: _metric(d)["history"][0].update(median="fast")),
    "a history item that is no object": _edit(lambda d: _metric(d)["history"].append(10.0)),
    "history not a list": _edit(lambda d: _metric(d).update(history={"median": 1.0})),
    "an empty history": _edit(lambda d: _metric(d).update(history=[])),
    "a history commit that is a number": _edit(lambda d: _metric(d)["history"][0].update(commit=123)),
    "history flags that are a string": _edit(lambda d: _metric(d)["history"][0].update(flags="throttled")),
    "no entries": _edit(lambda d: d.pop("entries")),
    "no profile": _edit(lambda d: d.pop("profile")),
    "a metric without its unit": _edit(lambda d: _metric(d).pop("unit")),
    "a history item without its median": _edit(lambda d: _metric(d)["history"][0].pop("median")),
    "a restart without its reason": _edit(lambda d: _metric(d)["history"][1]["restart"].pop("reason")),
    "version 3": _edit(lambda d: d.update(version=3)),
    "version as text": _edit(lambda d: d.update(version="2")),
    "another schema": _edit(lambda d: d.update(schema="pytest-gpuperf/results-1")),
    "a direction 'up'": _edit(lambda d: _metric(d).update(direction="up")),
    "a negative median": _edit(lambda d: _metric(d).update(median=-1.0)),
    "n of zero": _edit(lambda d: _metric(d).update(n=0)),
    "an unknown noise class": _edit(lambda d: _metric(d).update(noise_class="fast")),
    "a boolean environment value": _edit(lambda d: d["entries"]["t.py::test_a"]["environment"].update(gpu=True)),
    "a flag that is a number": _edit(lambda d: d["entries"]["t.py::test_a"]["flags"].update(throttled=1)),
    "an empty entry key": _edit(lambda d: d["entries"].update({" ": d["entries"]["t.py::test_a"]})),
}


def test_the_valid_baseline_the_negative_tests_start_from_is_valid(validator, tmp_path):
    assert errors(validator("baseline"), _valid_baseline()) == []
    baseline_format.validate(tmp_path / "cpu.json", _valid_baseline())


@pytest.mark.parametrize("bad", list(BAD_BASELINES))
def test_the_baseline_schema_refuses_what_the_loader_refuses(validator, tmp_path, bad):
    data = BAD_BASELINES[bad](copy.deepcopy(_valid_baseline()))
    assert errors(validator("baseline"), data), f"the schema accepted {bad}"
    with pytest.raises(BaselineError):
        baseline_format.validate(tmp_path / "cpu.json", data)


def _valid_results():
    return json.loads((ROOT / "tests" / "data" / "replay" / "cpu-run.json").read_text())


BAD_RESULTS = {
    "another version": _edit(lambda d: d.update(schema="pytest-gpuperf/results-2")),
    "no results": _edit(lambda d: d.pop("results")),
    "a result with a field the reader does not know": _edit(lambda d: d["results"][0].update(speed=1.0)),
    "a result without its unit": _edit(lambda d: d["results"][0].pop("unit")),
    "samples that are text": _edit(lambda d: d["results"][0].update(samples=["fast"])),
    "a verdict status nobody gives": _edit(lambda d: d["results"][0]["verdicts"]["throughput"].update(status="fine")),
    "an outcome 'crashed'": _edit(lambda d: d["results"][0].update(outcome="crashed")),
    "a time summary without its median": _edit(lambda d: d["results"][0]["time"].pop("median")),
    "a confidence of 99": _edit(lambda d: d.update(confidence=99)),
    "a tolerance of 3 (not a fraction)": _edit(lambda d: d["results"][0]["config"].update(tolerance=3)),
    "a result with both a throughput and a latency": _edit(
        lambda d: d["results"][0].update(latency=d["results"][0]["throughput"])),
}


@pytest.mark.parametrize("bad", list(BAD_RESULTS))
def test_the_results_schema_refuses_what_the_reader_refuses(validator, bad):
    assert errors(validator("results"), _valid_results()) == []
    data = BAD_RESULTS[bad](_valid_results())
    assert errors(validator("results"), data), f"the schema accepted {bad}"
    with pytest.raises(ResultsFileError):
        summary_from_payload(data, "results file x.json")


@pytest.mark.parametrize("field", ["xdist_workers", "sessions_needed"])
def test_a_count_written_with_a_fraction_is_the_readers_to_refuse(validator, field):
    """JSON Schema's integer admits 2.0, a number with no fraction part; the reader refuses
    a count so written, and the schema's description says that it does."""
    data = _valid_results()
    if field == "xdist_workers":
        data["xdist_workers"] = 2.0
    else:
        data["results"][0]["verdicts"]["throughput"]["sessions_needed"] = 2.0
    assert errors(validator("results"), data) == []
    with pytest.raises(ResultsFileError, match=field):
        summary_from_payload(data, "results file x.json")
    assert f"{field} " in schema("results")["description"] and "2.0" in schema("results")["description"]

"""The gpuperf command line (__main__.py): `gpuperf compare`'s inputs, exit codes and verdicts."""

import json
import subprocess
import sys

import pytest

from pytest_gpuperf.cli.main import main as gpuperf_main

from .gateproject import BENCH, FAST, saved
from .reportdata import baseline_json, entry


def run_compare(*args):
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", *map(str, args)],
        capture_output=True,
        text=True,
    )


@pytest.fixture
def cpu_run(project):
    """A saved CPU baseline and a results file of a run compared against it."""
    saved(project, times=1)
    project.runpytest(*FAST, "--gpuperf-json=run.json").assert_outcomes(passed=2)
    return project.path / "run.json", project.path / "baselines" / "cpu.json"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"results": [{"foo": 1}], "device": {}}', "results[0]: result has no 'nodeid' string"),
        (b'{"results": 5, "device": {}}', "'results' must be a list"),
        (b'{"results": [], "device": {}, "profile": "cpu"}', "the run has no results to compare"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
        (b'{"results": [NaN], "device": {}}', "holds NaN, not a number"),
        (b"[[[[" * 20000, "nested too deeply"),
        (b'{"results": [], "results": [], "device": {}}', "holds the key 'results' twice"),
        (b'{"a": 1' + b"0" * 5000 + b"}", "5001-digit integer: too large"),
    ],
)
def test_compare_rejects_malformed_results_with_exit_2(tmp_path, cpu_run, content, message):
    _, base = cpu_run
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    r = run_compare(bad, "--baseline", base)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_compare_rejects_nan_figures_in_a_result(tmp_path, cpu_run):
    run, base = cpu_run
    data = json.loads(run.read_text())
    data["results"][0]["throughput"]["median"] = None  # json_safe's NaN
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(data))
    r = run_compare(bad, "--baseline", base)
    assert r.returncode == 2 and "results[0]: result 'test_b.py::test_spin' throughput: median must be float, got None" in r.stderr


def test_compare_refuses_a_baseline_of_another_profile(tmp_path, cpu_run):
    run, _ = cpu_run
    other = tmp_path / "h200.json"
    other.write_text(json.dumps(baseline_json("h200", {"test_b.py::test_spin": entry("NVIDIA H200")})))
    r = run_compare(run, "--baseline", other)
    assert r.returncode == 2
    assert "belongs to profile 'h200', and the run" in r.stderr and "measured as profile 'cpu'" in r.stderr


def test_compare_with_no_baseline_file_says_how_to_save_one(tmp_path, cpu_run):
    run, _ = cpu_run
    r = run_compare(run, "--baseline", tmp_path / "none.json")
    assert r.returncode == 2
    assert (
        f"no baseline file {tmp_path / 'none.json'}: save one with pytest "
        "--gpuperf-baseline=save (on the GPU the run used)"
    ) in r.stderr


def test_compare_help_lists_the_exit_codes():
    r = run_compare("--help")
    assert r.returncode == 0
    assert "exit codes:" in r.stdout and "1  a performance regression" in r.stdout
    assert "2  bad input" in r.stdout


def test_compare_uses_the_baseline_the_run_recorded_and_names_it(tmp_path, cpu_run, monkeypatch):
    run, base = cpu_run
    monkeypatch.chdir(tmp_path)  # no ./baselines here: the recorded path must be used
    r = run_compare(run)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"baseline: {base}\n")


def test_pytest_and_compare_give_the_same_verdicts(project, monkeypatch):
    """The same results through the pytest session and through `gpuperf compare`: a
    marker tolerance of 0.9 holds offline too, and an out-of-memory result where the
    baseline has figures is FAILED in both."""
    saved(project, times=2)
    project.makepyfile(
        test_b=BENCH.replace(
            "def test_spin(gpu_benchmark):",
            "import pytest\n\n@pytest.mark.gpuperf(tolerance=0.9)\ndef test_spin(gpu_benchmark):",
        ).replace(
            'gpu_benchmark(lambda: spin(0.001), work=1, unit="samples")',
            "def work():\n        if os.environ.get('OOM'):\n            raise RuntimeError('CUDA out of memory (simulated)')\n"
            "        spin(0.001)\n"
            '    gpu_benchmark(work, work=1, unit="samples", on_oom="record")',
        )
    )
    monkeypatch.setenv("SLOW", "0.5")
    monkeypatch.setenv("OOM", "1")
    result = project.runpytest(*FAST, "--gpuperf-json=now.json")
    result.assert_outcomes(passed=2, failed=1)  # the gate's failure, apart from the tests
    result.stdout.fnmatch_lines(["PERFORMANCE REGRESSION test_b.py::test_other throughput: no result now*"])
    data = json.loads((project.path / "now.json").read_text())
    assert 0.99 <= data["confidence"] < 1  # compare judges the same run at the same confidence
    in_pytest = {r["key"]: {m: v["status"] for m, v in r["verdicts"].items()} for r in data["results"]}
    assert in_pytest == {
        "test_b.py::test_spin": {"throughput": "unchanged"},
        "test_b.py::test_other": {"throughput": "failed"},
    }
    r = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", "now.json"],
        capture_output=True, text=True, cwd=project.path,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    offline = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in {"UNCHANGED", "FAILED", "REGRESSED", "INCONCLUSIVE", "NEW"}:
            offline[parts[1]] = {parts[2]: parts[0].lower()}
    assert offline == in_pytest


def test_main_is_importable_without_running(capsys):
    assert gpuperf_main(["compare", "/nonexistent/r.json"]) == 2
    assert "results file /nonexistent/r.json: does not exist" in capsys.readouterr().err


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


def test_compare_command_sets_the_exit_code(project, monkeypatch):
    saved(project, times=2)
    project.runpytest(*FAST, "--gpuperf-json=same.json")
    monkeypatch.setenv("SLOW", "0.5")
    project.runpytest(*FAST, "--gpuperf-json=slow.json", "--gpuperf-warn-only")
    base = project.path / "baselines" / "cpu.json"

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "pytest_gpuperf", "compare", *args],
            capture_output=True,
            text=True,
            cwd=project.path,
        )

    ok = cli("same.json", "--baseline", str(base))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "each metric judged at 99.500% confidence" in ok.stdout  # as pytest said it
    bad = cli("slow.json", "--baseline", str(base))
    assert bad.returncode == 1 and "REGRESSED" in bad.stdout
    assert cli("slow.json", "--warn-only").returncode == 0  # default: baselines/<profile>.json
    missing = cli("nope.json")
    assert missing.returncode == 2 and "results file nope.json: does not exist" in missing.stderr
    (project.path / "junk.json").write_text("{}")
    junk = cli("junk.json")
    assert junk.returncode == 2 and "holds no gpuperf results" in junk.stderr

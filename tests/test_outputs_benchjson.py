"""The pytest-benchmark JSON output (outputs/benchjson.py), read by pytest-benchmark compare."""

import json

from .gateproject import FAST


def test_pytest_benchmark_compare_lists_gpu_benchmark_results(project):
    import subprocess
    import sys

    project.runpytest(*FAST, "--benchmark-json=run.json").assert_outcomes(passed=2)
    data = json.loads((project.path / "run.json").read_text())
    assert {b["fullname"] for b in data["benchmarks"]} == {"test_b.py::test_spin (gpuperf)", "test_b.py::test_other (gpuperf)"}
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_benchmark", "compare", str(project.path / "run.json")],
        capture_output=True, text=True, cwd=project.path,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "test_spin" in listed.stdout and "test_other" in listed.stdout


def test_a_file_another_process_wrote_during_the_run_is_written_over(project):
    """A --benchmark-json file written since the run began, with a "gpuperf" section, was
    taken for the run's own (pytest-benchmark's, through pytest_benchmark_update_json) and
    left as it was: a fresh process's or another run's file hid this run's results."""
    project.makeconftest(
        project.path.joinpath("conftest.py").read_text()
        + "\nimport json\n\ndef pytest_sessionstart(session):\n"
        + "    with open('run.json', 'w') as fh:\n"
        + "        json.dump({'gpuperf': {'session_id': 'other', 'results': []}, 'benchmarks': []}, fh)\n"
    )
    project.runpytest(*FAST, "--benchmark-json=run.json").assert_outcomes(passed=2)
    data = json.loads((project.path / "run.json").read_text())
    assert data["gpuperf"]["session_id"] != "other" and len(data["benchmarks"]) == 2

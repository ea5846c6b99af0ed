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

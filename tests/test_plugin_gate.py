"""The regression gate in real pytest sessions on the CPU: save, compare, fail, warn-only,
bad baseline files, reports, the compare command."""

import json
import subprocess
import sys
import textwrap

import pytest

from . import vclock
from .gateproject import BENCH, FAST, saved


def test_save_then_compare_then_fail_on_a_slowdown(project, monkeypatch):
    data = saved(project)
    entry = data["entries"]["test_b.py::test_spin"]
    assert data["profile"] == "cpu" and len(entry["metrics"]["throughput"]["history"]) == 2
    assert entry["environment"]["gpu"].startswith("cpu: ")

    same = project.runpytest(*FAST)
    same.assert_outcomes(passed=2)
    same.stdout.fnmatch_lines(
        [
            "*gpuperf verdicts against baseline*",
            "UNCHANGED *test_b.py::test_spin *throughput*",
            # 2 judged metrics (the tests' throughput) share the run's 1% false-alarm rate
            "verdicts: 2 unchanged; each metric judged at 99.500% confidence",
        ]
    )

    monkeypatch.setenv("SLOW", "0.5")
    slow = project.runpytest(*FAST, "--junitxml=j.xml")
    # both tests pass; the run fails through the gate, reported as a failed test of its own
    slow.assert_outcomes(passed=2, failed=1)
    assert slow.ret == pytest.ExitCode.TESTS_FAILED
    slow.stdout.fnmatch_lines(
        [
            "PERFORMANCE REGRESSION test_b.py::test_spin throughput: * tokens/s -> * tokens/s: regressed -3?.*% (tolerance 3.0%; ±*% from its own 2 sessions (1 df); at 99.50%); baseline cpu of 20??-??-??, 2 session(s); confirmed in a fresh process",
            "REGRESSED *test_b.py::test_spin *throughput*confirmed in a fresh process*",
            "gpuperf: re-measured 1 test(s) with a suspected regression in a fresh process",
            "FAILED gpuperf::performance-gate - PERFORMANCE REGRESSION*",
        ]
    )
    junit = (project.path / "j.xml").read_text()
    assert "<failure" in junit and "PERFORMANCE REGRESSION" in junit
    assert 'name="gpuperf:test_b.py::test_spin:throughput:verdict" value="regressed"' not in junit  # judged after the test ran

    warn = project.runpytest(*FAST, "--gpuperf-warn-only")
    warn.assert_outcomes(passed=2)
    assert warn.ret == pytest.ExitCode.OK
    warn.stdout.fnmatch_lines(
        ["REGRESSED *test_b.py::test_spin*", "PERFORMANCE REGRESSION test_b.py::test_spin *(--gpuperf-warn-only: not failing)"]
    )
    # no re-measurement when asked not to: the suspected regression fails as measured
    fast_fail = project.runpytest(*FAST, "--gpuperf-no-confirm")
    fast_fail.assert_outcomes(passed=2, failed=1)
    fast_fail.stdout.fnmatch_lines(["PERFORMANCE REGRESSION *; NOT re-measured in a fresh process"])
    assert "re-measured 1 test" not in fast_fail.stdout.str()


def test_a_regression_that_does_not_repeat_is_not_failed(project):
    saved(project)
    project.makeconftest(
        vclock.CONFTEST
        + textwrap.dedent(
            """
        import pytest_gpuperf.bench as bench

        import os

        REAL = bench.measure

        def first_one_slow(fn, **kw):
            if not os.environ.get("PYTEST_GPUPERF_CONFIRMATION"):  # slow here, not in the fresh process
                inner = fn
                def fn():
                    inner()
                    vclock.spin(0.001)
            return REAL(fn, **kw)

        @pytest.fixture(autouse=True)
        def once_slow(monkeypatch):
            monkeypatch.setattr(bench, "measure", first_one_slow)
        """
        )
    )
    result = project.runpytest(*FAST, "-k", "test_spin", "--gpuperf-max-time=0.2")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["INCONCLUSIVE *test_b.py::test_spin*not confirmed in a fresh process: -3*% here, +0.0*% (unchanged) there*"]
    )


def test_saving_a_subset_keeps_other_entries(project):
    saved(project, times=1)
    project.runpytest(*FAST, "--gpuperf-baseline=save", "-k", "test_spin").assert_outcomes(passed=1)
    data = json.loads((project.path / "baselines" / "cpu.json").read_text())
    assert set(data["entries"]) == {"test_b.py::test_spin", "test_b.py::test_other"}
    assert len(data["entries"]["test_b.py::test_spin"]["metrics"]["throughput"]["history"]) == 2
    assert len(data["entries"]["test_b.py::test_other"]["metrics"]["throughput"]["history"]) == 1


def test_new_and_missing_are_reported(project):
    saved(project, times=1)
    project.makepyfile(
        test_c="from vclock import spin\n\n"
        "def test_new(gpu_benchmark):\n    gpu_benchmark(lambda: spin(0.001))\n"
    )
    result = project.runpytest(*FAST, "-k", "test_new or test_spin")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["NEW *test_c.py::test_new*"])
    result = project.runpytest(
        *FAST, "test_b.py", "-k", "test_spin or test_other", "--deselect", "test_b.py::test_other"
    )
    # test_other was not collected: it is not reported missing
    assert "MISSING" not in result.stdout.str()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{", "is not valid JSON (truncated or edited?)"),
        (
            '{"schema": "pytest-gpuperf/baseline", "version": 7, "profile": "cpu", "entries": {}}',
            "schema version 7 is not supported",
        ),
    ],
)
def test_bad_baseline_file_stops_the_run_and_is_not_overwritten(project, content, fragment):
    (project.path / "baselines").mkdir()
    path = project.path / "baselines" / "cpu.json"
    path.write_text(content)
    for args in ([], ["--gpuperf-baseline=save"]):
        result = project.runpytest(*FAST, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*baseline file {path}: {fragment}*"])
    assert path.read_text() == content


def test_compare_mode_needs_a_baseline(project):
    result = project.runpytest(*FAST, "--gpuperf-baseline=compare")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--gpuperf-baseline=compare, but there is no baseline file*cpu.json*"]
    )


def test_baseline_off_and_a_custom_directory(project):
    project.runpytest(*FAST, "--gpuperf-baseline=save", "--gpuperf-baseline-dir=perf/base")
    assert (project.path / "perf" / "base" / "cpu.json").is_file()
    result = project.runpytest(*FAST, "--gpuperf-baseline=off", "--gpuperf-baseline-dir=perf/base")
    assert "verdicts against baseline" not in result.stdout.str()


def test_a_baseline_from_another_gpu_is_not_compared(project):
    saved(project, times=1)
    path = project.path / "baselines" / "cpu.json"
    data = json.loads(path.read_text())
    for e in data["entries"].values():
        e["environment"]["gpu"] = "cpu: Some Other CPU"
    path.write_text(json.dumps(data))
    project.runpytest(*FAST).stdout.fnmatch_lines(["INCOMPARABLE *test_b.py::test_spin*"])


def test_reports_json_and_github_summary(project, monkeypatch):
    saved(project, times=1)
    summary = project.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    project.runpytest(*FAST, "--gpuperf-json=out/r.json").assert_outcomes(passed=2)
    data = json.loads((project.path / "out" / "r.json").read_text())
    assert data["profile"] == "cpu" and data["baseline"].endswith("cpu.json")
    assert {r["verdicts"]["throughput"]["status"] for r in data["results"]} <= {
        "unchanged",
        "inconclusive",
        "improved",
    }
    md = summary.read_text()
    assert "## gpuperf: cpu:" in md and "| verdict | benchmark |" in md


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


def test_xdist_workers_save_into_one_file(project):
    pytest.importorskip("xdist")
    result = project.runpytest(*FAST, "-n", "2", "--gpuperf-baseline=save")
    result.assert_outcomes(passed=2)
    data = json.loads((project.path / "baselines" / "cpu.json").read_text())
    assert set(data["entries"]) == {"test_b.py::test_spin", "test_b.py::test_other"}


def test_under_xdist_the_run_says_at_what_confidence_its_workers_judged(project):
    """The controller judges nothing itself; its summary and JSON still carry the
    confidence each metric was judged at (it was missing from the H200 -n 2 run's JSON)."""
    pytest.importorskip("xdist")
    saved(project)
    result = project.runpytest(*FAST, "-n", "2", "--gpuperf-json=r.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["verdicts: *; each metric judged at 99.500% confidence*"])
    data = json.loads((project.path / "r.json").read_text())
    assert data["confidence"] == pytest.approx(1 - 0.01 / 2)


def test_a_per_test_tolerance_from_the_marker(project, monkeypatch):
    saved(project, times=2)
    project.makepyfile(
        test_b=BENCH.replace(
            "def test_spin(gpu_benchmark):",
            "import pytest\n\n@pytest.mark.gpuperf(tolerance=0.9)\ndef test_spin(gpu_benchmark):",
        )
    )
    monkeypatch.setenv("SLOW", "0.5")
    result = project.runpytest(*FAST, "-k", "test_spin")
    result.assert_outcomes(passed=1)  # -33% is within this test's 90% tolerance
    result.stdout.fnmatch_lines(["* test_b.py::test_spin *throughput*90.0%*"])


def test_bad_baseline_mode_in_the_ini_file_is_a_usage_error(project):
    project.makeini("[pytest]\ngpuperf_baseline = sometimes\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*tox.ini: gpuperf_baseline='sometimes': use one of auto, compare, save, off*"]
    )


def test_a_baseline_save_that_fails_fails_the_run(project):
    (project.path / "baselines").write_text("a file where the baseline directory should be")
    result = project.runpytest(*FAST, "--gpuperf-baseline=save")
    result.assert_outcomes(passed=2)  # the benchmarks themselves passed ...
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ... but the save asked for did not happen
    result.stdout.fnmatch_lines(["baseline: NOT SAVED: baseline file *cpu.json: *Error: *"])

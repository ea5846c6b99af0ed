"""What a new user, and a pytest-benchmark user, meets in the first hour (CPU, pytester)."""

import json

import pytest

from .gateproject import FAST, saved

# ------------------------------------------------------------------- pytest-benchmark users

PB = "def test_pb(benchmark):\n    benchmark(sum, range(10))\n"


@pytest.mark.parametrize("where", ["ini", "pyproject", "env"])
def test_a_timer_chosen_in_addopts_or_the_environment_is_kept(pytester, monkeypatch, where):
    pytester.makepyfile(test_pb=PB)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    if where == "ini":
        pytester.makeini("[pytest]\naddopts = --benchmark-timer=time.process_time\n")
    elif where == "pyproject":
        pytester.makepyprojecttoml('[tool.pytest.ini_options]\naddopts = ["--benchmark-timer=time.process_time"]\n')
    else:
        monkeypatch.setenv("PYTEST_ADDOPTS", "--benchmark-timer=time.process_time")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*timer=time.process_time*"])
    assert "synchronized_perf_counter" not in result.stdout.str()


def test_compare_with_runs_saved_without_the_plugin_gives_no_warning(pytester):
    pytester.makepyfile(test_pb=PB)
    store = f"file://{pytester.path}/store"
    first = pytester.runpytest_subprocess("-p", "no:gpuperf", "--benchmark-autosave", f"--benchmark-storage={store}")
    first.assert_outcomes(passed=1)
    again = pytester.runpytest_subprocess(
        "--benchmark-compare", f"--benchmark-storage={store}", "-W", "error", "-p", "no:cacheprovider"
    )
    again.assert_outcomes(passed=1)
    assert "machine_info is different" not in again.stdout.str() + again.stderr.str()


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


# ------------------------------------------------------------------------------- output


def test_one_compact_table_by_default_details_with_v(project):
    saved(project, times=2)
    default = project.runpytest(*FAST).stdout.str()
    assert "verdict    benchmark" in default and "median/call" not in default  # one table
    assert "to settle" not in default
    verbose = project.runpytest(*FAST, "-v").stdout.str()
    assert "verdict    benchmark" in verbose and "median/call" in verbose  # both tables
    quiet = project.runpytest(*FAST, "-q").stdout.str()
    assert "verdict    benchmark" in quiet
    widths = [len(line) for line in quiet.splitlines() if str(project.path) not in line]
    assert max(widths) <= 120, quiet  # no 190-character lines (file paths aside)


def test_intervals_say_when_there_is_none_or_it_is_noise():
    from pytest_gpuperf.outputs.text import interval_text
    from pytest_gpuperf.results import Result, Throughput
    from pytest_gpuperf.stats import summarize

    r = Result(nodeid="t", metric=None, unit="tokens", work_per_call=1)
    r.time = summarize([0.01], 0.95)
    r.throughput = Throughput("tokens/s", 100.0, 100.0, 100.0)
    assert interval_text(r) == "none (n=1)"  # not "±0.00% (range)"
    r.time = summarize([0.01 * (1 + i % 7) for i in range(30)], 0.95)
    r.throughput = Throughput("tokens/s", 100.0, 10.0, 678.0)
    assert interval_text(r) == "unusable noise"  # not "±578%"
    r.throughput = Throughput("tokens/s", 100.0, 99.0, 101.0)
    assert interval_text(r) == "±1.00%"


def test_progress_shows_a_range_not_a_ci_for_a_few_samples():
    from pytest_gpuperf.results import Throughput

    t = Throughput("tokens/s", 2022.0, 1857.0, 2434.0)
    assert t.format(False, 3) == "2,022 tokens/s (range of 3 samples 1,857-2,434)"
    assert t.format(False, 1) == "2,022 tokens/s (1 sample)"
    assert "95% CI" in t.format(True, 30)


def test_gpu_info_does_not_repeat_the_device_kind():
    from tests.fakes import snapshot

    assert snapshot().lines()[0] == "device: cpu"


SWEEP = """
from vclock import spin

def test_sweep(gpu_benchmark):
    for batch in (1, 2, 4):
        gpu_benchmark(lambda: spin(0.001 * batch), work=batch * 64, unit="tokens", metric=f"batch{batch}")
"""


def test_progress_lines_for_each_measurement(project, monkeypatch):
    import pytest_gpuperf.bench as bench

    project.makepyfile(test_s=SWEEP)
    verbose = project.runpytest(*FAST, "test_s.py", "-v")
    verbose.stdout.fnmatch_lines(
        ["*gpuperf: test_s.py::test_sweep::batch1: 64,0* tokens/s (95% CI*", "*gpuperf: test_s.py::test_sweep::batch4: *tokens/s*"]
    )
    plain = project.runpytest(*FAST, "test_s.py").stdout.str()
    assert "gpuperf: test_s.py::test_sweep::batch1:" not in plain  # a short test: no lines
    monkeypatch.setattr(bench.GpuBenchmark, "PROGRESS_AFTER_S", -1.0)  # as if it ran long
    long = project.runpytest(*FAST, "test_s.py")
    long.stdout.fnmatch_lines(["*gpuperf: test_s.py::test_sweep::batch2: *tokens/s*"])
    quiet = project.runpytest(*FAST, "test_s.py", "-q").stdout.str()
    assert "gpuperf: test_s.py::test_sweep::batch" not in quiet  # nothing extra under -q


def test_a_plan_before_spending(project):
    saved(project, times=1)
    data = json.loads((project.path / "baselines" / "cpu.json").read_text())
    assert all(e["duration_s"] >= 0 for e in data["entries"].values())  # recorded when saved
    project.makepyfile(
        test_c="def test_new(gpu_benchmark):\n    pass\n",
        test_d="import pytest\n\n@pytest.mark.gpu_requires_gpus(2)\n"
        "def test_two(gpu_benchmark):\n    pass\n",
    )
    result = project.runpytest(*FAST, "--gpuperf-plan")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "gpuperf plan: 4 test(s), durations from *cpu.json",
            "test_b.py::test_spin * s",
            "test_b.py::test_other * s",
            "test_c.py::test_new *unknown",
            "test_d.py::test_two *skipped here: needs 2 GPU(s), 0 visible*",
            "total: * s + 1 test(s) of unknown duration; 1 test(s) skipped here",
        ]
    )
    assert "passed" not in result.stdout.str()  # nothing ran
    assert "!!!" not in result.stdout.str()  # an ordinary end, not pytest.exit's (issue #21)
    assert "Exit" not in result.stdout.str()


def test_a_bad_false_alarm_rate_is_a_usage_error(project):
    result = project.runpytest("--gpuperf-false-alarm=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpuperf-false-alarm='5': must be a fraction between 0 and 1*"])
    project.makeini("[pytest]\ngpuperf_false_alarm = often\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_false_alarm='often': expected a number*"])


def test_a_bad_bound_in_a_marker_is_a_collection_error(project):
    project.makepyfile(test_m="import pytest\n@pytest.mark.gpuperf(bound='gpu')\ndef test_m(gpu_benchmark):\n    pass\n")
    result = project.runpytest("test_m.py")
    result.stdout.fnmatch_lines(["*test_m.py::test_m: @pytest.mark.gpuperf: marker: bound='gpu': use one of auto, compute, memory*"])



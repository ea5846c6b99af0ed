"""What a new user, and a pytest-benchmark user, meets in the first hour (CPU, pytester)."""


import pytest

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


# ------------------------------------------------------------------------------- output


def test_gpu_info_does_not_repeat_the_device_kind():
    from tests.fakes import snapshot

    assert snapshot().lines()[0] == "device: cpu"


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



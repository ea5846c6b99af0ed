"""gpu_benchmark in real pytest sessions on the CPU (pytester)."""

import json

import pytest

from . import vclock

FAST = [
    "--gpuperf-min-time=0.01",
    "--gpuperf-max-time=0.2",
    "--gpuperf-warmup-time=0",
    "--gpuperf-min-samples=6",
    "-p",
    "no:cacheprovider",
]

# timed by the virtual clock (tests/vclock.py): a loaded machine cannot turn the interval
# these tests expect into "unusable noise"
BENCH = """
from vclock import spin

def test_spin(gpu_benchmark):
    r = gpu_benchmark(lambda: spin(0.001), work=64, unit="tokens")
    assert r.throughput.unit == "tokens/s"
    gpu_benchmark.record("max_batch", 24, "samples")
"""


def test_results_in_summary_json_and_junit(pytester):
    vclock.add_to(pytester)
    pytester.makepyfile(test_b=BENCH)
    result = pytester.runpytest(*FAST, "--benchmark-json=out.json", "--junitxml=j.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= gpuperf results =*",
            "device: cpu:*profile: cpu",
            "test_b.py::test_spin *tokens/s *±*ms*",
            "test_b.py::test_spin::max_batch: 24 samples",
        ]
    )
    data = json.loads((pytester.path / "out.json").read_text())
    assert "gpuperf" not in data["machine_info"]  # runs saved without the plugin compare cleanly
    assert data["gpuperf"]["profile"] == "cpu"
    (entry,) = data["benchmarks"]  # the measured result, as a pytest-benchmark entry
    assert entry["fullname"] == "test_b.py::test_spin (gpuperf)" and entry["group"] == "gpuperf"
    assert entry["stats"]["rounds"] == len(entry["stats"]["data"]) >= 6
    assert entry["extra_info"]["throughput_unit"] == "tokens/s"
    res, rec = data["gpuperf"]["results"]  # one result type, measured and recorded
    assert res["key"] == "test_b.py::test_spin" and res["unit"] == "tokens"
    assert res["kind"] == "measured"
    assert res["throughput"]["unit"] == "tokens/s" and len(res["samples"]) >= 6
    assert rec["key"] == "test_b.py::test_spin::max_batch" and rec["kind"] == "recorded"
    assert rec["throughput"]["median"] == 24 and rec["higher_is_better"] is True
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="gpuperf:test_b.py::test_spin"' in junit and "tokens/s" in junit


def test_results_reach_the_json_file_object_of_pytest_benchmark_before_5_3(pytester):
    # pytest-benchmark 4.0 (the oldest pyproject allows) gives --benchmark-json as an open
    # binary file; with none of its own benchmarks run it leaves the file to us
    vclock.add_to(pytester)
    pytester.makeconftest(
        vclock.CONFTEST
        + "\n\ndef pytest_configure(config):\n"
        + "    config.option.benchmark_json = open('old.json', 'wb')\n"
    )
    pytester.makepyfile(test_b=BENCH)
    pytester.runpytest(*FAST).assert_outcomes(passed=1)
    data = json.loads((pytester.path / "old.json").read_text())
    (entry,) = data["benchmarks"]
    assert entry["fullname"] == "test_b.py::test_spin (gpuperf)" and entry["group"] == "gpuperf"
    assert data["gpuperf"]["results"][0]["key"] == "test_b.py::test_spin"


def test_results_join_pytest_benchmarks_own_json(pytester):
    vclock.add_to(pytester)
    pytester.makepyfile(
        test_b=BENCH + "\n\ndef test_pb(benchmark):\n    benchmark(sum, range(10))\n"
    )
    result = pytester.runpytest(*FAST, "--benchmark-json=out.json")
    result.assert_outcomes(passed=2)
    data = json.loads((pytester.path / "out.json").read_text())
    assert [b["name"] for b in data["benchmarks"]] == ["test_pb", "test_spin"]
    assert data["gpuperf"]["results"][0]["key"] == "test_b.py::test_spin"


def test_marker_settings_override_the_command_line(pytester):
    pytester.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.gpuperf(min_samples=40, target="0.1%")
        def test_m(gpu_benchmark):
            r = gpu_benchmark(lambda: None, work=1, unit="calls")
            assert r.config["min_samples"] == 40 and r.config["target"] == 0.001
            assert r.config["max_time"] == 0.2  # from the command line
            r2 = gpu_benchmark(lambda: None, metric="b", min_samples=7)
            assert r2.config["min_samples"] == 7  # a call keyword beats the marker
        """
    )
    pytester.runpytest(*FAST).assert_outcomes(passed=1)


def test_a_result_names_the_settings_its_test_set_even_at_the_runs_own_value(pytester):
    """A paired round's cap on the command line yields to the test's own max_time, so the
    stage prices the round at it (paired/plan.round_cap_of): a marker's max_time equal to
    the run's is the test's own all the same."""
    pytester.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.gpuperf(max_time=0.2, min_samples=3)
        def test_m(gpu_benchmark):
            r = gpu_benchmark(lambda: None, work=1, unit="calls")
            assert r.config["max_time"] == 0.2 and r.config["set_by_test"] == ["max_time", "min_samples"]
            r2 = gpu_benchmark(lambda: None, metric="b", target=0.05)
            assert r2.config["set_by_test"] == ["max_time", "min_samples", "target"]

        def test_plain(gpu_benchmark):
            r = gpu_benchmark(lambda: None, work=1, unit="calls")
            assert r.config["max_time"] == 0.2 and r.config["set_by_test"] == []
        """
    )
    pytester.runpytest(*FAST).assert_outcomes(passed=2)


def test_bad_marker_setting_is_a_collection_error(pytester):
    pytester.makepyfile(
        test_m="import pytest\n@pytest.mark.gpuperf(max_time=-1)\ndef test_m():\n    pass\n"
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["test_m.py::test_m: @pytest.mark.gpuperf: marker: max_time=-1: must be > 0, got -1"]
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--gpuperf-max-time=soon"], "command line: max_time='soon': expected a number"),
        (["--gpuperf-target=2"], "command line: target='2': must be a fraction"),
    ],
)
def test_bad_option_is_a_usage_error(pytester, args, fragment):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*gpuperf: {fragment}*"])


def test_bad_ini_value_names_the_file(pytester):
    pytester.makeini("[pytest]\ngpuperf_min_samples = many\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: min_samples='many': must be a whole number >= 1*"])


def test_bad_calls_fail_the_test_with_a_clear_message(pytester):
    pytester.makepyfile(
        test_bad="""
        import pytest

        def test_not_callable(gpu_benchmark):
            gpu_benchmark(3)

        def test_unit(gpu_benchmark):
            gpu_benchmark(lambda: None, work=1, unit="light-years")

        def test_twice(gpu_benchmark):
            gpu_benchmark(lambda: None)
            gpu_benchmark(lambda: None)
        """
    )
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*BenchmarkError: the work to time must be callable, got int 3*",
            "*BenchmarkError: unknown unit 'light-years'*",
            "*test_twice was already measured in this test and is now measured again; give each gpu_benchmark(...) and record(...) its own metric name*",
        ]
    )


def test_oom_in_one_test_leaves_the_next_one_clean(pytester):
    pytester.makepyfile(
        test_oom="""
        import gc, weakref

        REFS = []

        class Model:  # stands for a model's tensors held by the test
            pass

        def test_a_runs_out_of_memory(gpu_benchmark):
            model = Model()
            REFS.append(weakref.ref(model))
            def step():
                raise MemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            gpu_benchmark(step, work=1, unit="calls")

        def test_b_starts_clean():
            gc.collect()
            assert REFS and REFS[0]() is None, "the failed benchmark's objects are still alive"
        """
    )
    # in a subprocess: an inline pytester run records every hook call, tracebacks included
    result = pytester.runpytest_subprocess(*FAST)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["*OutOfMemory: test_oom.py::test_a_runs_out_of_memory ran out of memory*"]
    )


def test_oom_can_be_recorded_as_a_result(pytester):
    pytester.makepyfile(
        test_oom="""
        def test_sweep(gpu_benchmark):
            def step():
                raise MemoryError("out of memory")
            r = gpu_benchmark(step, work=1, unit="samples", metric="batch25", on_oom="record")
            assert r.outcome == "oom" and "ran out of memory" in r.error
        """
    )
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_oom.py::test_sweep::batch25 *OOM*"])


def test_results_travel_across_xdist_workers(pytester):
    pytest.importorskip("xdist")
    vclock.add_to(pytester)
    pytester.makepyfile(test_b=BENCH)
    result = pytester.runpytest(*FAST, "-n", "2")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_b.py::test_spin *tokens/s*"])

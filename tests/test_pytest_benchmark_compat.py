"""pytest-benchmark interplay (benchflags.py, plugin.py): its flags, timer, JSON and compare."""

import json

import pytest

from . import vclock
from .test_plugin_bench import FAST as GPUPERF_FAST

FAST = [*GPUPERF_FAST, "--benchmark-max-time=0.01", "--benchmark-min-rounds=3"]


TESTS = """
from vclock import spin

CALLS = []

def test_gpu(gpu_benchmark):
    r = gpu_benchmark(lambda: (CALLS.append(1), spin(0.001)), work=64, unit="tokens")
    print("GPU_CALLS", len(CALLS), r.outcome, r.throughput is None)

def test_pb(benchmark):
    benchmark(sum, range(10))

def test_plain():
    pass
"""


@pytest.fixture
def proj(pytester):
    vclock.add_to(pytester)
    pytester.makepyfile(test_f=TESTS)
    return pytester


def test_benchmark_only_runs_the_gpu_benchmark_tests(proj):
    result = proj.runpytest(*FAST, "--benchmark-only", "-rs")
    result.assert_outcomes(passed=2, skipped=1)  # test_gpu and test_pb; test_plain skipped
    assert "SKIPPED [1] test_f.py: Skipping non-benchmark (--benchmark-only active)." in result.outlines
    result.stdout.fnmatch_lines(["*= gpuperf results =*", "test_f.py::test_gpu *tokens/s*"])


def test_benchmark_skip_skips_the_gpu_benchmark_tests(proj):
    result = proj.runpytest(*FAST, "--benchmark-skip", "-rs")
    result.assert_outcomes(passed=1, skipped=2)  # test_plain runs
    assert "SKIPPED [2] test_f.py: Skipping benchmark (--benchmark-skip active)." in result.outlines
    assert "gpuperf results" not in result.stdout.str()
    # --benchmark-only wins over --benchmark-skip, as in pytest-benchmark
    both = proj.runpytest(*FAST, "--benchmark-skip", "--benchmark-only")
    both.assert_outcomes(passed=2, skipped=1)


def test_benchmark_disable_runs_the_work_once_unmeasured(proj):
    result = proj.runpytest(*FAST, "--benchmark-disable", "-s", "--benchmark-json=out.json")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*GPU_CALLS 1 disabled True*"])
    assert "gpuperf results" not in result.stdout.str()  # nothing measured, nothing judged
    assert not (proj.path / "out.json").exists() or "gpuperf" not in (proj.path / "out.json").read_text()
    # --benchmark-enable overrides it, as in pytest-benchmark
    enabled = proj.runpytest(*FAST, "--benchmark-disable", "--benchmark-enable", "-s")
    enabled.assert_outcomes(passed=3)
    enabled.stdout.fnmatch_lines(["*GPU_CALLS * ok False*", "*= gpuperf results =*"])


def test_record_and_latency_record_nothing_when_disabled(pytester):
    vclock.add_to(pytester)
    pytester.makepyfile(
        test_d="""
        from vclock import spin

        def test_d(gpu_benchmark):
            assert gpu_benchmark.latency(lambda: spin(0.001)).outcome == "disabled"
            gpu_benchmark.record("max_batch", 24, "samples")
            assert gpu_benchmark.results == []
        """
    )
    result = pytester.runpytest(*FAST, "--benchmark-disable")
    result.assert_outcomes(passed=1)
    assert "gpuperf results" not in result.stdout.str()


@pytest.mark.parametrize("how", ["--benchmark-autosave", "--benchmark-save=mine"])
def test_save_with_only_plugin_results_saves_them(pytester, how, recwarn):
    vclock.add_to(pytester)
    pytester.makepyfile(
        test_g="from vclock import spin\n\n"
        "def test_gpu(gpu_benchmark):\n"
        "    gpu_benchmark(lambda: spin(0.001), work=64, unit='tokens')\n"
    )
    result = pytester.runpytest(*FAST, how, "--benchmark-storage=file://./store")
    result.assert_outcomes(passed=1)
    (saved,) = (pytester.path / "store").rglob("*.json")
    assert saved.name.startswith("0001_") and (how == "--benchmark-autosave" or "mine" in saved.name)
    data = json.loads(saved.read_text())
    (entry,) = data["benchmarks"]
    assert entry["fullname"] == "test_g.py::test_gpu (gpuperf)" and entry["group"] == "gpuperf"
    assert data["gpuperf"]["results"][0]["key"] == "test_g.py::test_gpu"
    assert {"machine_info", "commit_info", "datetime", "version"} <= set(data)
    result.stdout.fnmatch_lines(["gpuperf: saved 1 result(s) in pytest-benchmark's storage"])
    # not pytest-benchmark's "Not saving anything, no benchmarks have been run!"
    assert not [w for w in recwarn if "Not saving anything" in str(w.message)]
    assert "Not saving anything" not in result.stdout.str()


def test_a_test_with_both_fixtures_writes_two_distinct_fullnames(pytester):
    vclock.add_to(pytester)
    pytester.makepyfile(
        test_both="from vclock import spin\n\n"
        "def test_both(benchmark, gpu_benchmark):\n"
        "    benchmark(sum, range(10))\n"
        "    gpu_benchmark(lambda: spin(0.001), work=64, unit='tokens')\n"
    )
    store = ["--benchmark-storage=file://./store"]
    first = pytester.runpytest(*FAST, "--benchmark-autosave", *store, "--benchmark-json=out.json")
    first.assert_outcomes(passed=1)
    for path in [pytester.path / "out.json", *(pytester.path / "store").rglob("*.json")]:
        names = [b["fullname"] for b in json.loads(path.read_text())["benchmarks"]]
        # pytest-benchmark's entry keeps the node id; --benchmark-compare matches by
        # fullname, so it compares its benchmark with its own saved entry, never ours
        assert names == ["test_both.py::test_both", "test_both.py::test_both (gpuperf)"], path
    again = pytester.runpytest(*FAST, "--benchmark-compare", *store)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*test_both (0001*"])


PLAIN_PB = """
def test_sum(benchmark):
    assert benchmark(sum, range(100)) == 4950

def test_sorted(benchmark):
    benchmark.pedantic(sorted, args=([3, 1, 2],), rounds=3, iterations=2)
"""


PB_FAST = ["-p", "no:cacheprovider", "--benchmark-max-time=0.01", "--benchmark-min-rounds=3"]


def _pb_run(pytester, *args):
    """A pytest-benchmark project run in a subprocess: its outcome, header and JSON."""
    result = pytester.runpytest_subprocess(*PB_FAST, "--benchmark-json=pb.json", *args)
    header = [line for line in result.outlines if line.startswith("benchmark: ")]
    data = json.loads((pytester.path / "pb.json").read_text())
    return result, header, data


def test_pytest_benchmark_runs_the_same_with_and_without_the_plugin(pytester):
    pytester.makepyfile(test_pb=PLAIN_PB)
    without, header_without, json_without = _pb_run(pytester, "-p", "no:gpuperf")
    with_plugin, header_with, json_with = _pb_run(pytester)
    without.assert_outcomes(passed=2)
    with_plugin.assert_outcomes(passed=2)
    assert header_with == header_without  # "benchmark: 5.x (defaults: timer=time.perf_counter ..."
    assert "timer=time.perf_counter" in header_with[0]
    assert sorted(json_with) == sorted(json_without)  # no "gpuperf" key, nothing else added
    assert "gpuperf" not in json_with
    assert sorted(json_with["machine_info"]) == sorted(json_without["machine_info"])

    def shape(data):
        return [(b["fullname"], b["options"], sorted(b), sorted(b["stats"])) for b in data["benchmarks"]]

    assert shape(json_with) == shape(json_without)
    assert {b["options"]["timer"] for b in json_with["benchmarks"]} == {"perf_counter"}


def test_a_skipped_gpu_benchmark_adds_nothing_to_pytest_benchmarks_json(pytester):
    # the plugin's tests are collected but none measures: still no "gpuperf" key
    pytester.makepyfile(
        test_pb=PLAIN_PB
        + "\n\nimport pytest\n\n@pytest.mark.gpu_requires_gpus(64)\ndef test_gpu(gpu_benchmark):\n    gpu_benchmark(lambda: None)\n"
    )
    result, _, data = _pb_run(pytester)
    result.assert_outcomes(passed=2, skipped=1)
    assert "gpuperf" not in data
    assert sorted(b["name"] for b in data["benchmarks"]) == ["test_sorted", "test_sum"]


@pytest.mark.parametrize("how", ["option", "marker"])
def test_the_synchronised_timer_is_an_opt_in(pytester, how):
    timer = "pytest_gpuperf.measure.clock.synchronized_perf_counter"
    if how == "option":
        pytester.makepyfile(test_pb=PLAIN_PB)
        result, header, data = _pb_run(pytester, f"--benchmark-timer={timer}")
        assert f"timer={timer}" in header[0]
    else:  # per test, through pytest-benchmark's own marker
        pytester.makepyfile(
            test_pb="import pytest\n"
            "from pytest_gpuperf.measure.clock import synchronized_perf_counter\n\n"
            "@pytest.mark.benchmark(timer=synchronized_perf_counter)\n"
            "def test_sum(benchmark):\n    benchmark(sum, range(100))\n"
        )
        result, header, data = _pb_run(pytester)
        assert "timer=time.perf_counter" in header[0]  # the run's default is untouched
    result.assert_outcomes(passed=1 if how == "marker" else 2)
    assert {b["options"]["timer"] for b in data["benchmarks"]} == {"synchronized_perf_counter"}


PB = "def test_pb(benchmark):\n    benchmark(sum, range(10))\n"


@pytest.mark.slow
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


@pytest.mark.slow
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

"""pytest-benchmark's flags reach gpu_benchmark tests (benchflags.py), in real pytest
sessions (pytester, the virtual clock). Cheap: .ci/run runs this file with the oldest
pytest and pytest-benchmark that pyproject.toml allows."""

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
    "--benchmark-max-time=0.01",
    "--benchmark-min-rounds=3",
]

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

"""A good citizen: installing the plugin changes nothing for tests that do not use it.

Each test runs pytest in a subprocess, as a user's shell would: the plugin is loaded
through its pytest11 entry point, exactly as in any environment where it is installed.
"""

import json
import sys

import pytest


@pytest.mark.parametrize("flag", ["--help", "--markers", "--fixtures"])
def test_pytest_informational_flags_work_with_the_plugin_installed(pytester, flag):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess(flag)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert "Traceback" not in result.stderr.str()
    if flag == "--help":
        # every plugin option's help text reaches the user, '%' signs and all
        result.stdout.fnmatch_lines(["*--gpuperf-false-alarm=RATE*", "*at least 99%*"])
    elif flag == "--markers":
        result.stdout.fnmatch_lines(["@pytest.mark.gpu_requires_vram*"])
    else:
        result.stdout.fnmatch_lines(["*gpu_benchmark*"])


def test_a_pytester_run_in_this_checkout_gives_no_rewrite_warning(pytester):
    # the editable install's pytest_gpuperf.egg-info lists the tests (MANIFEST.in), which made
    # pytest warn in every inner run that it cannot rewrite our `tests` package
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "PytestAssertRewriteWarning" not in result.stdout.str()


# ------------------------------------------------------------------ pytest-benchmark users

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
    timer = "pytest_gpuperf.clock.synchronized_perf_counter"
    if how == "option":
        pytester.makepyfile(test_pb=PLAIN_PB)
        result, header, data = _pb_run(pytester, f"--benchmark-timer={timer}")
        assert f"timer={timer}" in header[0]
    else:  # per test, through pytest-benchmark's own marker
        pytester.makepyfile(
            test_pb="import pytest\n"
            "from pytest_gpuperf.clock import synchronized_perf_counter\n\n"
            "@pytest.mark.benchmark(timer=synchronized_perf_counter)\n"
            "def test_sum(benchmark):\n    benchmark(sum, range(100))\n"
        )
        result, header, data = _pb_run(pytester)
        assert "timer=time.perf_counter" in header[0]  # the run's default is untouched
    result.assert_outcomes(passed=1 if how == "marker" else 2)
    assert {b["options"]["timer"] for b in data["benchmarks"]} == {"synchronized_perf_counter"}


# ----------------------------------------------------------------- optional dependencies

# what the core needs not: the workloads extra and the report extra
OPTIONAL = ("transformers", "peft", "bitsandbytes", "matplotlib")


def _workload_calls():
    from pytest_gpuperf.workloads.finetune import make_trainer
    from pytest_gpuperf.workloads.generation import StaticGreedyDecoder
    from pytest_gpuperf.workloads.models import build_model

    return {
        "build_model": ("transformers", lambda: build_model("tiny")),
        "build_model nf4": ("bitsandbytes", lambda: build_model("tiny", quantization="nf4")),
        "make_trainer": ("peft", lambda: make_trainer("tiny", device="cpu")),
        "StaticGreedyDecoder": ("transformers", lambda: StaticGreedyDecoder(None, 1, 4, 4)),
    }


@pytest.mark.parametrize("call", ["build_model", "build_model nf4", "make_trainer", "StaticGreedyDecoder"])
def test_a_workload_without_its_extra_names_the_extra(monkeypatch, call):
    pytest.importorskip("torch")
    from pytest_gpuperf.extras import MissingExtra

    module, run = _workload_calls()[call]
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(MissingExtra) as info:
        run()
    message = str(info.value)
    assert "pip install 'pytest-gpuperf[workloads]'" in message
    assert "need transformers, peft and bitsandbytes, which are optional" in message
    assert module in message  # the import that failed


def test_the_html_report_without_its_extra_names_the_extra(project, monkeypatch):
    from .gateproject import FAST

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = project.path / "report.html"
    result = project.runpytest(*FAST, f"--gpuperf-html={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an output asked for was not written
    assert (
        f"gpuperf: NOT WRITTEN: --gpuperf-html {out}: the charts need matplotlib and jinja2, which are optional: pip install 'pytest-gpuperf[report]' (import failed: "
        in result.stdout.str()
    )
    assert not out.exists()


def test_gpuperf_report_without_its_extra_names_the_extra(monkeypatch, tmp_path, capsys):
    from pathlib import Path

    from pytest_gpuperf.__main__ import main

    run = Path(__file__).resolve().parent / "data" / "evidence" / "h200-2026-11-30-b" / "smoke.json"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "gpuperf report: the charts need matplotlib and jinja2, which are optional: pip install 'pytest-gpuperf[report]'" in err
    assert "Traceback" not in err and not (tmp_path / "r.html").exists()


PLUGIN_PROJECT = """
import pytest

@pytest.mark.gpu_requires_gpus(64)
def test_needs_many_gpus():
    pass

@pytest.mark.gpu_dtype("fp32", "bf16")
def test_dtypes(gpu_dtype, gpu_device):
    assert str(gpu_dtype).startswith("torch.")

def test_measured(gpu_benchmark):
    r = gpu_benchmark(lambda: sum(range(100)), work=100, unit="items", max_time=0.2, min_time=0.01, warmup_time=0)
    assert r.throughput.unit == "items/s"
"""
BLOCK = "import sys; sys.modules.update(dict.fromkeys({!r})); import pytest; sys.exit(pytest.main(sys.argv[1:]))"


@pytest.mark.parametrize("args", [[], ["--gpuperf-info"], ["--gpuperf-profiles"]])
def test_the_plugin_needs_none_of_the_optional_packages(pytester, args):
    """Markers, gpu_benchmark, --gpuperf-info and --gpuperf-profiles with transformers, peft,
    bitsandbytes and matplotlib unimportable."""
    import subprocess

    pytester.makepyfile(test_p=PLUGIN_PROJECT)
    run = subprocess.run(
        [sys.executable, "-c", BLOCK.format(OPTIONAL), "-p", "no:cacheprovider", "--gpuperf-baseline=off", *args],
        cwd=pytester.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    if not args:
        assert "3 passed, 1 skipped" in run.stdout
        assert "test_p.py::test_measured" in run.stdout  # the results table
    elif args == ["--gpuperf-info"]:
        assert "profile: cpu" in run.stdout
    else:
        assert "h200" in run.stdout and "a100-40gb" in run.stdout


OWN_NAMES = """
import pytest
import torch


def pytest_configure(config):
    for name in ("dtype(value): this project's own dtype marker", "cpu_only: ours",
                 "requires_vram(size): ours", "requires_gpus(n): ours"):
        config.addinivalue_line("markers", name)


@pytest.fixture
def dtype(request):
    marker = request.node.get_closest_marker("dtype")
    return marker.args[0] if marker else torch.float32
"""


def test_a_projects_own_dtype_marker_fixture_and_requirement_markers_are_left_alone(pytester):
    """The plugin's markers and fixtures are prefixed (gpu_*): a project's own `dtype`
    marker and fixture, and markers named like the plugin's old ones, mean what the
    project says (issue #21: a collection error before)."""
    pytester.makeconftest(OWN_NAMES)
    pytester.makepyfile(
        test_own="""
        import pytest
        import torch

        @pytest.mark.dtype(torch.float16)
        def test_half(dtype):
            assert dtype is torch.float16

        def test_default(dtype):
            assert dtype is torch.float32

        @pytest.mark.cpu_only
        @pytest.mark.requires_vram(10**15)
        @pytest.mark.requires_gpus(64)
        def test_marked_but_not_ours():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    plain = pytester.runpytest("--strict-markers", "-p", "no:gpuperf", "-p", "no:randomly")
    plain.assert_outcomes(passed=3)

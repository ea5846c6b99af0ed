"""Optional dependencies (extras.py): a missing extra is named; the plugin itself needs none."""

import sys

import pytest

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
    from pytest_gpuperf.core.extras import MissingExtra

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

    from pytest_gpuperf.cli.main import main

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


@pytest.mark.slow
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

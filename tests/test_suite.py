"""The shipped benchmark suite (benchmarks/): its tiers, and a generation batch out of memory."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def collect(*args):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "--co", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split("benchmarks/", 1)[1] for line in done.stdout.splitlines() if line.startswith("benchmarks/")]


def test_the_smoke_tier_is_one_benchmark_per_family():
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmarks_conftest", ROOT / "benchmarks" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    SMOKE = module.SMOKE
    full = collect()
    missing = [s for s in SMOKE if s not in full]
    assert not missing, f"smoke ids that no longer exist: {missing}"
    smoke = collect("-m", "smoke")
    assert sorted(smoke) == sorted(SMOKE)
    assert {s.split("::")[0] for s in smoke} == {"test_dtype.py", "test_finetune.py", "test_generate.py"}
    assert len(smoke) < len(full) / 3


@pytest.mark.slow
def test_the_scale_tier_holds_the_large_models_and_the_full_suite_the_rest():
    everything = collect()
    scale = collect("-m", "scale")
    full = collect("-m", "not scale")
    assert sorted(scale + full) == sorted(everything)
    assert {
        "test_finetune.py::test_qlora_batch_sweep[llama2-70b]",
        "test_finetune.py::test_qlora_realistic_lengths[llama2-13b]",
        "test_finetune.py::test_qlora_realistic_lengths[llama2-70b]",
        "test_generate.py::test_generate_static[llama-1b-b8-256tok-autotuned]",
        "test_generate.py::test_generate_static[llama-1b-b1-256tok-autotuned]",
        "test_generate.py::test_generate_scale[llama2-7b-bf16-b1-autotuned]",
        "test_generate.py::test_generate_scale[llama2-7b-bf16-b1-compiled]",
        "test_generate.py::test_generate_scale[llama2-70b-nf4-b1]",
    } <= set(scale)
    # the nightly suite keeps every family for the 7B and 13B, the 70B's step and max batch
    assert {
        "test_finetune.py::test_qlora_batch_sweep[llama2-7b]",
        "test_finetune.py::test_qlora_batch_sweep[llama2-13b]",
        "test_finetune.py::test_qlora_realistic_lengths[llama2-7b]",
        "test_finetune.py::test_qlora_step[llama2-70b]",
        "test_finetune.py::test_qlora_max_batch[llama2-70b]",
        "test_generate.py::test_generate_static[llama-1b-b1-256tok-compiled]",
    } <= set(full)
    assert not any("test_generate_scale[llama2" in t for t in full)


def test_a_test_without_a_model_runs_with_no_other_tests_model_resident(pytester):
    """The shipped suite's conftest frees the cached model before a test that does not use
    it (its memory would count in that test's peak), and keeps it between tests that do."""
    pytester.makeconftest((ROOT / "benchmarks" / "conftest.py").read_text())
    pytester.makepyfile(
        test_order="""
        BUILT = []

        def build():
            BUILT.append(1)
            return object()

        def test_a(one_model):
            one_model.get("m", build)

        def test_a_again(one_model):
            assert one_model.key == "m" and len(BUILT) == 1  # kept, not rebuilt

        def test_no_model():
            pass

        def test_c(one_model):
            assert one_model.key is None  # freed before test_no_model ran
            one_model.get("m", build)
            assert len(BUILT) == 2
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)


OOM_PLUGIN = textwrap.dedent(
    """
    from pytest_gpuperf.workloads import generation

    def warm(self, input_ids):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB (test double)")

    generation.StaticGreedyDecoder.warm = warm
    """
)


@pytest.mark.slow
def test_a_batch_that_runs_out_of_memory_is_recorded(tmp_path):
    (tmp_path / "oom_plugin.py").write_text(OOM_PLUGIN)
    out = tmp_path / "run.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/test_generate.py", "-k", "scale and tiny",
         "-q", "-p", "no:cacheprovider", "-p", "oom_plugin", "--gpuperf-baseline=off",
         f"--gpuperf-json={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout
    results = json.loads(out.read_text())["results"]
    keys = {r["key"].split("::", 1)[1]: r for r in results}
    assert set(keys) == {"test_generate_scale[tiny-nf4-b2]::oom_batch"}, sorted(keys)
    recorded = keys["test_generate_scale[tiny-nf4-b2]::oom_batch"]
    assert recorded["throughput"]["median"] == 2
    assert "out of memory at batch 2" in " ".join(recorded["notes"])


@pytest.mark.slow
def test_the_cpu_ddp_scaling_efficiency_is_informational(tmp_path):
    # two CPU processes sharing the cores read a "scaling efficiency" of 16.4: meaningless,
    # so on the CPU it is shown, never judged (on two GPUs it is judged, derived from 2ranks)
    out = tmp_path / "run.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/test_multigpu.py", "-k", "ddp", "-q",
         "-p", "no:cacheprovider", "--gpuperf-baseline=off", f"--gpuperf-json={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    keys = {r["key"].rsplit("::", 1)[1]: r for r in json.loads(out.read_text())["results"]}
    eff = keys["scaling_efficiency"]
    assert eff["gate"] is False and "not judged" in " ".join(eff["notes"])
    assert keys["2ranks"]["gate"] is True  # the measured figures are judged as ever

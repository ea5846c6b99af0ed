"""The plugin in real pytest sessions (pytester): options, markers, skips, errors.

A conftest in each inner session sets the device snapshot through the plugin's public
session API, standing in for hardware; everything else is the real plugin.
"""

from dataclasses import replace

import pytest

from pytest_gpuperf.core.results import Result
from tests.fakes import TWO_GPU_HOST

FAKE_DEVICE = """
import pytest
from pytest_gpuperf.plugin import get_session
from tests.fakes import gpu, snapshot

DEVICES = {{
    "h200": snapshot(gpu()),
    "t4": snapshot(gpu("Tesla T4", 15360, (7, 5))),
    "a100-40": snapshot(gpu("NVIDIA A100-SXM4-40GB", 40960, (8, 0))),
    "a100-80": snapshot(gpu("NVIDIA A100 80GB PCIe", 81920, (8, 0))),
    "a100-mig": snapshot(gpu("NVIDIA A100-SXM4-40GB MIG 1g.5gb", 4864, (8, 0),
                             mig_profile="1g.5gb", parent_name="NVIDIA A100-SXM4-40GB",
                             parent_memory_total=40960 * 1024**2)),
    "cpu": snapshot(),
}}

def pytest_configure(config):
    get_session(config).set_snapshot(DEVICES["{device}"])
"""

BENCH = """
import pytest

@pytest.mark.gpu_requires_vram("40GiB")
@pytest.mark.gpu_dtype("fp16", "bf16")
def test_big(gpu_dtype):
    pass

@pytest.mark.gpu_requires_gpus(2)
def test_two_gpus():
    pass

@pytest.mark.gpu_requires_mig("1g.5gb")
def test_mig():
    pass

@pytest.mark.gpu_requires_capability("8.9")
def test_fp8_card():
    pass

def test_plain():
    pass
"""


@pytest.fixture
def on(pytester, request):
    import sys
    from pathlib import Path

    root = str(Path(request.config.rootpath))
    pytester.syspathinsert(root)
    sys.modules.pop("conftest", None)

    def use(device):
        pytester.makeconftest(FAKE_DEVICE.format(device=device))
        return pytester

    return use


def outcomes(result):
    return (
        {
            r.nodeid.split("::")[-1]: r.outcome
            for r in result.reprec.getreports("pytest_runtest_setup")
        }
        if hasattr(result, "reprec")
        else None
    )


def test_skips_on_a_small_gpu_with_reasons(on):
    p = on("t4")
    p.makepyfile(test_bench=BENCH)
    result = p.runpytest("-rs", "--strict-markers")
    result.assert_outcomes(passed=1, skipped=5)
    result.stdout.fnmatch_lines(
        [
            "*test_bench.py:3: needs 40.0 GiB of GPU memory, 15.0 GiB available on Tesla T4",
            "*test_bench.py:8: needs 2 GPU(s), 1 visible",
            "*test_bench.py:12: needs a MIG instance of slice 1g.5gb; Tesla T4 is not a MIG instance",
            "*test_bench.py:16: needs compute capability 8.9, Tesla T4 has 7.5",
        ]
    )


def test_runs_on_the_h200(on):
    p = on("h200")
    p.makepyfile(test_bench=BENCH)
    result = p.runpytest("-rs", "--strict-markers", "-v")
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(
        ["*test_big?fp16? PASSED*", "*test_big?bf16? PASSED*", "*test_fp8_card PASSED*"]
    )


def test_runs_on_a_mig_slice(on):
    p = on("a100-mig")
    p.makepyfile(test_bench=BENCH)
    result = p.runpytest("-rs")
    result.assert_outcomes(passed=2, skipped=4)
    result.stdout.fnmatch_lines(["*needs 40.0 GiB of GPU memory, 4.8 GiB available on MIG 1g.5gb"])


def test_cpu_run_skips_gpu_requirements(on):
    p = on("cpu")
    p.makepyfile(test_bench=BENCH)
    result = p.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=5)
    result.stdout.fnmatch_lines(["*needs a GPU with 40.0 GiB; no GPU visible"])


def test_why_no_gpu_is_visible_is_said_once_not_on_every_skip(on):
    """issue #21: each skip line of a CPU run ended with the NVML cause."""
    p = on("cpu")
    p.makepyfile(test_bench=BENCH)
    out = p.runpytest("-q", "-rs").stdout.str()
    assert out.count("test double: no GPU") == 1
    assert "gpuperf: no GPU visible: test double: no GPU" in out
    assert "SKIPPED [2] test_bench.py:3: needs a GPU with 40.0 GiB; no GPU visible\n" in out


def test_no_gpu_line_only_for_tests_with_gpu_requirements(on):
    p = on("cpu")
    p.makepyfile(test_plain="def test_it():\n    pass\n")
    assert "no GPU visible" not in p.runpytest().stdout.str()


def test_dtype_ids_values_and_skip_on_old_gpu(on):
    p = on("t4")
    p.makepyfile(
        test_dt="""
        import pytest, torch

        @pytest.mark.gpu_dtype("fp32", "tf32", "fp16", "bf16")
        def test_d(gpu_dtype, gpu_dtype_spec):
            expected = {"fp32": torch.float32, "tf32": torch.float32,
                        "fp16": torch.float16, "bf16": torch.bfloat16}[gpu_dtype_spec.name]
            assert gpu_dtype is expected
            precision = torch.get_float32_matmul_precision()
            if gpu_dtype_spec.name == "tf32":
                assert precision == "high"
            if gpu_dtype_spec.name == "fp32":
                assert precision == "highest"
        """
    )
    result = p.runpytest("-v", "-rs")
    result.stdout.fnmatch_lines(
        [
            "*test_d?fp32? PASSED*",
            "*test_d?tf32? SKIPPED*",
            "*test_d?fp16? PASSED*",
            "*test_d?bf16? SKIPPED*",
            "*bf16 needs compute capability 8.0, Tesla T4 has 7.5",
        ]
    )
    result.assert_outcomes(passed=2, skipped=2)


def test_the_gpu_dtype_parameter_is_recorded_as_dtype(on):
    """Results and reports of runs from before the marker was prefixed chart with newer ones."""
    import json

    p = on("cpu")
    p.makepyfile(
        test_dt="""
        import pytest

        @pytest.mark.gpu_dtype("fp32")
        @pytest.mark.parametrize("n", [4])
        def test_d(gpu_benchmark, gpu_dtype, n):
            gpu_benchmark.record("value", 1.0, "items")
        """
    )
    p.runpytest("--gpuperf-json=out.json").assert_outcomes(passed=1)
    (result,) = json.loads((p.path / "out.json").read_text())["results"]
    assert result["params"] == {"dtype": "fp32", "n": 4}


@pytest.mark.parametrize(
    ("decorator", "fragment"),
    [
        (
            'gpu_requires_vram("40 gigs")',
            "@pytest.mark.gpu_requires_vram: unknown unit 'gigs' in size '40 gigs': use one of B, kB*",
        ),
        (
            "gpu_requires_vram(-1)",
            "@pytest.mark.gpu_requires_vram: size must be a positive number of bytes, got -1",
        ),
        (
            "gpu_requires_vram(40)",
            "@pytest.mark.gpu_requires_vram: gpu_requires_vram(40): 40 bytes is surely not meant: write '40GiB' or 40 [*] 2[*][*]30",
        ),
        (
            "gpu_requires_gpus(0)",
            "@pytest.mark.gpu_requires_gpus: expected a GPU count of at least 1, got 0",
        ),
        (
            'gpu_requires_mig("huge")',
            "@pytest.mark.gpu_requires_mig: expected a MIG slice profile such as '1g.10gb', got 'huge'",
        ),
        (
            'gpu_requires_capability("eight")',
            "@pytest.mark.gpu_requires_capability: expected a compute capability such as '8.0', got 'eight'",
        ),
        ('gpu_dtype("fp64x")', "@pytest.mark.gpu_dtype: unknown dtype 'fp64x'*"),
    ],
)
def test_bad_marker_argument_is_a_collection_error_naming_test_marker_value(
    on, decorator, fragment
):
    p = on("h200")
    p.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.mark.{decorator}
        def test_it(gpu_dtype=None):
            pass
        """
    )
    result = p.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*ERROR collecting test_bad.py*", f"test_bad.py::test_it: {fragment}"]
    )
    assert "Traceback" not in result.stdout.str()


def test_dtype_marker_needs_a_dtype_argument(on):
    p = on("h200")
    p.makepyfile(test_x="import pytest\n@pytest.mark.gpu_dtype('bf16')\ndef test_x():\n    pass\n")
    result = p.runpytest()
    result.stdout.fnmatch_lines(
        ["test_x.py::test_x: @pytest.mark.gpu_dtype: the test must take a `gpu_dtype` argument"]
    )


def test_markers_are_registered_and_documented(pytester):
    result = pytester.runpytest("--markers")
    for name in (
        "gpu_requires_vram(size)",
        "gpu_requires_mig(profile=None)",
        "gpu_requires_gpus(n)",
        "gpu_requires_capability('8.0')",
        "gpu_dtype('fp32'",
    ):
        result.stdout.fnmatch_lines([f"@pytest.mark.{name}*"])


def test_gpu_profiles_lists_builtin_and_user_profiles(pytester):
    pytester.makepyprojecttoml(
        '[tool.gpuperf.profiles.rtx4090]\nmatch = "RTX 4090"\nmemory_gib = 24\nprice_per_hour = 0.69\n'
    )
    result = pytester.runpytest("--gpuperf-profiles")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "a100-40gb *NVIDIA A100 40 GB, 40 GB, sm 8.0, bf16/tf32, MIG 7x1g.5gb*",
            "h200 *",
            "cpu *",
            "rtx4090 *rtx4090, 24 GB, $0.69/h*",
        ]
    )


def test_bad_user_profile_is_a_usage_error(pytester):
    pytester.makepyprojecttoml("[tool.gpuperf.profiles.x]\nmemory_gib = 24\n")
    result = pytester.runpytest("--gpuperf-profiles")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.gpuperf.profiles.x[]]: a new profile needs 'match'*"])


def test_gpu_info_prints_the_snapshot(pytester):
    result = pytester.runpytest_subprocess("--gpuperf-info")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["device: *", "*torch: *", "*profile: *"])


def test_unknown_profile_name_says_what_it_may_have_meant(on):
    p = on("h200")
    result = p.runpytest("--gpu-profile=h2000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--gpu-profile: unknown GPU profile 'h2000'; did you mean 'h200'* (known profiles: a100-40gb, a100-80gb, h100, h200*"]
    )


@pytest.mark.parametrize(
    ("device", "name", "profile"),
    [("a100-40", "a100", "a100-40gb"), ("a100-80", "A100", "a100-80gb"), ("h200", "H200", "h200"), ("t4", "T4", "t4")],
)
def test_a_family_name_resolves_to_the_detected_variant(on, device, name, profile):
    p = on(device)
    p.makepyfile(test_f=f"def test_f(gpu_profile):\n    assert gpu_profile.name == {profile!r}\n")
    p.runpytest(f"--gpu-profile={name}").assert_outcomes(passed=1)


def test_a_family_name_on_another_card_lists_the_variants(on):
    p = on("h200")
    result = p.runpytest("--gpu-profile=a100")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*'a100' is a family of GPU profiles (a100-40gb, a100-80gb) and this machine (NVIDIA H200*) matches none of them: name the variant, e.g. a100-40gb*"]
    )


def test_a_family_name_on_a_cpu_machine_names_the_cpu_profile_at_once(on):
    p = on("cpu")
    result = p.runpytest("--gpu-profile=a100")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--gpu-profile: 'a100' is a family of GPU profiles (a100-40gb, a100-80gb), but this is a CPU machine (*): use --gpu-profile=cpu (its profile) or --gpu-profile=auto*name the variant, e.g. a100-40gb, and pass --gpuperf-allow-mismatch*"]
    )


def test_an_unknown_profile_name_says_where_to_add_one(on):
    p = on("h200")
    result = p.runpytest("--gpu-profile=rtx4090")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown GPU profile 'rtx4090'*pyproject.toml under [[]tool.gpuperf.profiles.rtx4090[]]*"])


def test_profile_mismatch_stops_the_run_unless_allowed(on):
    p = on("h200")
    p.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = p.runpytest("--gpu-profile=a100-40gb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--gpu-profile=a100-40gb does not match this machine: detected NVIDIA H200*(profile: h200)*--gpuperf-allow-mismatch*"
        ]
    )
    result = p.runpytest("--gpu-profile=a100-40gb", "--gpuperf-allow-mismatch")
    result.assert_outcomes(passed=1)
    result = p.runpytest("--gpu-profile=h200")
    result.assert_outcomes(passed=1)


def test_profile_from_ini(on):
    p = on("h200")
    p.makeini("[pytest]\ngpuperf_profile = t4\n")
    p.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = p.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-profile=t4 does not match*"])


def test_fixtures_expose_device_and_profile(on):
    p = on("h200")
    p.makepyfile(
        test_f="""
        def test_f(gpu_device, gpu_profile):
            assert gpu_device.primary.name == "NVIDIA H200"
            assert gpu_profile.name == "h200"
        """
    )
    p.runpytest().assert_outcomes(passed=1)


def test_disabling_the_plugin(pytester):
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:gpuperf", "--strict-markers")
    result.assert_outcomes(passed=1)


def test_emulation_caps_vram_decisions(on):
    p = on("h200")
    p.makepyfile(
        test_e="""
        import pytest

        @pytest.mark.gpu_requires_vram("48GB")
        def test_48(gpu_emulation):
            assert gpu_emulation.name == "rtx-6000-ada"

        @pytest.mark.gpu_requires_vram("44GiB")
        def test_44():
            pass
        """
    )
    result = p.runpytest("-rs", "--gpuperf-emulate=a100-40gb")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        ["*needs 44.0 GiB of GPU memory, 40.0 GiB available on NVIDIA H200 (emulated cap)"]
    )
    result = p.runpytest("-rs", "--gpuperf-emulate=rtx-6000-ada")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("device", "arg", "fragment"),
    [
        ("h200", "a100", "--gpuperf-emulate: 'a100' is a family of GPU profiles (a100-40gb, a100-80gb): name the variant, e.g. a100-40gb"),
        ("h200", "a10O", "--gpuperf-emulate: unknown GPU profile 'a10O'; did you mean"),
        ("cpu", "a100-40gb", "--gpuperf-emulate=a100-40gb caps GPU memory, and this run has no GPU"),
        ("t4", "a100-40gb", "--gpuperf-emulate=a100-40gb (40 GiB) is larger than this GPU (Tesla T4"),
        ("h200", "cpu", "--gpuperf-emulate=cpu: the profile has no memory size to emulate"),
    ],
)
def test_bad_emulation_is_a_usage_error(on, device, arg, fragment):
    p = on(device)
    p.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = p.runpytest(f"--gpuperf-emulate={arg}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{fragment}*"])


def test_marker_name_lists_agree():
    from pytest_gpuperf import plugin
    from pytest_gpuperf.hardware import marks

    assert set(plugin.REQUIREMENT_MARKERS) == set(marks.PARSERS)
    assert set(plugin.REQUIREMENT_MARKERS) | {"gpuperf", "gpu_dtype"} == set(plugin.MARKERS)


# ------------------------------------------------------------- one GPU per xdist worker


def test_each_xdist_worker_gets_its_own_gpu(monkeypatch):
    from pytest_gpuperf.run.options import Options
    from pytest_gpuperf.run.session import GpuPerfSession
    from tests.fakes import gpu, snapshot

    two = snapshot(gpu(uuid="GPU-aaa"), gpu(uuid="GPU-bbb"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for worker, uuid in (("gw0", "GPU-aaa"), ("gw1", "GPU-bbb")):
        sess = GpuPerfSession(Options(), None)
        sess.set_snapshot(two)
        sess.assign_worker_gpu(worker, 2)
        assert __import__("os").environ["CUDA_VISIBLE_DEVICES"] == uuid
        assert sess.snapshot().gpu_count == 1 and sess.snapshot().primary.uuid == uuid
    sess = GpuPerfSession(Options(), None)
    sess.set_snapshot(two)
    with pytest.raises(pytest.UsageError, match=r"pytest -n 3 on 2 visible GPU\(s\): each worker needs a GPU of its own"):
        sess.assign_worker_gpu("gw2", 3)
    cpu = GpuPerfSession(Options(), None)
    cpu.set_snapshot(snapshot())
    cpu.assign_worker_gpu("gw5", 8)  # the CPU suite may use any number of workers


def test_more_workers_than_gpus_is_a_usage_error(on):
    pytest.importorskip("xdist")
    p = on("h200")  # one GPU
    p.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = p.runpytest("-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest -n 2 on 1 visible GPU(s): each worker needs a GPU of its own*use -n 1*"])


def test_each_result_names_the_gpu_of_the_host_it_ran_on(monkeypatch):
    """Under -n 2 the results of the two workers say which GPU each ran on."""
    from pytest_gpuperf.measure.bench import GpuBenchmark
    from pytest_gpuperf.run.options import Options
    from pytest_gpuperf.run.session import GpuPerfSession
    from tests.fakes import gpu, snapshot

    two = snapshot(
        gpu(uuid="GPU-aaa", pci_bus_id="00000000:19:00.0"),
        replace(gpu(uuid="GPU-bbb", pci_bus_id="00000000:3B:00.0"), index=1),
    )
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sess = GpuPerfSession(Options(), None)
    sess.set_snapshot(two)
    sess.assign_worker_gpu("gw1", 2)
    bench = GpuBenchmark("t.py::test_x", sess.snapshot(), [], None)
    r = bench.record("max_batch", 24, "samples")
    assert r.gpu == "GPU 1 (00000000:3B:00.0)"
    assert Result.from_dict(r.to_dict()).gpu == r.gpu


TWO_TESTS = """
import pytest

def test_one_gpu(gpu_benchmark):
    gpu_benchmark.record("max_batch", 24, "samples")

@pytest.mark.gpu_requires_gpus(2)
def test_both_gpus(gpu_benchmark):
    gpu_benchmark.record("busbw", 325.0, "GB/s")
"""


def test_a_baseline_knows_how_many_gpus_each_benchmark_used(on):
    """On a 2-GPU host a single-GPU benchmark is a 1-GPU figure, comparable with a 1-GPU
    runner's baseline; a gpu_requires_gpus(2) benchmark is a 2-GPU figure with its link."""
    import json

    p = on("h200")
    p.makeconftest(TWO_GPU_HOST)
    p.makepyfile(test_g=TWO_TESTS)
    p.runpytest("-p", "no:cacheprovider", "--gpuperf-baseline=save").assert_outcomes(passed=2)
    entries = json.loads((p.path / "baselines" / "h200.json").read_text())["entries"]
    one = entries["test_g.py::test_one_gpu::max_batch"]["environment"]
    two = entries["test_g.py::test_both_gpus::busbw"]["environment"]
    assert (one["gpus"], one["interconnect"]) == (1, None)
    assert (two["gpus"], two["interconnect"]) == (2, "NVLink (18 links)")


def test_env_for_narrows_the_host_to_the_gpus_a_result_used():
    from pytest_gpuperf.baseline.history import env_for

    env = {"gpu": "NVIDIA H200", "gpus": 2, "interconnect": "NVLink (18 links)"}
    one, two = Result("t", None, "samples", 1.0), Result("t", None, "GB/s", 1.0, gpus_used=2)
    assert env_for(env, one.gpus_used) == {"gpu": "NVIDIA H200", "gpus": 1, "interconnect": None}
    assert env_for(env, two.gpus_used) == env
    single = {"gpu": "NVIDIA H200", "gpus": 1, "interconnect": None}
    assert env_for(single, two.gpus_used) == single  # a 1-GPU host ran it on what it had


def test_every_bad_marker_of_a_file_is_reported_in_one_run(on):
    """Issue 64: each bad marker used to cost a run of its own (the first one stopped the
    file's collection); now the file's collection error lists every one of them."""
    p = on("h200")
    p.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.gpu_requires_vram("40 gigs")
        @pytest.mark.gpu_requires_gpus(0)
        def test_a():
            pass

        def test_fine():
            pass

        @pytest.mark.gpuperf(tolerance="x")
        def test_b():
            pass

        @pytest.mark.gpu_dtype("fp64x")
        def test_c(gpu_dtype):
            pass
        """
    )
    result = p.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*ERROR collecting test_bad.py*",
        "test_bad.py::test_a: @pytest.mark.gpu_requires_vram: unknown unit 'gigs'*",
        "test_bad.py::test_a: @pytest.mark.gpu_requires_gpus: expected a GPU count of at least 1, got 0",
        "test_bad.py::test_b: @pytest.mark.gpuperf: *tolerance='x'*",
        "test_bad.py::test_c: @pytest.mark.gpu_dtype: unknown dtype 'fp64x'*",
        "*1 error*",
    ])  # fmt: skip
    assert "Traceback" not in result.stdout.str()

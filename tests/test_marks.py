"""Marker parsing and skip decisions: pure functions, no pytest session, no GPU."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.hardware import marks
from pytest_gpuperf.hardware.device import GPUInfo
from pytest_gpuperf.hardware.marks import MarkerError
from tests.fakes import gpu, snapshot

H200 = snapshot(gpu())
T4 = snapshot(gpu("Tesla T4", 15360, (7, 5)))
CPU = snapshot()
MIG_1G = snapshot(
    gpu(
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
        4864,
        (8, 0),
        mig_profile="1g.5gb",
        parent_name="NVIDIA A100-SXM4-40GB",
        parent_memory_total=40960 * 1024**2,
    )
)


def vram(size):
    return marks.parse_requires_vram((size,), {})


def test_vram_fits_and_does_not_fit():
    assert marks.evaluate(vram("40GiB"), H200) is None
    reason = marks.evaluate(vram("40GiB"), T4)
    assert reason == "needs 40.0 GiB of GPU memory, 15.0 GiB available on Tesla T4"


def test_vram_on_cpu_skips_and_says_why():
    reason = marks.evaluate(vram("1GiB"), CPU)
    assert reason.startswith("needs a GPU with 1.0 GiB; no GPU visible")


def test_a_vram_need_beyond_a_floats_range_skips_with_its_size():
    assert marks.evaluate(vram(10**400), CPU).startswith("needs a GPU with 9.1e+387 TiB")
    assert marks.evaluate(vram(10**400), H200).startswith("needs 9.1e+387 TiB of GPU memory")


def test_vram_uses_the_mig_slice_not_the_card():
    reason = marks.evaluate(vram("8GiB"), MIG_1G)
    assert reason == "needs 8.0 GiB of GPU memory, 4.8 GiB available on MIG 1g.5gb"


def test_vram_under_emulation_cap():
    reason = marks.evaluate(vram("48GiB"), H200, vram_cap=40 * 1024**3)
    assert reason == (
        "needs 48.0 GiB of GPU memory, 40.0 GiB available on NVIDIA H200 (emulated cap)"
    )
    assert marks.evaluate(vram("39GiB"), H200, vram_cap=40 * 1024**3) is None


@given(st.integers(min_value=1, max_value=2**45), st.integers(min_value=1, max_value=2**45))
def test_vram_decision_is_a_comparison(need, have):
    snap = snapshot(GPUInfo(index=0, name="G", memory_total=have))
    reason = marks.evaluate(marks.VRAM(need), snap)
    assert (reason is None) == (have >= need)


def test_mig_requirements():
    any_mig = marks.parse_requires_mig((), {})
    assert marks.evaluate(any_mig, MIG_1G) is None
    assert (
        marks.evaluate(any_mig, H200) == "needs a MIG instance; NVIDIA H200 is not a MIG instance"
    )
    want = marks.parse_requires_mig(("1g.10gb",), {})
    assert marks.evaluate(want, MIG_1G) == "needs MIG slice 1g.10gb, running on 1g.5gb"
    assert marks.evaluate(marks.parse_requires_mig(("1g.5gb",), {}), MIG_1G) is None
    assert "no GPU visible" in marks.evaluate(any_mig, CPU)


def test_gpu_count():
    two = marks.parse_requires_gpus((2,), {})
    assert marks.evaluate(two, H200) == "needs 2 GPU(s), 1 visible"
    assert marks.evaluate(two, snapshot(gpu(), gpu())) is None
    assert marks.evaluate(marks.parse_requires_gpus((1,), {}), CPU).startswith(
        "needs 1 GPU(s), 0 visible"
    )


def test_capability():
    cc8 = marks.parse_requires_capability(("8.0",), {})
    assert marks.evaluate(cc8, H200) is None
    assert marks.evaluate(cc8, T4) == "needs compute capability 8.0, Tesla T4 has 7.5"
    assert marks.parse_requires_capability(((8, 9),), {}) == marks.Capability(8, 9)
    assert marks.parse_requires_capability((), {"capability": "9.0"}) == marks.Capability(9, 0)


def test_dtype_parsing_and_aliases():
    specs = marks.parse_dtype_marker(("fp32", "float16", "bfloat16", "tf32"), {})
    assert [s.name for s in specs] == ["fp32", "fp16", "bf16", "tf32"]
    assert [s.name for s in marks.parse_dtype_marker((["fp16", "bf16"],), {})] == ["fp16", "bf16"]


def test_dtype_accepts_torch_dtypes():
    torch = pytest.importorskip("torch")
    specs = marks.parse_dtype_marker((torch.bfloat16, torch.float32), {})
    assert [s.name for s in specs] == ["bf16", "fp32"]
    assert specs[0].torch_dtype() is torch.bfloat16


def test_dtype_decisions():
    bf16, fp16, fp8 = (marks.DTYPES[n] for n in ("bf16", "fp16", "fp8_e4m3"))
    assert marks.evaluate_dtype(bf16, T4) == "bf16 needs compute capability 8.0, Tesla T4 has 7.5"
    assert marks.evaluate_dtype(fp16, T4) is None
    assert marks.evaluate_dtype(bf16, H200) is None
    a100 = snapshot(gpu("NVIDIA A100-SXM4-40GB", 40960, (8, 0)))
    assert "fp8_e4m3 needs compute capability 8.9" in marks.evaluate_dtype(fp8, a100)
    assert marks.evaluate_dtype(bf16, CPU) is None  # the CPU runs every dtype


def test_a_bare_vram_number_under_a_mebibyte_is_refused_naming_the_unit():
    with pytest.raises(MarkerError) as info:
        vram(40)
    assert str(info.value) == (
        "gpu_requires_vram(40): 40 bytes is surely not meant: write '40GiB' or 40 * 2**30"
    )
    with pytest.raises(MarkerError, match=r"gpu_requires_vram\('40'\): 40 bytes .* write '40GiB'"):
        vram("40")
    assert vram(2**20).bytes == 2**20  # a byte count is still fine from 1 MiB up
    assert vram("512KiB").bytes == 512 * 1024  # a unit written is taken as meant


@pytest.mark.parametrize(
    ("parser", "args", "kwargs", "fragment"),
    [
        (marks.parse_requires_vram, ("40 gigs",), {}, "unknown unit 'gigs'"),
        (marks.parse_requires_vram, (-1,), {}, "positive"),
        (marks.parse_requires_vram, (), {}, "exactly one argument"),
        (marks.parse_requires_vram, ("1GiB", "2GiB"), {}, "exactly one argument"),
        (marks.parse_requires_gpus, (0,), {}, "at least 1, got 0"),
        (marks.parse_requires_gpus, ("2",), {}, "got '2'"),
        (marks.parse_requires_gpus, (True,), {}, "got True"),
        (marks.parse_requires_mig, ("big",), {}, "got 'big'"),
        (marks.parse_requires_capability, ("eight",), {}, "got 'eight'"),
        (marks.parse_requires_capability, (8.0,), {}, "got 8.0"),
        (marks.parse_dtype_marker, ("fp64x",), {}, "unknown dtype 'fp64x'"),
        (marks.parse_dtype_marker, (), {}, "at least one dtype"),
        (marks.parse_dtype_marker, ("fp16", "half"), {}, "listed twice"),
        (marks.parse_dtype_marker, (3,), {}, "got 3"),
        (marks.parse_dtype_marker, ("fp16",), {"x": 1}, "keyword"),
    ],
)
def test_bad_marker_arguments(parser, args, kwargs, fragment):
    with pytest.raises(MarkerError) as info:
        parser(args, kwargs)
    assert fragment in str(info.value)

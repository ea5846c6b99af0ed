"""The paired stage keeps one process of each build alive through a test's rounds
(paired/rounds.py), so both hold the test's models at once. On an H100 80GB (2026-12-06,
docs/evidence/h100-2026-12-06-c) a 70B QLoRA step (gpu_requires_vram("44GiB"), 36 GiB held
in the first stage) failed out of memory in both builds' rounds and spent 137 s of the
stage's time; it fits twice on an H200. A test whose two builds cannot hold their memory at
once is now left to the first stage up front, saying so (paired/plan.held_twice)."""

from __future__ import annotations

import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.hardware.device import DeviceSnapshot, GPUInfo
from pytest_gpuperf.hardware.marks import usable_memory
from pytest_gpuperf.measure.bench import GpuBenchmark
from pytest_gpuperf.paired.plan import affordable, held_twice
from pytest_gpuperf.plugin.fixtures import _vram_asked

from .fakes import snapshot
from .test_schemas import errors, schema

GIB = 2**30
H100 = 85_520_809_984  # NVML's total of an H100 80GB HBM3 (79.6 GiB)
H200 = 150_754_820_096  # an H200's (140.4 GiB)
BIG = "benchmarks/test_finetune.py::test_qlora_step[llama2-70b]"


def _held(nodeid, resident=0, foreign=0, reserved=None, allocated=None, asked=None):
    """A measurement's memory as the results record it, and its marker's ask."""
    return types.SimpleNamespace(nodeid=nodeid, kind="measured", resident_allocated=resident,
                                 foreign_allocated=foreign, peak_reserved=reserved,
                                 peak_allocated=allocated, measure_s=1.0, kernel_s=0.0,
                                 kernel_time=None,
                                 config={} if asked is None else {"vram_asked": asked},
                                 verdicts={"throughput": from_json({"status": "inconclusive"})})  # fmt: skip


# the 70B step's figures on the H100 (call4/s/compare-finetune-082020.json)
MEASURED = dict(resident=37_876_213_760, foreign=4_713_859_072, reserved=5_454_692_352,
                allocated=4_246_880_264)  # fmt: skip
SEVENTY = _held(BIG, asked=44 * GIB, **MEASURED)


def test_the_h100s_70b_step_is_left_out_and_the_h200s_kept():
    assert held_twice([BIG], [SEVENTY], H100) == {BIG: 44 * GIB}
    assert held_twice([BIG], [SEVENTY], H200) == {}
    # what it held alone (33.2 GB own + 5.5 GB reserved peak) fits twice on the H100: the
    # marker's ask is what tells
    held = 37_876_213_760 - 4_713_859_072 + 5_454_692_352
    unmarked = _held(BIG, **MEASURED)
    assert held_twice([BIG], [unmarked], H100) == {}
    assert held_twice([BIG], [unmarked], 2 * held - 1) == {BIG: held}
    assert held_twice([BIG], [SEVENTY], None) == {}  # the GPU's memory not known
    # the ask is a requirement: asked 40 GiB, a test is left out on an H100 whatever it held
    assert held_twice(["t.py::x"], [_held("t.py::x", reserved=GIB, asked=40 * GIB)], H100) == {
        "t.py::x": 40 * GIB}  # fmt: skip


def test_a_test_without_a_marker_is_judged_by_what_it_held():
    t = "t.py::big"
    assert held_twice([t], [_held(t, resident=30 * GIB, reserved=12 * GIB)], H100) == {
        t: 42 * GIB}  # fmt: skip
    # another test's memory resident during it is not its own; a peak it did not reserve
    # falls back to the allocated one
    assert held_twice([t], [_held(t, resident=30 * GIB, foreign=20 * GIB,
                                  allocated=12 * GIB)], H100) == {}  # fmt: skip
    # results of other tests and recorded figures without memory count for nothing, and
    # an ask that is not a count of bytes is none
    other = _held("t.py::other", resident=70 * GIB, asked=70 * GIB)
    bare = _held(t, resident=None, foreign=None)
    odd = _held(t, asked=True)
    odd.config["vram_asked"] = "44GiB"
    assert held_twice([t], [other, bare, odd, _held(t, asked=True)], H100) == {}


@given(asked=st.integers(0, 200 * GIB), resident=st.integers(0, 200 * GIB),
       foreign=st.integers(0, 200 * GIB), reserved=st.integers(0, 50 * GIB),
       have=st.integers(GIB, 300 * GIB))  # fmt: skip
def test_a_test_is_left_out_exactly_when_twice_its_need_passes_the_gpu(
    asked, resident, foreign, reserved, have
):
    r = _held("t.py::x", resident=resident, foreign=foreign, reserved=reserved, asked=asked)
    need = max(asked, max(0, resident - foreign) + reserved)
    out = held_twice(["t.py::x"], [r], have)
    assert out == ({"t.py::x": need} if 2 * need > have else {})
    # more memory never leaves out more
    assert set(held_twice(["t.py::x"], [r], have * 2)) <= set(out)


def test_the_stage_says_which_tests_it_leaves_out_for_memory_and_measures_the_rest():
    small = _held("t.py::small", resident=2 * GIB, reserved=GIB)
    every = [SEVENTY, small]
    todo = [(r, "throughput", "model") for r in every]
    names = [r.nodeid for r in every]
    kept_todo, kept, said = affordable(todo, names, every, dict.fromkeys(names, 3.0), 0.5, 1e6,
                                       2, gpu_bytes=H100)  # fmt: skip
    assert kept == ["t.py::small"] and [t[0].nodeid for t in kept_todo] == kept
    assert said == ("1 test(s) whose two builds cannot hold their GPU memory at once (a round "
                    "keeps a process of each build alive; this GPU has 79.6 GiB), left out: "
                    "test_qlora_step[llama2-70b] 44.0 GiB a build")
    # the same run on an H200 measures both, and says nothing of memory
    _, kept, said = affordable(todo, names, every, dict.fromkeys(names, 3.0), 0.5, 1e6, 2,
                               gpu_bytes=H200)  # fmt: skip
    assert kept == sorted(names) and said == ""
    # left out for memory, it is not priced against the budget either: the small test fits
    _, kept, said = affordable(todo, names, every, {BIG: 500.0, "t.py::small": 3.0}, 0.5,
                               200.0, 2, gpu_bytes=H100)  # fmt: skip
    assert kept == ["t.py::small"] and "would not fit the budget" not in said


def test_a_measurement_carries_its_tests_ask_to_the_stage(pytester):
    """The ask travels in each result's config (`vram_asked`), as a pytest-xdist worker's
    results reach the controller that runs the stage (whose own session collects no
    items): the most of a test's gpu_requires_vram markers, none without one."""
    items = pytester.getitems("""
        import pytest

        @pytest.mark.gpu_requires_vram("44GiB")
        def test_big():
            pass

        @pytest.mark.gpu_requires_vram("8GiB")
        @pytest.mark.gpu_requires_vram(size="16GiB")
        def test_two():
            pass

        def test_none():
            pass
    """)
    assert [_vram_asked(i) for i in items] == [44 * GIB, 16 * GIB, None]
    assert _vram_asked(object()) is None  # not a test item
    jsonschema = pytest.importorskip("jsonschema")
    shipped = schema("results")  # a result as the results file's schema describes one
    one_result = jsonschema.Draft202012Validator({"$defs": shipped["$defs"],
                                                  "$ref": "#/$defs/result"})  # fmt: skip
    for asked in (44 * GIB, None):
        bench = GpuBenchmark("t.py::t", snapshot(), [], None, vram_asked=asked)
        r = bench.from_samples([0.01, 0.011, 0.012], work=1, unit="calls")
        assert r.config.get("vram_asked") == asked
        again = Result.from_dict(r.to_dict())  # as a worker's result reaches the controller
        assert again.config.get("vram_asked") == asked
        assert held_twice(["t.py::t"], [again], H100) == ({"t.py::t": asked} if asked else {})
        assert errors(one_result, r.to_dict()) == []


def _gpu(memory_total):
    return GPUInfo(index=0, name="NVIDIA H100 80GB HBM3", memory_total=memory_total)


def test_usable_memory_is_the_gpus_or_an_emulated_cards_where_smaller():
    assert usable_memory(_gpu(H100), None) == H100
    assert usable_memory(_gpu(H100), 40 * GIB) == 40 * GIB  # --gpuperf-emulate a 40 GB card
    assert usable_memory(_gpu(H100), H200) == H100  # a larger card's cap takes nothing away
    assert usable_memory(_gpu(None), 40 * GIB) == 40 * GIB
    assert usable_memory(_gpu(None), None) is None  # NVML could not tell
    assert usable_memory(DeviceSnapshot(kind="cpu").primary, 40 * GIB) is None  # no GPU


def test_a_run_whose_test_cannot_be_held_twice_says_so_and_its_checked_figure_is_unchecked(
    monkeypatch,
):
    """run_stage end to end (no rounds start): the run's GPU memory reaches the plan."""
    from .test_paired_kernels import KERNELS, _run, _stage_of

    r = _run("regressed", change=-0.0292)
    r.resident_allocated, r.peak_reserved = 40 * GIB, 2 * GIB
    stage = _stage_of(monkeypatch, r, cost_s=1.0, gpu_bytes=H100)
    assert stage is not None
    assert ("1 test(s) whose two builds cannot hold their GPU memory at once (a round keeps a "
            "process of each build alive; this GPU has 79.6 GiB), left out: mm 42.0 GiB a "
            "build") in stage.line, stage.line
    assert r.verdicts[KERNELS].status == "inconclusive"  # a checked figure left unchecked
    assert "its test was left out of the rounds" in r.verdicts[KERNELS].reason


def test_the_run_hands_its_gpus_memory_through_to_the_stage(monkeypatch):
    """run/session.py's paired_stage gives after_judgement the GPU's memory (an emulated
    card's where smaller), and after_judgement gives it to run_stage."""
    import pytest_gpuperf.paired.stage as paired
    from pytest_gpuperf.run.options import Options
    from pytest_gpuperf.run.session import GpuPerfSession

    from .fakes import gpu

    seen = []
    monkeypatch.setattr(paired, "run_stage", lambda *a, **kw: seen.append(kw["gpu_bytes"]))
    base = types.SimpleNamespace(entries={}, judgement=None)
    opts = types.SimpleNamespace(paired_budget=100.0, paired_rounds=6, false_alarm=0.01,
                                 paired_setup=None)
    assert paired.after_judgement(None, base, [], opts, {}, {}, None, H100) == ([], False)
    assert seen == [H100]

    handed = []
    monkeypatch.setattr(paired, "after_judgement",
                        lambda *a: handed.append(a[-1]) or ([], False))  # fmt: skip
    sess = GpuPerfSession(Options(), None)
    sess.set_snapshot(snapshot(gpu("NVIDIA H100 80GB HBM3", 81559)))
    monkeypatch.setattr(sess.base, "paired_wanted", lambda: True)
    sess.paired_stage(types.SimpleNamespace(getoption=lambda *a, **k: None,
                                            getini=lambda name: ""))  # fmt: skip
    monkeypatch.setattr(sess, "vram_cap", lambda: 40 * GIB)  # --gpuperf-emulate a 40 GB card
    sess.paired_stage(types.SimpleNamespace(getoption=lambda *a, **k: None,
                                            getini=lambda name: ""))  # fmt: skip
    assert handed == [H100, 40 * GIB]

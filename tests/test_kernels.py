"""The GPU's own kernel time of launch-bound work (measure/kernels.py): the union of traced
activity intervals, each chunk's time per call, the profiler pass (driven by torch's own
profiler schedule, over a fake profiler whose "GPU" is the test's), and the engine's use of
it. The real profiler on a real GPU: tests/test_gpu.py."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.settings import resolve
from pytest_gpuperf.core.stats import summarize
from pytest_gpuperf.measure import kernels, timing
from pytest_gpuperf.measure.kernels import (
    chunk_count,
    device_spans,
    kernel_summary,
    profile_chunks,
    union_length,
)

from .fakes import FakeCudaMemory, fake_torch

CUDA, CPU = "cuda", "cpu"  # stand-ins for torch.autograd.DeviceType's members

span = st.tuples(st.integers(0, 200), st.integers(0, 200))


@given(st.lists(span, max_size=30))
def test_the_union_counts_every_covered_instant_once(spans):
    covered = {t for s, e in spans for t in range(s, e)}  # unit cells [t, t+1)
    assert union_length(spans) == len(covered)


@given(st.lists(span, min_size=1, max_size=20), st.integers(1, 500))
def test_the_union_of_shifted_copies_never_grows(spans, shift):
    """Work overlapping on two streams counts once: the same spans twice add nothing; a
    copy moved past them adds exactly their own length."""
    assert union_length(spans + spans) == union_length(spans)
    far = [(s + 1000 + shift, e + 1000 + shift) for s, e in spans]
    assert union_length(spans + far) == 2 * union_length(spans)


def _event(device, start, end):
    return SimpleNamespace(device_type=device, time_range=SimpleNamespace(start=start, end=end))


def test_device_spans_are_the_device_side_events_only():
    events = [_event(CPU, 0, 50), _event(CUDA, 10, 20), _event(CUDA, 15, 30)]
    assert device_spans(events, CUDA) == [(10.0, 20.0), (15.0, 30.0)]


class _Raw:
    """A kineto event as torch's raw profiler result gives it: accessors, nanoseconds."""

    def __init__(self, device, start_ns, end_ns):
        self._d, self._s, self._e = device, start_ns, end_ns

    def device_type(self):
        return self._d

    def start_ns(self):
        return self._s

    def end_ns(self):
        return self._e


def test_traced_spans_read_the_raw_result_without_parsing_the_events():
    t0 = 1_700_000_000_000_000_000  # ns since the epoch: spans are from the trace's start
    raw = SimpleNamespace(
        trace_start_ns=lambda: t0,
        events=lambda: [_Raw(CPU, t0, t0 + 50_000), _Raw(CUDA, t0 + 10_000, t0 + 20_500),
                        _Raw(CUDA, t0 + 15_000, t0 + 30_000)],
    )  # fmt: skip

    def parse():
        raise AssertionError("events() parsed although the raw result was there")

    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=raw), events=parse)
    assert kernels.traced_spans(prof, CUDA) == [(10.0, 20.5), (15.0, 30.0)]
    # no raw result (another profiler, a torch without it): the parsed events
    parsed = SimpleNamespace(profiler=None, events=lambda: [_event(CUDA, 1, 4), _event(CPU, 0, 9)])
    assert kernels.traced_spans(parsed, CUDA) == [(1.0, 4.0)]
    # a raw result with events but none on the device (a device type that no longer
    # compares equal): the parsed events answer, not an empty trace read as "no CUPTI"
    odd = SimpleNamespace(trace_start_ns=lambda: 0, events=lambda: [_Raw("cuda:0", 1000, 4000)])
    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=odd),
                           events=lambda: [_event(CUDA, 1, 4)])  # fmt: skip
    assert kernels.traced_spans(prof, CUDA) == [(1.0, 4.0)]
    # nothing traced at all: nothing, without parsing
    empty = SimpleNamespace(trace_start_ns=lambda: 0, events=lambda: [])
    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=empty), events=parse)
    assert kernels.traced_spans(prof, CUDA) == []


def test_each_chunks_kernel_time_is_its_union_over_its_calls():
    # chunk 1: two streams overlapping 10-20 and 15-30 (20 us) + a copy 40-45 (5 us);
    # chunk 2: one 24 us kernel; 4 calls per chunk
    traced = [[(10, 20), (15, 30), (40, 45)], [(100, 124)]]
    s = kernel_summary(traced, calls=4, confidence=0.95)
    assert not isinstance(s, str)
    assert s.n == 2 and s.max == pytest.approx(25e-6 / 4) and s.min == pytest.approx(6e-6)


def test_no_figure_is_made_where_the_profiler_traced_nothing():
    assert "traced no kernels" in kernel_summary([[], []], 1, 0.95)  # type: ignore[operator]
    partly = kernel_summary([[(0, 5)], [], [(0, 0)]], 1, 0.95)
    assert partly == "the profiler traced no GPU activity in 2 of 3 chunks"
    assert kernel_summary([], 1, 0.95) == "no chunk was traced"


@pytest.mark.parametrize(
    ("sample_s", "lo", "hi", "expected"),
    [(1e-3, 10, 10**6, kernels.KERNEL_CHUNKS_MAX), (0.05, 10, 10**6, 10), (0.05, 3, 10**6, 3),
     (1e-3, 10, 4, 4), (0.0, 10, 10**6, kernels.KERNEL_CHUNKS_MAX)],
)  # fmt: skip
def test_a_pass_has_min_samples_chunks_within_its_caps(sample_s, lo, hi, expected):
    assert chunk_count(sample_s, lo, hi) == expected


# ---------------------------------------------------------------- the profiler pass


class FakeGpu:
    """A device whose activity the test makes: `launch(us)` runs a kernel of `us`
    microseconds; a fake profile (below) sees the kernels launched while it records."""

    def __init__(self) -> None:
        self.now, self.recording, self.seen = 0.0, False, []

    def launch(self, us: float) -> None:
        if self.recording:
            self.seen.append(_event(CUDA, self.now, self.now + us))
        self.now += us + 1.0  # a gap between kernels: the host launching the next


def fake_profiler(gpu: FakeGpu, fail: bool = False) -> SimpleNamespace:
    """torch.profiler's `profile` reduced to its step protocol, driven by torch's own
    `schedule` (the real one decides which steps are traced)."""
    from torch.profiler import ProfilerAction, schedule

    recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    class Profile:
        def __init__(self, *, schedule, on_trace_ready, **options):
            assert options["activities"] == ["CUDA"] and not options["record_shapes"]
            assert not options["with_stack"] and not options["profile_memory"]
            self.schedule, self.ready, self.step_num = schedule, on_trace_ready, 0

        def __enter__(self):
            self.action = self.schedule(0)
            gpu.recording = self.action in recording
            return self

        def __exit__(self, *exc):
            gpu.recording = False

        def step(self):
            if fail:
                raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")
            was = self.action
            self.step_num += 1
            self.action = self.schedule(self.step_num)
            gpu.recording = self.action in recording
            if was == ProfilerAction.RECORD_AND_SAVE:
                self.ready(self)
                gpu.seen = []

        def events(self):
            return list(gpu.seen)

    return SimpleNamespace(
        ProfilerActivity=SimpleNamespace(CUDA="CUDA"), profile=Profile, schedule=schedule
    )


@pytest.fixture
def fake_gpu(monkeypatch):
    pytest.importorskip("torch")
    device = FakeGpu()
    monkeypatch.setitem(sys.modules, "torch.profiler", fake_profiler(device))
    autograd = SimpleNamespace(DeviceType=SimpleNamespace(CUDA=CUDA))
    monkeypatch.setitem(sys.modules, "torch.autograd", autograd)
    return device


def test_each_chunk_is_traced_on_its_own_and_the_flush_never(fake_gpu):
    gpu = fake_gpu
    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))
    chunk = lambda: [gpu.launch(3.0) for _ in range(4)]  # noqa: E731
    flush = lambda: gpu.launch(500.0)  # noqa: E731
    traced = profile_chunks(torch, chunk, flush, chunks=5, budget_s=60.0)
    assert isinstance(traced, list) and len(traced) == 5
    assert all(len(spans) == 4 for spans in traced)  # the 500 us flush is in none
    s = kernel_summary(traced, calls=4, confidence=0.95)
    assert not isinstance(s, str) and s.median == pytest.approx(3e-6)


def test_the_pass_stops_at_its_budget_with_one_chunk_traced(fake_gpu):
    gpu = fake_gpu
    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))
    traced = profile_chunks(torch, lambda: gpu.launch(1.0), None, chunks=50, budget_s=0.0)
    assert isinstance(traced, list) and len(traced) == 1


def test_a_profiler_that_fails_is_a_reason_not_a_crash(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "torch.profiler", fake_profiler(FakeGpu(), fail=True))
    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))
    why = profile_chunks(torch, lambda: None, None, chunks=3, budget_s=1.0)
    assert why == "the profiler failed: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED"


# ------------------------------------------------------------------------ the engine


def _measure(monkeypatch, busy, traced, **settings):
    """The engine's CUDA path over a fake torch.cuda, with the busy check answering `busy`
    and the kernel pass answering `traced`; returns the result and the pass's calls."""
    cuda = FakeCudaMemory()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda))
    monkeypatch.setattr(kernels, "busy_fraction_profiler", lambda *a, **k: busy)
    state = {"calls": 0, "passes": []}

    def work():
        state["calls"] += 1

    def profile(torch, run, between, chunks, budget_s):
        before = state["calls"]
        run()
        state["passes"].append((before, state["calls"] - before, chunks, budget_s, between))
        return traced

    monkeypatch.setattr(kernels, "profile_chunks", profile)
    cfg = resolve("cuda", dict(min_samples=6, min_time=0.0, warmup_time=0.0) | settings)
    r = timing.measure(work, work=1, unit="calls", cfg=cfg, backend="cuda")
    return r, state


def test_launch_bound_work_gets_a_kernel_time_from_a_pass_after_its_samples(monkeypatch):
    traced = [[(0.0, 10.0 * i)] for i in (2, 3, 2, 2, 4, 2)]  # us per chunk
    r, state = _measure(monkeypatch, 0.2, traced)
    assert r.launch_bound is True and r.kernel_time is not None
    (before, ran, chunks, budget, between) = state["passes"][0]
    k = r.calls_per_sample
    assert ran == k  # one chunk is one sample's calls
    assert before >= r.warmup_calls + len(r.samples) * k  # after every wall sample
    assert chunks >= 6 and budget == r.config["max_time"] and between is None
    assert r.kernel_time.n == 6 and r.kernel_time.median == pytest.approx(20e-6 / k)


def test_the_kernel_pass_records_what_it_took(monkeypatch):
    """kernel_s: the pass's seconds, on the clock kernels.py reads (the paired stage prices
    a round with it); here a pass that took 4 s of a fake clock."""
    clock = {"t": 100.0}
    monkeypatch.setattr(kernels, "time", SimpleNamespace(perf_counter=lambda: clock["t"]))
    traced = [[(0.0, 20.0)] for _ in range(6)]

    def slow(run_traced):
        clock["t"] += 4.0
        return run_traced

    r, _ = _measure(monkeypatch, 0.2, traced)
    assert r.kernel_s == 0.0  # the double took no time on the fake clock
    original = kernels.profile_chunks
    monkeypatch.setattr(kernels, "profile_chunks", lambda *a, **k: slow(original(*a, **k)))
    cfg = resolve("cuda", dict(min_samples=6, min_time=0.0, warmup_time=0.0))
    r = timing.measure(lambda: None, work=1, unit="calls", cfg=cfg, backend="cuda")
    assert r.kernel_s == 4.0 and r.kernel_time is not None
    assert Result.from_dict(r.to_dict()).kernel_s == 4.0  # kept in the results file


def test_work_that_keeps_the_gpu_busy_gets_no_kernel_pass(monkeypatch):
    r, state = _measure(monkeypatch, 0.95, [[(0.0, 1.0)]])
    assert r.launch_bound is False and r.kernel_time is None and state["passes"] == []


@pytest.mark.parametrize("busy", [0.8, 0.9, 0.949])
def test_work_near_the_threshold_gets_a_kernel_pass_though_not_launch_bound(monkeypatch, busy):
    # near the threshold a session falls on either side of it: the kernel figure is in each
    traced = [[(0.0, 10.0 * i)] for i in (2, 3, 2, 2, 4, 2)]
    r, state = _measure(monkeypatch, busy, traced)
    assert r.launch_bound is False and len(state["passes"]) == 1
    assert r.kernel_time is not None and r.kernel_time.n == 6
    assert not any(n.startswith("launch-bound") for n in r.notes)


def test_the_kernel_band_follows_a_threshold_set_above_it(monkeypatch):
    r, state = _measure(monkeypatch, 0.96, [[(0.0, 1.0)]] * 6, launch_bound_threshold=0.97)
    assert r.launch_bound is True and r.kernel_time is not None
    r, state = _measure(monkeypatch, 0.97, [[(0.0, 1.0)]] * 6, launch_bound_threshold=0.97)
    assert r.launch_bound is False and r.kernel_time is None and state["passes"] == []


def test_a_multi_second_step_near_the_threshold_gets_no_kernel_pass():
    cfg = resolve("cuda", {})
    r = Result(nodeid="t", metric=None, unit="calls", work_per_call=1.0, outcome="ok")
    r.busy_fraction, r.launch_bound = 0.9, False
    r.time = summarize([kernels.LONG_CALL_S * 2] * 6, 0.95)
    assert kernels.wants_kernel_time(r, cfg) is False
    r.time = summarize([0.01] * 6, 0.95)
    assert kernels.wants_kernel_time(r, cfg) is True
    r.busy_fraction = None
    assert kernels.wants_kernel_time(r, cfg) is False


def test_a_pass_that_traced_nothing_leaves_a_note_and_no_figure(monkeypatch):
    r, _ = _measure(monkeypatch, 0.2, [[], []])
    assert r.kernel_time is None
    assert any(n.startswith("no GPU kernel time: the profiler traced no kernels") for n in r.notes)
    r, _ = _measure(monkeypatch, 0.2, "the profiler failed: RuntimeError: x")
    assert "no GPU kernel time: the profiler failed: RuntimeError: x" in r.notes


def test_fewer_chunks_than_min_samples_say_so(monkeypatch):
    r, _ = _measure(monkeypatch, 0.2, [[(0.0, 5.0)]] * 2)
    assert r.kernel_time is not None and r.kernel_time.n == 2
    assert any("GPU kernel time from 2 chunk(s) only" in n for n in r.notes)

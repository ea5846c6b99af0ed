"""The measuring loop: warm-up, batched timed samples, adaptive stopping, memory, telemetry,
GPU busy fraction and, for launch-bound work, the GPU's own kernel time per call.

On CUDA each timed sample is a pair of CUDA events around `k` calls (k chosen so a sample
lasts at least `min_sample_time`); samples are recorded in chunks and the host synchronises
once per chunk, never once per call. On the CPU each sample is `time.perf_counter` around
`k` calls, with the process's CPU time (`time.process_time`) and, on Linux, the thread's
run-queue wait beside it: a sample other work held the CPU in is left out while enough
remain (hostload.undisturbed). The busy check and the kernel-time pass
(kernels.py) run the profiler after the samples, never during them. Torch is imported only
when a CUDA measurement runs.
"""

from __future__ import annotations

import gc
import math
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.results import Result, check_work, resolve_unit, throughput_of
from ..core.settings import MAX_SAMPLES, MeasureConfig
from ..core.stats import StopDecision, StopRule, median, stop_decision, summarize
from . import hostload, kernels, memory
from .clock import synchronized_perf_counter  # noqa: F401  (re-exported)


class BenchmarkError(Exception):
    """A benchmark that cannot be measured; the message says why."""


class OutOfMemory(BenchmarkError):
    """The benchmark ran out of memory. Its memory was released before this was raised."""


def is_oom(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    if isinstance(exc, MemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def release_memory(exc: BaseException | None = None) -> None:
    """Drop the frames an exception keeps alive, collect garbage, empty the CUDA cache."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.__traceback__ is not None:
            traceback.clear_frames(exc.__traceback__)
            exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------------- clocks


class CpuClock:
    name = "perf_counter"
    backend = "cpu"

    def one_call(self, fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def __init__(self, queue: hostload.RunQueue | None = None) -> None:
        self.windows: list[tuple[float, float]] = []  # host time span of each sample
        self.cpu: list[float] = []  # the process's CPU seconds per call, each sample
        self.queue = queue  # the thread's run-queue wait, where the kernel says
        self.waits: list[float] = []  # its run-queue seconds per call, each sample

    def chunk(
        self, fn: Callable[[], Any], k: int, n: int, between: Callable[[], Any] | None
    ) -> list[float]:
        out = []
        read = self.queue.read if self.queue is not None else None
        for _ in range(n):
            if between is not None:
                between()
            q0 = read() if read else 0.0  # outside the timed window: a wait read between
            t0, c0 = time.perf_counter(), time.process_time()  # counts against the sample
            for _ in range(k):
                fn()
            c1, t1 = time.process_time(), time.perf_counter()
            q1 = read() if read else 0.0
            self.windows.append((t0, t1))
            self.cpu.append((c1 - c0) / k)
            self.waits.append((q1 - q0) / k)
            out.append((t1 - t0) / k)
        return out

    def kept(self, samples: list[float], need: int) -> tuple[list[float], dict[str, Any] | None]:
        """The samples no other work preempted, when at least `need` remain (hostload)."""
        return hostload.undisturbed(samples, self.cpu, need, self.waits if self.queue else None)


class CudaClock:
    backend = "cuda"

    def __init__(self, torch: Any, graph: Any = None) -> None:
        self.torch = torch
        self.graph = graph
        self.name = "cuda-graph" if graph is not None else "cuda-event"
        self.windows: list[tuple[float, float]] = []  # host time span of each sample

    def kept(self, samples: list[float], need: int) -> tuple[list[float], dict[str, Any] | None]:
        """All of them: GPU work does not wait for the host's CPU."""
        return samples, None

    def _event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def one_call(self, fn: Callable[[], Any]) -> float:
        start, end = self._event(), self._event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    def chunk(
        self, fn: Callable[[], Any], k: int, n: int, between: Callable[[], Any] | None
    ) -> list[float]:
        starts = [self._event() for _ in range(n)]
        ends = [self._event() for _ in range(n)]
        graph = self.graph
        for i in range(n):
            if between is not None:
                between()
            starts[i].record()
            if graph is not None:
                graph.replay()
            else:
                for _ in range(k):
                    fn()
            ends[i].record()
        ends[-1].synchronize()  # the one synchronisation of this chunk
        done = time.perf_counter()
        # each sample's span on the host clock: its events' offsets back from the chunk's
        # last event, which completed just before the synchronisation returned
        last = ends[-1]
        for st, en in zip(starts, ends, strict=True):
            begin = done - float(st.elapsed_time(last)) / 1e3
            self.windows.append((begin, done - float(en.elapsed_time(last)) / 1e3))
        return [float(s.elapsed_time(e)) / 1e3 / k for s, e in zip(starts, ends, strict=True)]


# ----------------------------------------------------------------------------- measure


LONG_CALL_S = kernels.LONG_CALL_S  # a multi-second step: two agreeing calls warm it
# precise samples too few of which had the CPU: sampling goes on for undisturbed ones up to
# this many times max_time, then ends (flagged busy-host): work that waits part of every
# call (a sleep) never has enough, and went on one sample at a time to max_samples
DISTURBED_GRACE = 4


def warm_up(
    clock: CpuClock | CudaClock, fn: Callable[[], Any], cfg: MeasureConfig
) -> tuple[list[float], float]:
    """Call until first-call effects are gone: at least `warmup_time` seconds, and the last
    three calls within 10% of each other (the last two for calls of a second or more, where
    each extra call costs seconds); at most `warmup_max_time`, and at least one call."""
    times: list[float] = []
    t0 = time.perf_counter()
    while True:
        times.append(clock.one_call(fn))
        elapsed = time.perf_counter() - t0
        if elapsed >= cfg.warmup_max_time:
            break
        need = 2 if times[-1] >= LONG_CALL_S else 3
        if len(times) >= need and elapsed >= cfg.warmup_time:
            last = times[-need:]
            if max(last) <= 1.10 * min(last):
                break
    return times, time.perf_counter() - t0


def _capture_graph(torch: Any, fn: Callable[[], Any], k: int) -> Any:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(k):
            fn()
    torch.cuda.synchronize()
    return graph


def _l2_flusher(torch: Any) -> tuple[Callable[[], Any], int]:
    """A call that evicts the L2 cache (writing a buffer twice its size), and its bytes."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
    buf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    return (lambda: buf.random_(0, 255)), 2 * l2


def measure(
    fn: Callable[[], Any],
    *,
    work: float,
    unit: str,
    cfg: MeasureConfig,
    backend: str,
    nodeid: str = "",
    metric: str | None = None,
    device: str = "",
    telemetry: Callable[[float], Any] | None = None,
) -> Result:
    """Measure `fn` (one call = `work` units of `unit`). Raises OutOfMemory, BenchmarkError."""
    if not callable(fn):
        raise BenchmarkError(f"the work to time must be callable, got {type(fn).__name__} {fn!r}")
    try:
        work = check_work(work)
        unit = resolve_unit(unit)
    except ValueError as exc:
        raise BenchmarkError(str(exc)) from None
    result = Result(nodeid=nodeid, metric=metric, unit=unit, work_per_call=work)
    result.backend, result.device, result.config = backend, device, cfg.to_dict()
    result.bound = cfg.bound if cfg.bound != "auto" else ("compute" if unit == "flop" else "memory")
    result.noise_class = cfg.noise_class if cfg.noise_class != "auto" else None
    torch: Any = None
    if backend == "cuda":
        import torch
    threads = _cpu_threads(cfg) if backend == "cpu" else None
    try:
        _measure_into(result, fn, cfg, torch, telemetry)
    except Exception as exc:
        if is_oom(exc):
            peak = None  # the process's, resident memory included: not the step's own
            if torch is not None:
                peak = torch.cuda.max_memory_reserved()
            message = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            release_memory(exc)
            del exc
            raise OutOfMemory(
                f"{result.key or 'benchmark'} ran out of memory ({message})"
                + (f"; the process's peak reserved {peak / 2**30:.1f} GiB" if peak else "")
                + "; its memory was released"
            ) from None
        raise
    finally:
        if threads is not None:
            threads[0].set_num_threads(threads[1])
    return result


def _cpu_threads(cfg: MeasureConfig) -> tuple[Any, int] | None:
    """Set torch's intra-op threads to cfg.cpu_threads for a CPU measurement, when torch is
    already imported (a benchmark without torch is left alone, and torch is never imported
    for it); (torch, the count to restore), or None when nothing was changed."""
    import sys

    torch = sys.modules.get("torch")
    if cfg.cpu_threads <= 0 or torch is None or not hasattr(torch, "set_num_threads"):
        return None
    before = int(torch.get_num_threads())
    torch.set_num_threads(cfg.cpu_threads)
    return torch, before


def clocks_over(telemetry: list[Any], windows: list[tuple[float, float]]) -> list[float] | None:
    """The SM clock (MHz) each timed sample ran at: the mean of the NVML readings taken
    within its span on the host clock, or the nearest reading when none fell inside."""
    readings = [(s.t, float(s.sm_clock_mhz)) for s in telemetry if s.sm_clock_mhz]
    if not readings or not windows:
        return None
    out = []
    for a, b in windows:
        inside = [c for t, c in readings if a <= t < b]  # a reading at b is the next one's
        if inside:
            out.append(sum(inside) / len(inside))
        else:
            mid = (a + b) / 2
            out.append(min(readings, key=lambda r: abs(r[0] - mid))[1])
    return out


@dataclass
class _Sampling:
    """What the sampling phase runs with: the clock (a graph's, when captured), the L2
    flush between samples and its buffer's bytes, the memory window open around it."""

    clock: CpuClock | CudaClock
    between: Callable[[], Any] | None = None
    flush_bytes: int = 0
    window: Any = None


def _measure_into(
    result: Result,
    fn: Callable[[], Any],
    cfg: MeasureConfig,
    torch: Any,
    telemetry: Callable[[float], Any] | None,
) -> None:
    """One measurement, phase by phase; each phase's docstring says why it is where it is."""
    if torch is not None:  # the peaks an OOM message reports: this measurement's
        torch.cuda.reset_peak_memory_stats()
    queue = hostload.open_run_queue() if torch is None else None
    clock: CpuClock | CudaClock = CudaClock(torch) if torch is not None else CpuClock(queue)
    per_call, k = _warm_and_batch(result, clock, fn, cfg)
    run = _prepare_sampling(result, clock, fn, cfg, torch, k)
    sampler = telemetry(cfg.telemetry_interval) if telemetry is not None else None
    samples, decision = _sample(result, run, fn, cfg, per_call, k, sampler)
    kept, result.preemption = run.clock.kept(samples, cfg.min_samples)
    _summarize_time(result, kept, decision, cfg)
    if run.window is not None:
        step = memory.close_window(torch, run.window, exclude=run.flush_bytes)
        result.peak_allocated, result.peak_reserved = step.peak_allocated, step.peak_reserved
        result.resident_allocated = step.resident
    if sampler is not None:
        _telemetry_into(result, sampler, run.clock, samples, cfg)
    if torch is not None and cfg.busy_check:  # the profiler's view, after the samples
        graph = getattr(run.clock, "graph", None)
        kernels.busy_check(result, fn, cfg, torch, graph, k)
        if kernels.wants_kernel_time(result, cfg):
            kernels.kernel_time_into(result, fn, cfg, torch, graph, run.between, k)


def _warm_and_batch(
    result: Result, clock: CpuClock | CudaClock, fn: Callable[[], Any], cfg: MeasureConfig
) -> tuple[float, int]:
    """Warm up, then choose the calls per sample `k` from the warm calls' time: first, so
    that first-call effects (compilation, allocator growth) are out of every sample and a
    sample lasts at least `min_sample_time`; `max_time` is a hard budget, so min_samples
    samples of k calls must fit in it. Returns the time of one warm call and k."""
    warm, warm_s = warm_up(clock, fn, cfg)
    result.warmup_calls, result.warmup_s = len(warm), warm_s
    per_call = median(warm[-3:])
    k = max(1, math.ceil(cfg.min_sample_time / per_call)) if per_call > 0 else 1000
    if per_call > 0:  # max_time is a hard budget: min_samples samples must fit in it
        k = max(1, min(k, math.floor(cfg.max_time / (cfg.min_samples * per_call))))
    result.calls_per_sample = k
    return per_call, k


def _prepare_sampling(
    result: Result,
    clock: CpuClock | CudaClock,
    fn: Callable[[], Any],
    cfg: MeasureConfig,
    torch: Any,
    k: int,
) -> _Sampling:
    """The L2 flush buffer, the memory window and the graph, after the warm-up and before
    the first sample: the flush buffer exists before the window opens (its bytes are left
    out of the step's peak), and the graph is captured from warm calls with the k the
    samples use (one replay is one sample)."""
    run = _Sampling(clock)
    if cfg.flush_l2:
        if torch is not None:
            run.between, run.flush_bytes = _l2_flusher(torch)
        else:
            result.notes.append("flush_l2 ignored: not a CUDA run")
    # the step's own memory: from here (after the warm-up, the flush buffer allocated) to
    # the end of sampling, whatever is resident (memory.py)
    run.window = memory.open_window(torch) if torch is not None else None
    if torch is not None and cfg.cuda_graph:
        run.clock = CudaClock(torch, _capture_graph(torch, fn, k))
    elif cfg.cuda_graph:
        result.notes.append("cuda_graph ignored: not a CUDA run")
    result.timer = run.clock.name
    return run


def _sample(
    result: Result,
    run: _Sampling,
    fn: Callable[[], Any],
    cfg: MeasureConfig,
    per_call: float,
    k: int,
    sampler: Any,
) -> tuple[list[float], StopDecision]:
    """The wall-time samples, in chunks with one synchronisation each, until the stopping
    rule is met, with the telemetry sampler running around exactly them (its clocks and
    energy are the samples'). Never under the profiler: it adds host work to each launch."""
    rule = StopRule(
        min_samples=cfg.min_samples,
        max_samples=cfg.max_samples,
        min_time=cfg.min_time,
        max_time=cfg.max_time,
        target=cfg.target,
        confidence=cfg.confidence,
    )
    samples: list[float] = []
    result.calls_total = 0
    sample_s = per_call * k
    n = max(1, min(cfg.min_samples, math.ceil(0.05 / sample_s) if sample_s > 0 else 10))
    n = min(n, cfg.max_samples)
    if sampler is not None:
        sampler.__enter__()
    t0 = time.perf_counter()
    try:
        while True:
            samples.extend(run.clock.chunk(fn, k, n, run.between))
            result.calls_total += n * k
            elapsed = time.perf_counter() - t0
            # judged on the undisturbed samples where enough are (the ones summarised)
            kept, found = run.clock.kept(samples, cfg.min_samples)
            decision = stop_decision(kept, elapsed, rule)
            if found and not found["enough"]:
                if decision.reason in ("converged", "noise-limited") and (
                        elapsed < DISTURBED_GRACE * cfg.max_time):  # fmt: skip
                    decision = StopDecision(False, "", decision.rel_ci)  # precise, but disturbed
                if 2 * found["preempted"] > found["samples"]:
                    k = max(1, k // 2)  # most were preempted: shorter samples, more run whole
            if not decision.stop and len(samples) >= rule.max_samples:
                decision = StopDecision(True, "max-samples", decision.rel_ci)
            if decision.stop:
                break
            if elapsed <= 0:  # a coarse clock that has not moved yet: grow the chunk
                n = max(1, min(2 * n, rule.max_samples - len(samples)))
                continue
            # next chunk: about a tenth of the time so far (>= 50 ms), within the budget
            per_sample = elapsed / len(samples)
            want = max(0.05, 0.1 * elapsed)
            left = max(per_sample, cfg.max_time - elapsed)
            n = max(1, int(min(want, left) / per_sample))
            n = min(n, rule.max_samples - len(samples))
    finally:
        if sampler is not None:
            sampler.__exit__(None, None, None)
    result.measure_s = time.perf_counter() - t0
    result.calls_per_sample = k  # the last chunk's (halved while most samples were preempted)
    return samples, decision


def _summarize_time(
    result: Result, samples: list[float], decision: StopDecision, cfg: MeasureConfig
) -> None:
    """The time per call and the throughput from the samples kept (the undisturbed ones,
    where enough were), and the notes a reader needs about them (why sampling stopped
    short of its target, a wide IQR)."""
    result.stop_reason = decision.reason
    result.samples = samples
    result.time = summarize(samples, cfg.confidence)
    result.throughput = throughput_of(result.time, result.work_per_call, result.unit)
    asked_for = decision.reason == "max-samples" and cfg.max_samples < MAX_SAMPLES
    if decision.reason != "converged" and not asked_for:  # a max_samples set is no news
        known = (
            f"median known to ±{decision.rel_ci * 100:.2f}%"
            if math.isfinite(decision.rel_ci)
            else f"only {len(samples)} sample{'s' if len(samples) != 1 else ''}, too few for "
            f"a {cfg.confidence:.0%} interval "
            "of the median (6 needed)"
        )
        result.notes.append(
            f"stopped on {decision.reason}: {known} (target ±{cfg.target * 100:.2f}%)"
        )
    if result.time.n >= 5 and result.time.rel_iqr > 0.10:
        result.notes.append(
            f"noisy: IQR is {result.time.rel_iqr * 100:.0f}% of the median (over 10%)"
        )


def _telemetry_into(
    result: Result,
    sampler: Any,
    clock: CpuClock | CudaClock,
    samples: list[float],
    cfg: MeasureConfig,
) -> None:
    """What NVML saw during the samples: the summary, each sample's SM clock (the cycles
    per call of compute-bound work), throttling, energy per unit of work."""
    summ = sampler.summary()
    result.telemetry = summ.to_dict()
    clocks = clocks_over(sampler.samples, clock.windows)
    if clocks is not None and len(clocks) == len(samples):
        # giga-cycles per call: each sample's time at the SM clock it ran at, so a
        # power-capped clock that moves within the session is divided out per sample
        cycles = [t * c / 1e3 for t, c in zip(samples, clocks, strict=True)]
        result.cycles = summarize(cycles, cfg.confidence)
    result.throttled = summ.throttled
    if summ.throttled:
        result.notes.append(
            f"throttled in {summ.throttled_fraction * 100:.0f}% of telemetry samples "
            f"({', '.join(summ.reasons)}): clocks were reduced while measuring"
        )
    if summ.energy_j is not None and result.calls_total:
        # telemetry spans the sampling loop only; energy per unit of work done in it
        result.energy_per_unit_j = summ.energy_j / (result.calls_total * result.work_per_call)
    if cfg.flush_l2 and result.energy_per_unit_j is not None:
        result.notes.append("energy includes the L2 flushes between samples")

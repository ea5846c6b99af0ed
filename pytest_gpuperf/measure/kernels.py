"""What the GPU itself did while the work ran, from torch.profiler's CUDA activity (CUPTI):
the busy fraction of a window of calls (is this work launch-bound?) and, for launch-bound
work, the GPU's own time per call: the kernels, copies and sets traced in a chunk of calls,
their intervals merged so that work overlapping on several streams counts once, over the
chunk's calls.

Why a second pass and not the wall-time samples themselves: the profiler adds host work to
every launch, and the wall time of launch-bound work is that host work, so the wall-time
samples are never taken under the profiler. The kernel chunks are a second pass of the same
shape right after them (the same calls per sample, the same graph replay, the same L2 flush
before each chunk). CUDA events cannot stand in for the profiler: an event pair measures the
stream's elapsed time, the idle gaps between launches included, which is the wall time again.

The engine (timing.py) runs both after its wall-time samples: `busy_check`, then, for
launch-bound work and work near it (`wants_kernel_time`), `kernel_time_into`. Pure except
for the functions that run the profiler; torch is imported only by them.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..core.results import Result
from ..core.settings import MeasureConfig
from ..core.stats import Summary, summarize

LONG_CALL_S = 1.0  # a call this long is a multi-second step
Span = tuple[float, float]  # (start, end) of one traced GPU activity, in microseconds

KERNEL_WINDOW_S = 0.1  # about this much sampled work per kernel pass ...
# ... in at most this many chunks: each is a profiler cycle of its own, which cost 50-140 ms
# of host time on the H200 (a pass of 30 took 0.7-2.0 s), while 11 chunks of a loop of tiny
# matmuls already knew its kernel time to ±0.04%
KERNEL_CHUNKS_MAX = 20
# Kernel time is measured where the GPU was busy less than this share of the wall time (or
# below the launch-bound threshold where that is set higher), not only below the threshold:
# work near it (on the H200 a batch-256 matmul loop read 45-93% busy from run to run) is
# launch-bound in some sessions and not in others, and its kernel figure, the one that can
# decide it, must exist in all of them.
KERNEL_BUSY_BELOW = 0.95


def union_length(spans: Iterable[Span]) -> float:
    """The length the (start, end) spans cover together: overlapping spans count once, an
    empty or reversed span counts nothing."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(sp for sp in spans if sp[1] > sp[0]):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s  # type: ignore[operator]
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s  # type: ignore[operator]
    return total


def busy(spans: list[Span], wall: float) -> float | None:
    """Length of the union of (start, end) spans in microseconds over `wall` seconds."""
    if not spans or wall <= 0:
        return None
    return min(1.0, union_length(spans) / 1e6 / wall)


def device_spans(events: Iterable[Any], cuda: Any) -> list[Span]:
    """The (start, end) of each device-side event among torch.profiler's events (`cuda`:
    DeviceType.CUDA): the kernels, memcpys and memsets CUPTI traced, in microseconds."""
    return [
        (float(e.time_range.start), float(e.time_range.end))
        for e in events
        if e.device_type == cuda
    ]


def traced_spans(prof: Any, cuda: Any) -> list[Span]:
    """The device-side spans (`device_spans`) of what the profiler `prof` traced last, in
    microseconds from the trace's start. Read from its raw result (torch.profiler's
    `prof.profiler.kineto_results`: three calls an event) when it has one, else from
    `prof.events()`, which first turns every event into a Python FunctionEvent with some
    forty fields and builds their tree: seconds for the tens of thousands of kernels of one
    call of a decoder or a training step, each time the profiler is read. Both gave the
    same spans on the H200 (tests/gpu/parse_probe.py: 200,972 device events of a decoder's
    call, 3,267 of a LoRA step; tests/test_gpu.py compares them too). Where the raw result
    reads otherwise (another torch) or holds events but none on the device (a device type
    that no longer compares equal), the parsed events answer."""
    raw = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if raw is not None:
        try:
            t0, events = raw.trace_start_ns(), raw.events()
            spans = [
                ((e.start_ns() - t0) / 1e3, (e.end_ns() - t0) / 1e3)
                for e in events
                if e.device_type() == cuda
            ]
            if spans or not events:
                return spans
        except (AttributeError, TypeError):  # a torch whose raw result reads otherwise
            pass
    return device_spans(prof.events(), cuda)


def busy_fraction_profiler(
    torch: Any, fn: Callable[[], Any], calls: int, warm_calls: int = 2
) -> float | None:
    """GPU kernel time (union of kernel and copy intervals) over wall time of `calls` calls,
    from torch.profiler's CUDA activity. A first profiler step of `warm_calls` calls is
    traced and discarded (CUPTI's start-up cost), only the second is counted. None if the
    profiler cannot trace kernels here."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile, schedule
    except ImportError:
        return None
    try:
        torch.cuda.synchronize()
        with profile(
            activities=[ProfilerActivity.CUDA],
            schedule=schedule(wait=0, warmup=1, active=1, repeat=1),
        ) as prof:
            for _ in range(warm_calls):
                fn()
            torch.cuda.synchronize()
            prof.step()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
            prof.step()
        spans = traced_spans(prof, DeviceType.CUDA)
    except Exception:
        return None
    return busy(sorted(spans), wall)


def chunk_count(sample_s: float, min_samples: int, max_samples: int) -> int:
    """How many chunks a kernel pass traces: about KERNEL_WINDOW_S of work, at least
    `min_samples` (the wall samples' own minimum) and at most KERNEL_CHUNKS_MAX, never more
    than `max_samples` (a sweep point asked for a few)."""
    want = math.ceil(KERNEL_WINDOW_S / sample_s) if sample_s > 0 else KERNEL_CHUNKS_MAX
    return max(1, min(max_samples, max(min_samples, min(KERNEL_CHUNKS_MAX, want))))


def profile_chunks(
    torch: Any,
    run: Callable[[], Any],
    between: Callable[[], Any] | None,
    chunks: int,
    budget_s: float,
) -> list[list[Span]] | str:
    """The GPU activity of each of up to `chunks` calls of `run` (one wall-time sample's
    worth of calls, or its graph replay), each traced by a profiler cycle of its own, or why
    there is none. `between` (the L2 flush) runs before each chunk in the cycle's untraced
    wait step, so its kernel never counts. CUDA activity only: no CPU ops, shapes, stacks
    or memory. Stops after `budget_s` seconds, at least one chunk traced."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile, schedule
    except ImportError as exc:
        return f"torch.profiler cannot be imported ({exc})"
    traced: list[list[Span]] = []

    def ready(prof: Any) -> None:
        traced.append(traced_spans(prof, DeviceType.CUDA))

    try:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # each cycle's events are its own: that is the point (torch warns about it)
            warnings.filterwarnings("ignore", "Profiler clears events", UserWarning)
            prof = profile(
                activities=[ProfilerActivity.CUDA],
                schedule=schedule(wait=1, warmup=1, active=1, repeat=chunks),
                on_trace_ready=ready,
                record_shapes=False,
                profile_memory=False,
                with_stack=False,
            )
            with prof:
                for _ in range(chunks):
                    if between is not None:
                        between()  # the wait step: nothing is traced
                    torch.cuda.synchronize()
                    prof.step()  # warm-up step: CUPTI prepared
                    prof.step()  # the active step: traced from here
                    run()
                    torch.cuda.synchronize()
                    prof.step()  # the chunk's trace ends and is read (ready)
                    if time.perf_counter() - t0 >= budget_s:
                        break
    except Exception as exc:
        return f"the profiler failed: {type(exc).__name__}: {str(exc)[:160]}"
    return traced


def kernel_summary(
    traced: Sequence[Sequence[Span]], calls: int, confidence: float
) -> Summary | str:
    """The GPU's own seconds per call over the traced chunks (each chunk's union of
    activity intervals over its `calls` calls), or why there is none: a chunk in which the
    profiler traced nothing means the trace does not hold the work (no CUPTI here, kernels
    of a graph it does not trace), so no figure is made from the others."""
    if not traced:
        return "no chunk was traced"
    busy_us = [union_length(spans) for spans in traced]
    empty = sum(1 for b in busy_us if b <= 0)
    if empty == len(traced):
        return (
            "the profiler traced no kernels (no CUPTI here, or a CUDA graph whose kernels it "
            "does not trace)"
        )
    if empty:
        return f"the profiler traced no GPU activity in {empty} of {len(traced)} chunks"
    return summarize([b / 1e6 / calls for b in busy_us], confidence)


# ------------------------------------------------- the engine's phases that use them


def busy_check(
    result: Result,
    fn: Callable[[], Any],
    cfg: MeasureConfig,
    torch: Any,
    graph: Any,
    k: int,
) -> None:
    """Is the GPU busy, or waiting on the host? After the samples, so that the profiler
    (which slows launches) never touches them: the profiler's kernel time over about 50 ms
    of calls (at least one), or NVML's utilisation over the sampled seconds for multi-second
    steps (the profiler would cost two more calls of seconds each) and where the profiler
    traces nothing."""
    per = result.time.median if result.time is not None else 0.0
    nvml_util = (result.telemetry or {}).get("utilization_mean")
    busy: float | None = None
    if per < LONG_CALL_S or nvml_util is None:
        if graph is not None:
            replays = max(1, min(1000, math.ceil(0.05 / (per * k)))) if per > 0 else 1
            busy = busy_fraction_profiler(torch, graph.replay, replays, warm_calls=1)
        else:
            calls = max(1, min(5000, math.ceil(0.05 / per))) if per > 0 else 1
            busy = busy_fraction_profiler(torch, fn, calls, warm_calls=min(calls, 2))
    source = "profiler"
    if busy is None and nvml_util is not None:
        busy, source = nvml_util, "nvml-utilization"
    if busy is not None:
        result.busy_fraction, result.busy_source = busy, source
        result.launch_bound = busy < cfg.launch_bound_threshold
        if result.launch_bound:
            result.notes.append(
                f"launch-bound: the GPU was busy {busy * 100:.0f}% of the wall time "
                f"(threshold {cfg.launch_bound_threshold * 100:.0f}%), so this number "
                "measures the host CPU and launch overhead as much as the GPU"
            )


def wants_kernel_time(result: Result, cfg: MeasureConfig) -> bool:
    """Whether to measure the GPU's own time per call: for launch-bound work, and for work
    busy less than KERNEL_BUSY_BELOW whose calls are shorter than a multi-second step (near
    the threshold, a session may fall on either side of it)."""
    if result.launch_bound:
        return True
    b, per = result.busy_fraction, result.time.median if result.time is not None else 0.0
    bar = max(cfg.launch_bound_threshold, KERNEL_BUSY_BELOW)
    return b is not None and b < bar and 0 < per < LONG_CALL_S


def kernel_time_into(
    result: Result,
    fn: Callable[[], Any],
    cfg: MeasureConfig,
    torch: Any,
    graph: Any,
    between: Callable[[], Any] | None,
    k: int,
) -> None:
    """The GPU's own time per call of launch-bound work (its wall time measures the host) or
    of work near it: a second pass, right after the wall samples, of chunks shaped like them
    (k calls or the graph's replay, the L2 flush before each), each traced by the profiler;
    never the wall samples themselves, since the profiler slows every launch. Within the hard
    budget `max_time`; where the profiler traces nothing there is no figure and a note says why."""

    def chunk() -> None:
        if graph is not None:
            graph.replay()
        else:
            for _ in range(k):
                fn()

    sample_s = result.time.median * k if result.time is not None else 0.0
    want = chunk_count(sample_s, cfg.min_samples, cfg.max_samples)
    t0 = time.perf_counter()
    traced = profile_chunks(torch, chunk, between, want, cfg.max_time)
    result.kernel_s = time.perf_counter() - t0
    found = traced if isinstance(traced, str) else kernel_summary(traced, k, cfg.confidence)
    if isinstance(found, str):
        result.notes.append(f"no GPU kernel time: {found}")
        return
    result.kernel_time = found
    if found.n < cfg.min_samples:
        result.notes.append(
            f"GPU kernel time from {found.n} chunk(s) only, fewer than min_samples "
            f"{cfg.min_samples}: the pass stopped at max_time {cfg.max_time:g} s"
        )

"""The one projection of a result into the figures a baseline stores and the gate judges:
its throughput (or latency), its per-clock figure, its peak memory, or a recorded value,
each with its unit, direction and noise class (`metrics_of`); and the class of each
result's figures in a run (`result_classes`: a derived figure takes its measurement's).
A measured figure and its twins are named after it: `throughput`, `throughput_per_clock`,
`throughput_kernels`, or for gpu_benchmark.latency `latency`, `latency_per_clock`,
`latency_kernels` (`TIMED`, `per_clock_name`, `kernels_name`). The file's format around
them is schema.py's. Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .results import LATENCY, THROUGHPUT  # a result's figure_name: one of them, or "value"

TIMED = (THROUGHPUT, LATENCY)  # a measured result's figure: one of these, by its direction


def per_clock_name(timed: str) -> str:
    """The per-clock twin of a measured figure (judged with it, for compute-bound work)."""
    return f"{timed}_per_clock"


def kernels_name(timed: str) -> str:
    """The kernel-time twin of a measured figure (launch-bound work on a GPU)."""
    return f"{timed}_kernels"


def kernels_of(name: str) -> str | None:
    """The measured figure a kernel-time twin belongs to (`throughput` for
    `throughput_kernels`); None for any other name."""
    timed = name.removesuffix("_kernels")
    return timed if timed != name and timed in TIMED else None


PER_CLOCK = per_clock_name(THROUGHPUT)  # judged with the throughput of compute-bound work
PER_CLOCKS = frozenset(per_clock_name(n) for n in TIMED)  # a throughput's and a latency's
KERNEL_FIGURES = frozenset(kernels_name(n) for n in TIMED)  # the GPU's own time: one a figure
SPEED = frozenset((*TIMED, *PER_CLOCKS, *KERNEL_FIGURES))  # fast or slow
BANDWIDTH = "bandwidth"
COMPUTE = "compute"
MODEL = "model"
LAUNCH = "launch-bound"
MEMORY = "memory"
RECORDED = "recorded"
CLOCK = "per-clock"  # work per SM clock cycle: its own class, the clock took the power out
# the GPU's own time per call: its own class, whatever the work (the host's noise, which
# moves the wall-time classes session by session, is not in it; docs/baselines.md)
KERNEL_TIME = "kernel-time"
CLASSES = (BANDWIDTH, COMPUTE, MODEL, LAUNCH, MEMORY, RECORDED, CLOCK, KERNEL_TIME)
CLASS_NAMES = {
    BANDWIDTH: "memory-bandwidth-bound",
    COMPUTE: "compute-bound",
    MODEL: "model-step",
    LAUNCH: "launch-bound",
    MEMORY: "memory-size",
    RECORDED: "recorded",
    CLOCK: "per-clock-cycle",
    KERNEL_TIME: "GPU-kernel-time",
}


def classify(
    metric: str, unit: str, *, launch_bound: bool, bound: str | None, declared: str | None
) -> str:
    """A metric's noise class, from what its result knows: its name, unit and flags; a
    class declared by the benchmark (marker or record argument) wins."""
    if declared:
        return declared
    if metric in ("peak_allocated", "peak_reserved") or unit == "bytes":
        return MEMORY
    if metric == "value":
        return RECORDED
    if launch_bound:
        return LAUNCH
    if bound == "compute" or metric in PER_CLOCKS:
        return COMPUTE
    if unit == "GB/s":
        return BANDWIDTH
    return MODEL


if TYPE_CHECKING:
    from .results import Result


def result_classes(results: list[Result]) -> dict[str, str]:
    """The noise class of each result's figures, by result key: declared, else assigned
    from its unit and flags; a figure derived from another measurement of its test takes
    that measurement's class (one measurement, one noise)."""

    out: dict[str, str] = {}
    for r in results:
        if r.kind == "measured" and r.throughput is not None:
            out[r.key] = classify(
                r.figure_name,
                r.throughput.unit,
                launch_bound=bool(r.launch_bound),
                bound=r.bound,
                declared=r.noise_class,
            )
    for r in results:
        if r.kind == "recorded":
            src = None
            if r.derived_from is not None:
                src = out.get(f"{r.nodeid}::{r.derived_from}" if r.derived_from else r.nodeid)
            unit = r.throughput.unit if r.throughput else r.unit
            out[r.key] = (
                r.noise_class
                or src
                or classify("value", unit, launch_bound=False, bound=None, declared=None)
            )
    return out


PEAK = "peak_allocated"  # the gated memory figure (baseline schema 2)
KERNELS = kernels_name(THROUGHPUT)  # launch-bound work: its figure in the GPU's kernel time


def metrics_of(result: Result, noise_class: str | None = None) -> dict[str, dict[str, Any]]:
    """Baseline metrics of a result. Measured: throughput (higher is better; a latency,
    lower is better, is named `latency`, and its twins after it) and, on a GPU,
    the step's own peak allocated memory (lower is better: memory growth is a regression
    too; the allocator's reservation depends on its cache, so it is not a figure); for
    compute-bound work its figure per SM clock cycle, for launch-bound work its figure in
    the GPU's kernel time. Recorded: its value, in its own unit and direction. Each carries
    its noise class (`noise_class`, else assigned here) and whether it gates."""

    t = result.throughput
    if result.outcome != "ok" or t is None:
        return {}
    gate = {"gate": False} if not result.gate else {}
    if result.kind == "recorded":
        return {"value": _recorded(result, noise_class, gate)}
    if result.time is None:
        return {}
    session: dict[str, Any] = {"flags": result.session_flags} if result.session_flags else {}
    clock = result.clock_mhz
    if clock is not None:
        session["clock_mhz"] = clock
    name = result.figure_name  # throughput, or latency (lower is better)
    cls = noise_class or classify(name, t.unit, launch_bound=bool(result.launch_bound),
                                  bound=result.bound, declared=result.noise_class)  # fmt: skip
    out: dict[str, dict[str, Any]] = {
        name: {
            "unit": t.unit,
            "direction": "higher" if result.higher_is_better else "lower",  # lower: a latency
            "median": t.median,
            "ci_low": t.ci_low,
            "ci_high": t.ci_high,
            "n": result.time.n,
            "noise_class": cls,
            **gate,
            **session,
        }
    }
    if result.bound == "compute" and clock is not None:
        # a measurement of time and clock together: its own class (the clock took the
        # power state out of it, so it never shares offsets or a pool with time figures),
        # launch-bound where the work is
        pc_cls = LAUNCH if cls == LAUNCH else CLOCK
        out[per_clock_name(name)] = {**_per_clock(result, clock), "n": result.time.n,
                          "noise_class": pc_cls, **session}  # fmt: skip
    if result.kernel_time is not None and result.kernel_time.n > 0:
        out[kernels_name(name)] = _kernels(result, gate, clock)
    if result.peak_allocated is not None:  # the step's own, the same in any test order
        v = float(result.peak_allocated)
        out[PEAK] = {"unit": "bytes", "direction": "lower", "median": v, "ci_low": v,
                     "ci_high": v, "n": 1, "noise_class": MEMORY, **gate}  # fmt: skip
    return out


def _recorded(result: Result, noise_class: str | None, gate: dict[str, Any]) -> dict[str, Any]:
    """A recorded figure: its value, its own unit and direction, an interval of itself."""
    t = result.throughput
    assert t is not None
    v = t.median
    cls = (
        noise_class
        or result.noise_class
        or classify("value", t.unit, launch_bound=False, bound=None, declared=None)
    )
    return {
        "unit": t.unit,
        "direction": "higher" if result.higher_is_better else "lower",
        "median": v,
        "ci_low": v,
        "ci_high": v,
        "n": 1,
        "noise_class": cls,
        **gate,
        **({"derived_from": result.derived_from} if result.derived_from is not None else {}),
    }


def _kernels(result: Result, gate: dict[str, Any], clock: float | None) -> dict[str, Any]:
    """The GPU's own kernel time per call of work not busy enough to be timed by the wall
    clock alone (launch-bound work, and the band below KERNEL_BUSY_BELOW), beside its
    wall-time throughput (which says what the host costs): work per second of kernel time
    in the throughput's unit (higher is better), or for a latency the kernel time per call
    in its unit (lower is better). Its noise class is KERNEL_TIME whatever the work: the
    host's noise, which moves a wall-time class from session to session, is not in it, so
    it is pooled only with other kernel-time figures and no class offset is removed from it
    (noise.py; a GPU state that moves every kernel is the paired stage's kernel check's). A
    measurement of its own (not derived from the wall time): its session flags leave out
    launch-bound and noise-limited, which describe the wall-time samples."""
    from .results import throughput_of

    t, kt = result.throughput, result.kernel_time
    assert t is not None and kt is not None and result.time is not None
    if result.higher_is_better:
        k = throughput_of(kt, result.work_per_call, result.unit)
        low, mid, high, direction = k.ci_low, k.median, k.ci_high, "higher"
    else:  # a latency: the kernel time in the latency's unit (its scale from the wall time)
        scale = t.median / result.time.median if result.time.median > 0 else 0.0
        low, mid, high = kt.ci_low * scale, kt.median * scale, kt.ci_high * scale
        direction = "lower"
    flags = [f for f in result.session_flags if f not in ("launch-bound", "noise-limited")]
    return {
        "unit": t.unit,
        "direction": direction,
        "median": mid,
        "ci_low": low,
        "ci_high": high,
        "n": kt.n,
        "noise_class": KERNEL_TIME,
        **gate,
        **({"flags": flags} if flags else {}),
        **({"clock_mhz": clock} if clock is not None else {}),
    }


def _per_clock(result: Result, clock: float) -> dict[str, Any]:
    """Compute-bound work per SM clock cycle, from the cycles of each sample where the
    engine measured them, else from the session's median clock. A throughput: work per
    cycle, in its unit per GHz (higher is better); a latency: its time at 1 GHz, i.e.
    giga-cycles per call in its unit x GHz (lower is better). Either is a measurement of
    time and clock together, in the class of the work it times (launch-bound work's is
    launch-bound)."""
    from .results import unit_rate

    t, c = result.throughput, result.cycles
    assert t is not None and result.time is not None
    have = c is not None and c.median > 0 and c.ci_low > 0
    if not result.higher_is_better and result.time.median > 0:  # a latency: time x scale
        scale, ghz = t.median / result.time.median, clock / 1000
        if have:
            low, mid, high = (x * scale for x in (c.ci_low, c.median, c.ci_high))  # type: ignore[union-attr]
        else:
            low, mid, high = t.ci_low * ghz, t.median * ghz, t.ci_high * ghz
        return {"unit": f"{t.unit} x GHz", "direction": "lower", "median": mid,
                "ci_low": low, "ci_high": high}  # fmt: skip
    if have:
        per = result.work_per_call / unit_rate(result.unit)[1]
        low, mid, high = per / c.ci_high, per / c.median, per / c.ci_low  # type: ignore[union-attr]
    else:
        ghz = clock / 1000
        low, mid, high = t.ci_low / ghz, t.median / ghz, t.ci_high / ghz
    return {"unit": f"{t.unit} per GHz", "direction": "higher", "median": mid,
            "ci_low": low, "ci_high": high}  # fmt: skip


# ---- the checker of one recorded figure: the baseline loader, the results-file reader and
# gpu_benchmark (at record time) apply the same rules

MAX_INT_DIGITS = 20  # no count or value in a baseline needs more


def metric_problem(m: Any) -> str | None:
    """What is wrong with one metric's summary (unit, direction, median, interval, n), or
    None. The loader and `gpu_benchmark` (at record time) apply these same rules, so a
    figure that was accepted when measured is never refused when read back."""
    if not isinstance(m, dict):
        return f"must be an object, got {type(m).__name__}"
    if m.get("direction") not in ("higher", "lower"):
        return f"direction must be 'higher' or 'lower', got {m.get('direction')!r}"
    unit = m.get("unit")
    if not isinstance(unit, str) or not unit.strip():
        return f"unit must be a non-empty string, got {unit!r}"
    for name in ("median", "ci_low", "ci_high"):
        if name in m:
            why = number_problem(m[name])
            if why:
                return f"{name} {why}"
    if all(k in m for k in ("median", "ci_low", "ci_high")) and not (
        m["ci_low"] <= m["median"] <= m["ci_high"]
    ):
        return (
            f"interval [{m['ci_low']!r}, {m['ci_high']!r}] does not contain the median "
            f"{m['median']!r}"
        )
    why = session_problem(m)
    if why:
        return why
    if "noise_class" in m and m["noise_class"] not in CLASSES:
        return f"noise_class must be one of {', '.join(CLASSES)}, got {m['noise_class']!r}"
    if "gate" in m and not isinstance(m["gate"], bool):
        return f"gate must be true or false, got {m['gate']!r}"
    if not text_or_none(m.get("derived_from")):
        return f"derived_from must be a metric name or null, got {m.get('derived_from')!r}"
    n = m.get("n")
    if "n" in m and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        return f"n must be a whole number >= 1, got {n!r}"
    return None


def session_problem(m: dict[str, Any]) -> str | None:
    """The optional session facts of a metric or history item: flags and SM clock."""
    flags = m.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        return f"flags must be a list of strings, got {flags!r}"
    if "clock_mhz" in m:
        why = number_problem(m["clock_mhz"])
        if why:
            return f"clock_mhz {why}"
    for name in ("session", "gpu_uuid", "host"):  # which run, GPU and host saved it
        if not text_or_none(m.get(name)):
            return f"{name} must be a string or null, got {m.get(name)!r}"
    for bound in ("ci_low", "ci_high"):  # a saved session's interval (history items)
        if m.get(bound) is not None:
            why = number_problem(m[bound])
            if why:
                return f"{bound} {why}"
    return None


def number_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, got {value!r}"
    if isinstance(value, int) and abs(value) >= 10**MAX_INT_DIGITS:
        return f"is a {len(str(abs(value)))}-digit integer: too large"
    if not math.isfinite(value):
        return f"is {value!r}, not a finite number"
    if value < 0:
        return f"is {value!r}: must be >= 0"
    return None


def text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)

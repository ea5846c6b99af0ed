"""Latency as a first-class figure: `gpu_benchmark.latency(fn)`.

A latency is measured by the same engine as a throughput: the samples, their interval and
the stopping rule are the engine's, in seconds per call. Only the figure differs: the time
per call in a fixed unit of time, lower is better. Its noise class is assigned as a
throughput's is (launch-bound, compute-bound, or by unit: baseline/noise.py).
"""

from __future__ import annotations

from ..core.results import Result, Throughput

# unit -> per-call seconds to that unit
SCALES: dict[str, float] = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9}


def check_unit(unit: object) -> str:
    if not isinstance(unit, str) or unit.strip() not in SCALES:
        raise ValueError(f"latency unit must be one of {', '.join(SCALES)}, got {unit!r}")
    unit = unit.strip()
    return "us" if unit == "µs" else unit


def as_latency(result: Result, unit: str) -> None:
    """Turn a measured result into a latency: its figure (`result.throughput`, the field
    every output and the gate read) becomes the time per call in `unit` with the median's
    interval, and its direction lower-is-better."""
    scale = SCALES[unit]
    result.higher_is_better = False
    t = result.time
    if result.outcome == "ok" and t is not None:
        result.throughput = Throughput(unit, t.median * scale, t.ci_low * scale, t.ci_high * scale)


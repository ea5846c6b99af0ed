"""Reports of results: terminal table lines and JSON. Pure formatting, no pytest."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .results import Result, _fmt
from .units import format_size


def result_rows(results: Iterable[Result]) -> list[list[str]]:
    rows = []
    for r in results:
        if r.outcome != "ok" or r.throughput is None or r.time is None:
            rows.append([r.key, r.outcome.upper(), "", "", "", "", (r.error or "")[:60]])
            continue
        flags = []
        if r.launch_bound and r.busy_fraction is not None:
            flags.append(f"launch-bound (GPU busy {r.busy_fraction * 100:.0f}%)")
        elif r.busy_fraction is not None:
            flags.append(f"GPU busy {r.busy_fraction * 100:.0f}%")
        if r.throttled:
            flags.append("throttled")
        if r.emulated:
            flags.append(f"emulated {r.emulated}")
        if r.stop_reason != "converged":
            flags.append(r.stop_reason)
        rows.append(
            [
                r.key,
                f"{_fmt(r.throughput.median)} {r.throughput.unit}",
                f"±{r.throughput.rel_ci_halfwidth * 100:.2f}%",
                f"{r.time.median * 1e3:.4g} ms",
                str(r.time.n),
                format_size(r.peak_reserved) if r.peak_reserved is not None else "-",
                ", ".join(flags),
            ]
        )
    return rows


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return out


RESULT_HEADER = ["benchmark", "throughput", "95% CI", "median/call", "n", "peak mem", "notes"]


def json_safe(obj: Any) -> Any:
    """Replace NaN/inf (invalid JSON) by None, recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj

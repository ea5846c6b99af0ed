"""JUnit XML properties of a benchmark's results (pytest's record_property channel)."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.results import Result


def junit_properties(results: Iterable[Result]) -> list[tuple[str, str]]:
    """(name, value) pairs for one test's results: the headline (figure, interval, device),
    the throughput in its unit, and each metric's verdict."""
    out = []
    for r in results:
        out.append((f"gpuperf:{r.key}", r.headline()))
        if r.throughput is not None:
            out.append((f"gpuperf:{r.key}:{r.throughput.unit}", f"{r.throughput.median:.6g}"))
        for name, v in r.verdicts.items():
            out.append((f"gpuperf:{r.key}:{name}:verdict", v["status"]))
    return out

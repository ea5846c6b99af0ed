"""What the gate says about a judged run, in words: one failure line per failing metric
(`failure_lines`, with the baseline it was judged against), and which baseline entries the
run should have measured (`selected`, `missing`). No pytest and no I/O here."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from ..baseline.history import values_of
from ..core.figures import metrics_of
from ..core.results import Result, format_value
from .judge import Judgement, as_verdict
from .verdict import FAILED, REGRESSED


def failure_lines(
    results: Iterable[Result],
    entries: dict[str, dict[str, Any]],
    profile: str,
    judgement: Judgement | None = None,
) -> list[str]:
    """One readable line per failing metric: what, baseline -> now, change, its
    uncertainty and where that comes from, the tolerance, which baseline (profile, date,
    commit, sessions), and whether a fresh process confirmed it."""
    lines = []
    conf = f"{judgement.confidence:.2%}" if judgement else "99%"
    for r in results:
        metrics = metrics_of(r)
        base_entry = entries.get(r.key) or {}
        for name, vd in r.verdicts.items():
            status = vd.get("status")
            if status == FAILED:
                lines.append(
                    f"PERFORMANCE REGRESSION {r.key} {name}: no result now ({vd.get('reason')}) "
                    f"where baseline {profile} has one: " + _base_text(base_entry, name, profile)
                )
                continue
            if status != REGRESSED or name not in metrics:
                continue
            v = as_verdict(vd)
            base_m = base_entry["metrics"][name]
            ref = statistics.median(values_of(base_m)) if values_of(base_m) else math.nan
            unit = metrics[name]["unit"]
            change = f"{v.change * 100:+.2f}%" if v.change is not None else "from 0"
            lines.append(
                f"PERFORMANCE REGRESSION {r.key} {name}: {format_value(ref, unit)} -> "
                f"{format_value(metrics[name]['median'], unit)}: regressed {change} "
                f"(tolerance {v.tolerance * 100:.1f}%; {v.basis or 'no spread'}; at {conf}); "
                f"baseline "
                + _base_text(base_entry, name, profile)
                + (
                    "; confirmed in a fresh process"
                    if v.confirmed
                    else "; NOT re-measured in a fresh process"
                    if v.confirmed is None
                    else ""
                )
            )
    if judgement is not None:
        for s in judgement.shifts:
            if s.verdict.status == REGRESSED:
                lines.append(
                    f"PERFORMANCE REGRESSION {s.line()}; {s.verdict.basis}"
                    + ("; confirmed in a fresh process" if s.verdict.confirmed else "")
                )
    return lines


def _base_text(base_entry: dict[str, Any], metric: str, profile: str) -> str:
    hist = base_entry.get("metrics", {}).get(metric, {}).get("history", [])
    return (
        f"{profile} of {str(base_entry.get('date') or '?')[:10]}"
        + (f" commit {str(base_entry['commit'])[:10]}" if base_entry.get("commit") else "")
        + f", {len(hist)} session(s)"
    )


def selected(entries: Iterable[str], collected: Iterable[str]) -> list[str]:
    """Baseline keys that belong to the collected tests (a key is a node id, or a node id
    with '::metric')."""
    chosen = set(collected)
    out = []
    for key in entries:
        node = key.split("::")
        if any("::".join(node[:cut]) in chosen for cut in range(len(node), 0, -1)):
            out.append(key)
    return out


def missing(
    entries: Iterable[str], measured: Iterable[str], collected: Iterable[str] | None
) -> list[str]:
    """Baseline entries that produced no result in this run: of the collected tests only
    (None: every entry counts, as offline, where the run's selection is unknown)."""
    done = set(measured)
    keys = list(entries) if collected is None else selected(entries, collected)
    return [k for k in keys if k not in done]

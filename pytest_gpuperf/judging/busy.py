"""The busy-host rule of judging: on the CPU, a result measured while the host was loaded
(hostload.py flags it) cannot show a change. judge_run applies it to every run it judges,
so the pytest run and `gpuperf compare` agree."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..measure.hostload import describe


def busy_verdicts(results: Iterable[Any], judgement: Any = None) -> None:
    """On the CPU, a result measured on a busy host cannot show a change: its regressed or
    improved verdicts become inconclusive, with the reason; so does a class-wide shift that
    such a result helped estimate (`judgement.shifts`)."""
    from dataclasses import replace

    from .verdict import IMPROVED, INCONCLUSIVE, REGRESSED

    results = list(results)
    busy: dict[str, dict[str, Any]] = {}
    by_test: dict[str, dict[str, Any]] = {}  # a test measured on a busy host: all its figures
    for r in results:
        host = getattr(r, "host", None)
        if r.backend == "cpu" and host and host.get("busy"):
            by_test.setdefault(r.nodeid, host)
    for r in results:
        host = by_test.get(r.nodeid) if r.backend == "cpu" else None
        if host is None:
            continue
        busy[r.key] = host
        for vd in r.verdicts.values():
            if vd.get("status") in (REGRESSED, IMPROVED):
                vd["reason"] = (
                    f"measured on a busy host ({describe(host)}): the load, not the code, "
                    f"may explain it (was {vd['status']}: {vd.get('reason')})"
                )
                vd["status"] = INCONCLUSIVE
            if vd.get("status") == INCONCLUSIVE:  # what -v says would settle it: the load first
                rest = f"; {vd['advice']}" if vd.get("advice") else ""
                vd["advice"] = (
                    f"run it again on an idle machine (measured on a busy host: "
                    f"{describe(host)}){rest}"
                )
    shifts = getattr(judgement, "shifts", None) or []
    for i, s in enumerate(shifts):
        hit = next((busy[k] for k in s.keys if k in busy), None)
        if hit is not None and s.verdict.status in (REGRESSED, IMPROVED):
            why = f"measured on a busy host ({describe(hit)}): {s.verdict.reason}"
            shifts[i] = replace(s, verdict=replace(s.verdict, status=INCONCLUSIVE, reason=why))

"""The busy-host rule of judging: on the CPU, a result measured while the host was loaded
(hostload.py flags it) cannot show a change; on any device, neither can a result measured
while another process used its GPU (gpushare.py flags it gpu-shared). judge_run applies it
to every run it judges, so the pytest run and `gpuperf compare` agree."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.verdict import Rule
from ..measure.gpushare import describe as describe_shared
from ..measure.hostload import describe


def _contended(results: list[Any]) -> dict[str, tuple[str, str]]:
    """Test id -> (what its measurement shared, what to do), for each test with a result
    measured on a busy host (on the CPU) or on a GPU another process used: all its
    figures."""
    out: dict[str, tuple[str, str]] = {}
    for r in results:
        host = getattr(r, "host", None)
        shared = getattr(r, "gpu_shared", None)
        if shared:
            seen = describe_shared(shared)
            what = f"measured on a shared GPU ({seen})"
            out.setdefault(
                r.nodeid, (what, f"run it again on a GPU no other process uses ({seen})")
            )
        elif r.backend == "cpu" and host and host.get("busy"):
            load = describe(host)
            todo = f"run it again on an idle machine (measured on a busy host: {load})"
            out.setdefault(r.nodeid, (f"measured on a busy host ({load})", todo))
    return out


BUSY = Rule.BUSY


def busy_verdicts(results: Iterable[Any], judgement: Any = None) -> None:
    """A result measured on a busy host (on the CPU), or on a GPU another process used,
    cannot show a change: its regressed or improved verdicts become inconclusive, with
    the reason; so does a class-wide shift that such a result helped estimate
    (`judgement.shifts`)."""
    from dataclasses import replace

    from ..core.verdict import amend
    from .verdict import IMPROVED, INCONCLUSIVE, REGRESSED

    results = list(results)
    by_test = _contended(results)
    busy: dict[str, str] = {}
    for r in results:
        if r.nodeid not in by_test:
            continue
        what, todo = by_test[r.nodeid]
        busy[r.key] = what
        for name, vd in r.verdicts.items():
            if vd.status in (REGRESSED, IMPROVED):
                vd = amend(vd, BUSY, figures={"host": what}, status=INCONCLUSIVE, reason=(
                    f"{what}: the load, not the code, may explain it "
                    f"(was {vd.status}: {vd.reason})"))  # fmt: skip
            if vd.status == INCONCLUSIVE:  # what -v says would settle it: the load first
                rest = f"; {vd.advice}" if vd.advice else ""
                vd = amend(vd, None, advice=f"{todo}{rest}")
            r.verdicts[name] = vd
    shifts = getattr(judgement, "shifts", None) or []
    for i, s in enumerate(shifts):
        hit = next((busy[k] for k in s.keys if k in busy), None)
        if hit is not None and s.verdict.status in (REGRESSED, IMPROVED):
            why = f"{hit}: {s.verdict.reason}"
            shifts[i] = replace(s, verdict=amend(s.verdict, BUSY, figures={"host": hit},
                                                 status=INCONCLUSIVE, reason=why))  # fmt: skip

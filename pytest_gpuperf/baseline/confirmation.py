"""The confirmation step of the gate: which tests a run re-measures in a fresh process
(`flagged_tests`), and how the fresh process's verdicts are merged into the first ones
(`confirm`): a regression stands only if it holds in both. No pytest and no I/O here."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..results import Result
from ..verdict import INCONCLUSIVE, REGRESSED
from .judge import Judgement


def confirm(
    results: list[Result],
    first: Judgement,
    again: list[Result],
    again_j: Judgement,
    failure: str | None,
) -> None:
    """Merge a confirmation run (the flagged tests re-measured in a fresh process, judged
    with this run's class offsets) into the first verdicts: a regression stands only if it
    holds in both; otherwise it becomes inconclusive, and says so."""
    by_key = {r.key: r for r in again}
    for r in results:
        for name, vd in r.verdicts.items():
            if vd.get("status") != REGRESSED:
                continue
            twin = by_key.get(r.key)
            v2 = twin.verdicts.get(name) if twin is not None else None
            first_text = f"{(vd.get('change') or 0) * 100:+.2f}%"
            if failure is not None or v2 is None:
                why = failure or "the fresh process gave no figure for it"
                vd["basis"] = (vd.get("basis") or "") + f"; not re-measured ({why})"
                continue
            again_text = (
                f"{v2['change'] * 100:+.2f}%"
                if isinstance(v2.get("change"), float)
                else "no change"
            )
            apart = _apart(vd, v2)
            if v2.get("status") == REGRESSED and apart is not None:
                vd["confirmed"] = False
                vd["status"] = INCONCLUSIVE
                vd["reason"] = (
                    f"the fresh process measured {again_text} where this run measured "
                    f"{first_text}, further apart than their uncertainty (±{apart * 100:.1f}%): "
                    "the figure depends on what ran before it in the process, not on the "
                    "code alone"
                )
            elif v2.get("status") == REGRESSED:
                vd["confirmed"] = True
                vd["reason"] = f"{vd.get('reason')}; confirmed in a fresh process ({again_text})"
            else:
                vd["confirmed"] = False
                vd["status"] = INCONCLUSIVE
                vd["reason"] = (
                    f"not confirmed in a fresh process: {first_text} here, {again_text} "
                    f"({v2.get('status')}) there"
                )
    again_shift = {(sh.cls, sh.gpu): sh for sh in again_j.shifts}
    for i, s in enumerate(first.shifts):
        if s.verdict.status != REGRESSED:
            continue
        shift_twin = again_shift.get((s.cls, s.gpu)) or again_shift.get((s.cls, None))
        if failure is None and shift_twin is not None and shift_twin.verdict.status == REGRESSED:
            v = replace(
                s.verdict,
                confirmed=True,
                reason=s.verdict.reason + "; confirmed in a fresh process",
            )
        elif failure is None:
            v = replace(
                s.verdict,
                status=INCONCLUSIVE,
                confirmed=False,
                reason="not confirmed in a fresh process",
            )
        else:
            v = replace(s.verdict, basis=s.verdict.basis + f"; not re-measured ({failure})")
        first.shifts[i] = replace(s, verdict=v)


def _apart(first: dict[str, Any], again: dict[str, Any]) -> float | None:
    """The two figures' combined uncertainty when the change measured in the fresh process
    differs from this run's by more than it (a regression must repeat, and repeat alike);
    None when they agree."""
    c1, c2 = first.get("change"), again.get("change")
    u1, u2 = first.get("uncertainty") or 0.0, again.get("uncertainty") or 0.0
    if not isinstance(c1, float) or not isinstance(c2, float) or c1 <= -1 or c2 <= -1:
        return None
    bound = math.sqrt(u1 * u1 + u2 * u2)
    return bound if abs(math.log1p(c1) - math.log1p(c2)) > bound else None


def flagged_tests(results: list[Result], judgement: Judgement) -> list[str]:
    """The tests a confirmation run re-measures: those with a regressed metric, and every
    test of a class whose run-wide shift regressed."""
    out = {
        r.nodeid for r in results if any(v.get("status") == REGRESSED for v in r.verdicts.values())
    }
    keys = {k for s in judgement.shifts if s.verdict.status == REGRESSED for k in s.keys}
    out |= {r.nodeid for r in results if r.key in keys}
    return sorted(out)

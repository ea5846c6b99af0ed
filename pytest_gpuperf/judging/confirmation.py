"""The confirmation step of the gate: which tests a run re-measures in a fresh process
(`flagged_tests`), and how the fresh process's verdicts are merged into the first ones
(`confirm`): a regression stands only if it holds in both. No pytest and no I/O here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.results import Result
from .judge import Judgement
from .verdict import FAILED, INCONCLUSIVE, REGRESSED, worse_text


def confirm(
    results: list[Result],
    first: Judgement,
    again: list[Result],
    again_j: Judgement,
    failure: str | None,
) -> None:
    """Merge a confirmation run (the flagged tests re-measured in a fresh process) into
    the first verdicts: a regression stands only if the fresh process shows it too, judged
    like with like (per SM clock cycle for compute-bound work, whose clock differs between
    a test run alone and one run after its neighbours on a power-capped card); when both
    show it, the run fails with the smaller figure. A figure the fresh process could not
    produce (out of memory there, a crash) leaves the regression standing, unconfirmed. A
    class-wide shift is confirmed by the fresh process's own class median."""
    by_key = {r.key: r for r in again}
    for r in results:
        twin = by_key.get(r.key)
        for name, vd in r.verdicts.items():
            if vd.get("status") == REGRESSED:
                v2 = twin.verdicts.get(name) if twin is not None else None
                _merge(vd, v2, failure, twin.error if twin is not None else None)
    again_shift = {(sh.cls, sh.gpu): sh for sh in again_j.shifts}
    for i, s in enumerate(first.shifts):
        if s.verdict.status != REGRESSED:
            continue
        shift_twin = again_shift.get((s.cls, s.gpu)) or again_shift.get((s.cls, None))
        if failure is None and shift_twin is not None and shift_twin.verdict.status == REGRESSED:
            again_text = worse_text(shift_twin.verdict.worse)
            why = (
                f"{s.verdict.reason}; confirmed in a fresh process (its class median: {again_text})"
            )
            v = replace(s.verdict, confirmed=True, reason=why)
        elif failure is None:
            seen = (
                f"{shift_twin.verdict.status}, {worse_text(shift_twin.verdict.worse)}"
                if shift_twin is not None
                else "too few of the class re-measured there"
            )
            v = replace(
                s.verdict,
                status=INCONCLUSIVE,
                confirmed=False,
                reason=f"not confirmed in a fresh process ({seen})",
            )
        else:
            v = replace(s.verdict, basis=s.verdict.basis + f"; not re-measured ({failure})")
        first.shifts[i] = replace(s, verdict=v)


def _change_text(v: dict[str, Any]) -> str:
    c = v.get("change")
    return f"{c * 100:+.2f}%" if isinstance(c, float) else "no change"


def _merge(
    vd: dict[str, Any], v2: dict[str, Any] | None, failure: str | None, error: str | None
) -> None:
    """One regressed verdict `vd` and its fresh twin `v2`: confirmed, not confirmed, or
    standing unconfirmed where the fresh process gave no figure."""
    first_text = _change_text(vd)
    if failure is not None or v2 is None or v2.get("status") == FAILED:
        why = failure or "the fresh process gave no figure for it"
        if v2 is not None and v2.get("status") == FAILED:
            text = f"{error or v2.get('reason') or ''}".lower()
            why = (
                "out of memory there"
                if "out of memory" in text or "oom" in text.split()
                else (f"it failed there: {error or v2.get('reason')}")
            )
        vd["basis"] = (vd.get("basis") or "") + f"; not re-measured ({why})"
        return
    clocked = vd.get("per_cycle") is not None and v2.get("per_cycle") is not None
    if clocked:  # like with like: the clock the card ran at differs between the two runs
        held = vd.get("per_cycle") == REGRESSED and v2.get("per_cycle") == REGRESSED
        seen = (
            f"per SM clock cycle {v2.get('per_cycle')} ({worse_text(v2.get('per_cycle_worse'))})"
        )
    else:
        held = v2.get("status") == REGRESSED
        seen = f"{_change_text(v2)} ({v2.get('status')})"
    if not held:
        vd["confirmed"] = False
        vd["status"] = INCONCLUSIVE
        vd["reason"] = f"not confirmed in a fresh process: {first_text} here, {seen} there"
        return
    vd["confirmed"] = True
    if clocked:  # the time changes differ by the clock; the figure that fails is per cycle
        w1, w2 = vd.get("per_cycle_worse"), v2.get("per_cycle_worse")
        there = worse_text(w2)
        if isinstance(w1, float) and isinstance(w2, float) and w2 < w1:
            vd["per_cycle_worse"] = w2
            there += f", where this run measured {worse_text(w1)}: the smaller is reported"
        why = f"confirmed per SM clock cycle in a fresh process ({there})"
        vd["reason"] = f"{vd.get('reason')}; {why}"
        return
    if _smaller(vd, v2) is v2:  # its interval and what it came from with it (the basis)
        for k in ("change", "worse", "uncertainty", "mde"):
            vd[k] = v2.get(k)
        if v2.get("basis"):
            vd["basis"] = f"{v2['basis']} (the fresh process's)"
        vd["reason"] = (
            f"{vd.get('reason')}; confirmed in a fresh process, which measured "
            f"{_change_text(v2)} where this run measured {first_text}: the smaller is reported"
        )
    else:
        vd["reason"] = f"{vd.get('reason')}; confirmed in a fresh process ({_change_text(v2)})"


def _smaller(vd: dict[str, Any], v2: dict[str, Any]) -> dict[str, Any]:
    w1, w2 = vd.get("worse"), v2.get("worse")
    if isinstance(w1, float) and isinstance(w2, float) and w2 < w1:
        return v2
    return vd


def flagged_tests(results: list[Result], judgement: Judgement) -> list[str]:
    """The tests a confirmation run re-measures: those with a regressed metric, and every
    test of a class whose run-wide shift regressed."""
    out = {
        r.nodeid for r in results if any(v.get("status") == REGRESSED for v in r.verdicts.values())
    }
    keys = {k for s in judgement.shifts if s.verdict.status == REGRESSED for k in s.keys}
    out |= {r.nodeid for r in results if r.key in keys}
    return sorted(out)

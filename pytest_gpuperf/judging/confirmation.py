"""The confirmation step of the gate: which tests a run re-measures in a fresh process
(`flagged_tests`), and how the fresh process's verdicts are merged into the first ones
(`confirm`): a regression stands only if it holds in both. No pytest and no I/O here."""

from __future__ import annotations

from dataclasses import replace

from ..core.results import Result
from ..core.verdict import Rule, Verdict, amend
from .explain import seen_twice
from .judge import Judgement
from .verdict import FAILED, IMPROVED, INCONCLUSIVE, REGRESSED, worse_text

CONFIRM = Rule.CONFIRM
FRESH = "fresh process"
UNCONFIRMED = "unconfirmed"  # the word an improvement nothing re-measured carries


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
            if vd.status == REGRESSED:
                v2 = twin.verdicts.get(name) if twin is not None else None
                r.verdicts[name] = _merge(vd, v2, failure, twin.error if twin is not None else None)
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
            v = amend(s.verdict, CONFIRM, FRESH, figures={"worse there": shift_twin.verdict.worse},
                      confirmed=True, reason=why)  # fmt: skip
        elif failure is None:
            seen = (
                f"{shift_twin.verdict.status}, {worse_text(shift_twin.verdict.worse)}"
                if shift_twin is not None
                else "too few of the class re-measured there"
            )
            v = amend(s.verdict, CONFIRM, FRESH, note=seen, status=INCONCLUSIVE, confirmed=False,
                      reason=f"not confirmed in a fresh process ({seen})")  # fmt: skip
        else:
            v = amend(s.verdict, CONFIRM, FRESH, note=f"not re-measured ({failure})",
                      basis=s.verdict.basis + f"; not re-measured ({failure})")  # fmt: skip
        first.shifts[i] = replace(s, verdict=v)


def _change_text(v: Verdict) -> str:
    c = v.change
    return f"{c * 100:+.2f}%" if isinstance(c, float) else "no change"


def _merge(
    vd: Verdict, v2: Verdict | None, failure: str | None, error: str | None
) -> Verdict:
    """One regressed verdict `vd` and its fresh twin `v2`: confirmed, not confirmed, or
    standing unconfirmed where the fresh process gave no figure."""
    first_text = _change_text(vd)
    if failure is not None or v2 is None or v2.status == FAILED:
        why = failure or "the fresh process gave no figure for it"
        if v2 is not None and v2.status == FAILED:
            text = f"{error or v2.reason or ''}".lower()
            why = (
                "out of memory there"
                if "out of memory" in text or "oom" in text.split()
                else (f"it failed there: {error or v2.reason}")
            )
        return amend(vd, CONFIRM, FRESH, note=f"not re-measured ({why})",
                     basis=(vd.basis or "") + f"; not re-measured ({why})")  # fmt: skip
    clocked = vd.per_cycle is not None and v2.per_cycle is not None
    there = {"change there": v2.change, "status there": str(v2.status)}
    if clocked:  # like with like: the clock the card ran at differs between the two runs
        held = vd.per_cycle == REGRESSED and v2.per_cycle == REGRESSED
        seen = f"per SM clock cycle {v2.per_cycle} ({worse_text(v2.per_cycle_worse)})"
        there = {"per cycle there": v2.per_cycle, "per cycle worse there": v2.per_cycle_worse}
    else:
        held = v2.status == REGRESSED
        seen = f"{_change_text(v2)} ({v2.status})"
    if not held:
        why = f"not confirmed in a fresh process: {first_text} here, {seen} there"
        return amend(vd, CONFIRM, FRESH, figures=there, confirmed=False, status=INCONCLUSIVE,
                     reason=why)  # fmt: skip
    if clocked:  # the time changes differ by the clock; the figure that fails is per cycle
        w1, w2 = vd.per_cycle_worse, v2.per_cycle_worse
        said, kept = worse_text(w2), w1
        if isinstance(w1, float) and isinstance(w2, float) and w2 < w1:
            kept = w2
            said += f", where this run measured {worse_text(w1)}: the smaller is reported"
        why = f"confirmed per SM clock cycle in a fresh process ({said})"
        return amend(vd, CONFIRM, FRESH, figures=there, confirmed=True,
                     reason=f"{vd.reason}; {why}", per_cycle_worse=kept)  # fmt: skip
    if _smaller(vd, v2) is v2:  # its interval and what it came from with it (the basis)
        return amend(
            vd, CONFIRM, FRESH, figures=there, confirmed=True,
            change=v2.change, worse=v2.worse, uncertainty=v2.uncertainty, mde=v2.mde,
            basis=f"{v2.basis} (the fresh process's)" if v2.basis else vd.basis,
            reason=(f"{vd.reason}; confirmed in a fresh process, which measured "
                    f"{_change_text(v2)} where this run measured {first_text}: the smaller "
                    "is reported"),
        )  # fmt: skip
    why = f"{vd.reason}; confirmed in a fresh process ({_change_text(v2)})"
    return amend(vd, CONFIRM, FRESH, figures=there, confirmed=True, reason=why)


def _smaller(vd: Verdict, v2: Verdict) -> Verdict:
    w1, w2 = vd.worse, v2.worse
    if isinstance(w1, float) and isinstance(w2, float) and w2 < w1:
        return v2
    return vd


def flagged_tests(results: list[Result], judgement: Judgement) -> list[str]:
    """The tests a confirmation run re-measures: those with a regressed metric, and every
    test of a class whose run-wide shift regressed."""
    out = {
        r.nodeid for r in results if any(v.status == REGRESSED for v in r.verdicts.values())
    }
    keys = {k for s in judgement.shifts if s.verdict.status == REGRESSED for k in s.keys}
    out |= {r.nodeid for r in results if r.key in keys}
    return sorted(out)


def unconfirmed_improvements(results: list[Result]) -> int:
    """Mark each improvement that nothing measured again (no fresh process, no paired stage:
    explain.seen_twice) unconfirmed, in its trail, its reason (the verdict table's line) and
    `confirmed: false`: one run's luck, which `gpuperf baseline accept` takes only with
    --force. Its status stays: an improvement fails nothing. How many were marked."""
    marked = 0
    for r in results:
        for name, v in r.verdicts.items():
            if v.status != IMPROVED or seen_twice(v) or v.confirmed is False:
                continue
            why = ("neither a fresh process nor the paired stage re-measured it: one run's "
                   "luck until one does (gpuperf baseline accept takes it only with --force)")
            r.verdicts[name] = amend(v, Rule.UNCONFIRMED, "end of run", note=why, confirmed=False,
                                     reason=f"{v.reason}; {UNCONFIRMED}: {why}")  # fmt: skip
            marked += 1
    return marked

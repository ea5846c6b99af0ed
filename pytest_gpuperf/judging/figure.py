"""One figure of a run against its baseline history: the verdicts decided apart from the
noise model (informational, new, incomparable, a zero), and the verdict of a figure the
noise model judges, with the basis text that says where its uncertainty came from.
Pure: judge.py gathers a run's figures and calls these for each."""

from __future__ import annotations

import math
import statistics
from typing import Any

from ..baseline.history import launch_bound_throughout, values_of
from ..core.figures import CLASS_NAMES, LAUNCH
from ..core.results import fmt_number, format_figure
from ..core.verdict import Rule, amend, make
from .noise import LAUNCH_FLOOR, NoiseModel, Spread, better
from .offsets import Item, MetricOffsets, after_text, never_by_the_offset, value_d
from .verdict import (
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    INFO,
    NEW,
    REGRESSED,
    UNCHANGED,
    Verdict,
    decide,
    ratio_change,
)

Z95 = 1.959963984540054


def _s_cur(m: dict[str, Any]) -> float:
    med = m["median"]
    half = max(med - m.get("ci_low", med), m.get("ci_high", med) - med)
    return half / med / Z95 if med > 0 else 0.0


APART, ZERO = Rule.APART, Rule.ZERO


def decided_apart(
    m: dict[str, Any],
    base: dict[str, Any] | None,
    name: str,
    why_not: str | None,
    t: float,
    exclude_session: str | None,
) -> Verdict | None:
    """The verdict a figure gets without the noise model: before any statistics
    (_precheck), or by the difference when the baseline or the value is 0 (no ratio)."""
    v = _precheck(m, base, name, why_not, t, exclude_session)
    if v is None:
        values = values_of(base["metrics"][name], exclude_session)  # type: ignore[index]
        if min(values) <= 0 or m["median"] <= 0:
            v = _judge_zero(values, m, t)
    return v


def _precheck(
    m: dict[str, Any],
    base: dict[str, Any] | None,
    name: str,
    why_not: str | None,
    tol: float,
    exclude_session: str | None,
) -> Verdict | None:
    """The verdicts decided before any statistics: informational, new, incomparable."""
    if m.get("gate") is False:
        why = "informational: reported, never judged"
        return make(INFO, None, None, None, tol, why, rule=APART)
    if base is None:
        return make(NEW, None, None, None, tol, "no baseline", rule=APART)
    if why_not:
        return make(INCOMPARABLE, None, None, None, tol, why_not, rule=APART)
    base_m = base["metrics"].get(name)
    if base_m is None or not values_of(base_m, exclude_session):
        return make(NEW, None, None, None, tol, "no baseline for this metric", rule=APART)
    if base_m.get("unit") != m["unit"]:
        why = f"unit changed: baseline {base_m.get('unit')}, now {m['unit']}"
        return make(INCOMPARABLE, None, None, None, tol, why, rule=APART)
    if base_m.get("direction") != m["direction"]:
        why = (
            f"direction changed: baseline {base_m.get('direction')} is better, now "
            f"{m['direction']} is better"
        )
        return make(INCOMPARABLE, None, None, None, tol, why, rule=APART)
    return None


def other_regime(m: dict[str, Any], base_m: dict[str, Any],
                 exclude_session: str | None = None) -> str | None:  # fmt: skip
    """Why a wall-time figure that reads faster than its baseline says nothing of the code:
    launch-bound in every session it is judged against, and not launch-bound now. Those
    sessions timed the host's launches, this run the GPU's work, which runs faster than
    the host launches it. On an H200 a matmul sweep point saved launch-bound in 3 of 3
    sessions (325-343 TFLOP/s) read "improved +52-69%" in the 3 of 6 runs where it was not,
    code unchanged or 5% slower (docs/performance.md, 2026-12-02, fifth session). Slower
    than those sessions is still a regression (work that got slower enough to leave the
    edge), and launch-bound now it is judged in the launch-bound class with its floor: only
    an improvement is set aside (judge.py)."""
    if LAUNCH in (m.get("flags") or ()) or m.get("noise_class") == LAUNCH:
        return None
    n = launch_bound_throughout(base_m, exclude_session)
    if not n:
        return None
    return (f"launch-bound in all {n} of the baseline's sessions and not in this run:"
            " they timed the host's launches, this run the GPU's work, which runs faster "
            "than that whatever the code (its GPU kernel-time figure compares); save "
            "sessions where it runs as it does now, or keep it on one side of the edge (a "
            "batch further from it)")  # fmt: skip


def set_aside_improvements(figures: dict[str, dict[str, dict[str, Any]]],
                           entries: dict[str, dict[str, Any]],
                           out: dict[str, dict[str, Verdict]],
                           exclude_session: str | None) -> None:  # fmt: skip
    """An IMPROVED wall-time figure whose baseline timed something else (`other_regime`)
    becomes inconclusive, keeping its change and saying why; `out` is updated in place."""
    for key, verdicts in out.items():
        metrics = (entries.get(key) or {}).get("metrics") or {}
        for name, v in verdicts.items():
            m, base_m = (figures.get(key) or {}).get(name), metrics.get(name)
            if v.status != IMPROVED or not isinstance(m, dict) or not isinstance(base_m, dict):
                continue
            why = other_regime(m, base_m, exclude_session)
            if why:
                change = f"{abs(v.change or 0) * 100:.1f}%"
                verdicts[name] = amend(v, Rule.OTHER_REGIME, status=INCONCLUSIVE,
                                       reason=f"{change} faster, but {why}")  # fmt: skip


def _judge_zero(values: list[float], m: dict[str, Any], tol: float) -> Verdict:
    """A metric whose baseline or value is 0 (no casts, no padding): no ratio exists, so
    it is judged by the difference. A value that was exactly 0 in every one of at least 2
    sessions is deterministic: any move in the bad direction is a regression."""
    now = m["median"]
    higher = m["direction"] == "higher"
    now_text = format_figure(now, m["unit"])
    if all(v == 0 for v in values):
        if now == 0:
            return make(UNCHANGED, 0.0, 0.0, 0.0, tol, f"0 in all {len(values)} session(s) and now",
                        rule=ZERO)
        if len(values) < 2:
            return make(
                INCONCLUSIVE,
                None,
                None,
                None,
                tol,
                f"0 in the only baseline session, now {now_text}: save another session "
                "to tell a constant from noise",
                rule=ZERO,
            )
        status = IMPROVED if higher else REGRESSED
        why = f"was exactly 0 in all {len(values)} baseline sessions, now {now_text}"
        return make(status, None, None, 0.0, tol, why, basis="judged by the difference from 0",
                    rule=ZERO)
    ref = statistics.median(values)
    change = now / ref - 1 if ref > 0 else None
    return make(
        INCONCLUSIVE,
        change,
        None,
        None,
        tol,
        f"a value of 0 in the baseline or now ({', '.join(fmt_number(v) for v in values)} "
        f"-> {now_text}): no ratio to judge",
        rule=ZERO,
    )


def judge_item(
    it: Item,
    model: NoiseModel,
    removed: MetricOffsets,
    confidence: float,
) -> Verdict:
    sp = it.spread
    if not math.isfinite(sp.var):
        change = ratio_change(value_d(it, it.g))
        why = (
            "one baseline session and no class spread to borrow: save another session to "
            "know how much this figure varies"
        )
        return make(INCONCLUSIVE, change, -change if it.higher else change, None,
                    it.tolerance, why, mde=it.tolerance, basis="one baseline session",
                    rule=Rule.ONE_SESSION)  # fmt: skip
    fit = model.classes.get(it.cls)
    g, extra, df, after = it.g, 0.0, sp.df, ""
    found = None
    if fit is not None and fit.offsets and sp.offsets_removed:
        found = removed.get(it.key)
        if found is not None:
            g -= found[0]
            pool = fit.pooled_var if fit.pooled_var is not None else sp.var
            extra = (math.pi / 2) * pool / max(1, found[1])  # the variance of their median
            after = after_text(found)
        elif it.raw is not None and math.isfinite(it.raw.var):
            # too few of its class in this run to estimate the run's offset: judged with
            # the spread that keeps the sessions' offsets in
            sp = it.raw
            g, df = better(it.metric["median"], it.higher) - sp.level, sp.df
            after = "; its class's offsets kept in the spread (too few of its class in this run)"
    d = value_d(it, g)
    if sp.aside_dev is not None and g * sp.aside_dev > 0 and abs(g) >= abs(sp.aside_dev) / 2:
        change = ratio_change(d)
        why = (
            f"{change * 100:+.1f}%, the way a baseline session went that was set aside as an "
            "outlier: this may be the same cause, not the code (a model left resident, a "
            "throttled card); fix the cause, or save sessions that show which is normal"
        )
        return make(INCONCLUSIVE, change, -change if it.higher else change, None,
                    it.tolerance, why, basis="; ".join(sp.set_aside),
                    rule=Rule.SET_ASIDE)  # fmt: skip
    v = decide(d, higher_is_better=it.higher, s_cur=_s_cur(it.metric), var=sp.var, df=df,
               k=sp.k, tolerance=it.tolerance, confidence=confidence,
               extra_var=extra)  # fmt: skip
    v = amend(v, None, basis=_basis(v, sp, it.cls, df) + after)
    return never_by_the_offset(v, it) if found is not None else v


def _basis(v: Verdict, sp: Spread, cls: str, df: float) -> str:
    unc = f"±{v.uncertainty * 100:.2f}%" if v.uncertainty is not None else "±?"
    name = CLASS_NAMES.get(cls, cls)
    dft = "inf" if not math.isfinite(df) else f"{df:.0f}"
    if sp.source == "class":
        text = f"{unc} from the spread of {sp.pool_metrics} {name} metrics ({dft} df)"
    elif sp.source == "class (1 session)":
        text = (
            f"{unc}: one baseline session, with the spread of {sp.pool_metrics} {name} "
            f"metrics ({dft} df)"
        )
    elif sp.source.startswith("own,"):
        text = f"{unc} from its own {sp.k} sessions ({dft} df): noisier than its class (F test)"
    else:
        text = f"{unc} from its own {sp.k} sessions ({dft} df)"
    if sp.floored:
        text += (
            f" raised to the launch-bound floor of {LAUNCH_FLOOR * 100:.0f}% (launch-bound wall "
            "time moves between processes more than a few sessions show)"
        )
    if cls == LAUNCH:
        text += (
            "; launch-bound: judged against the launch-bound class only (it times the host "
            "CPU's launches: a GPU-bound configuration, or gpuperf ab, can see a change)"
        )
    if sp.set_aside:
        text += "; " + "; ".join(sp.set_aside)
    return text


def base_clock(base_m: dict[str, Any]) -> float | None:
    clocks = [h["clock_mhz"] for h in base_m["history"] if h.get("clock_mhz")]
    return statistics.median(clocks) if clocks else None

"""THE regression gate: a run's results + a baseline -> a verdict per metric, class-wide
shifts, failure lines. The pytest run and `gpuperf compare` both call `judge_run`, so a
result gets the same verdict in CI and offline; nothing else judges.

A whole run is judged at once, because the noise model needs it: this run's class offsets
(the machine state shifting every metric of a class together) are estimated from the run's
own metrics, and the run's false-alarm budget is shared by the measurements it judges. No
pytest and no I/O here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..baseline.history import (
    PER_CLOCK,
    env_for,
    incomparable_reason,
    series_of,
    values_of,
)
from ..core.figures import CLASS_NAMES, LAUNCH, PEAK, metrics_of, result_classes
from ..core.results import Result, fmt_number, format_figure
from ..core.settings import BY_NAME, FALSE_ALARM
from .busy import busy_verdicts
from .noise import LAUNCH_FLOOR, NoiseModel, Spread, better
from .offsets import (
    ClassShift,
    Item,
    MetricOffsets,
    Offsets,
    after_text,
    bounded_by_class_line,
    cap_derived,
    clamp_offsets,
    class_shift,
    never_by_the_offset,
    run_offsets,
    value_d,
)
from .verdict import (
    FAILED,
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    INFO,
    NEW,
    REGRESSED,
    UNCHANGED,
    Verdict,
    combine_clocked,
    decide,
    per_metric_confidence,
    ratio_change,
    what_would_settle,
)

DEFAULT_TOLERANCE = float(BY_NAME["tolerance"].cuda)
DEFAULT_MEMORY_TOLERANCE = float(BY_NAME["memory_tolerance"].cuda)
FAILING = (REGRESSED, FAILED)  # verdicts that fail the run (and the compare command)
Z95 = 1.959963984540054
SHIFT_SHARE = 0.5  # of the run's false-alarm budget, for the class-wide shift verdicts


@dataclass
class Judgement:
    """What judging a run found, beside the verdicts set on its results."""

    confidence: float
    judged: int  # measurements and class lines sharing the run's false-alarm budget
    shifts: list[ClassShift] = field(default_factory=list)
    offsets: Offsets = field(default_factory=dict)  # each class's shift in this run
    metric_offsets: MetricOffsets = field(default_factory=dict)  # removed from each metric
    shift_confidence: float | None = None

    def failing(self, results: Iterable[Result]) -> bool:
        return any(failing(r) for r in results) or any(
            s.verdict.status == REGRESSED for s in self.shifts
        )


def tolerances(
    result: Result, tolerance: float | None, memory_tolerance: float | None
) -> tuple[float, float]:
    cfg = result.config or {}
    tol = tolerance if tolerance is not None else cfg.get("tolerance", DEFAULT_TOLERANCE)
    mem = (
        memory_tolerance
        if memory_tolerance is not None
        else cfg.get("memory_tolerance", DEFAULT_MEMORY_TOLERANCE)
    )
    return float(tol), float(mem)


def _s_cur(m: dict[str, Any]) -> float:
    med = m["median"]
    half = max(med - m.get("ci_low", med), m.get("ci_high", med) - med)
    return half / med / Z95 if med > 0 else 0.0


def judge_run(
    results: list[Result],
    entries: dict[str, dict[str, Any]],
    env: dict[str, Any],
    *,
    false_alarm: float = FALSE_ALARM,
    tolerance: float | None = None,
    memory_tolerance: float | None = None,
    allow_cross_gpu: bool = False,
    exclude_session: str | None = None,
    offsets: MetricOffsets | None = None,
    incomparable: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None,
) -> Judgement:
    """Judge every result of a run against the baseline `entries`; sets `result.verdicts`.

    `exclude_session`: the run's own session, when it was saved into these entries (its
    values are left out of the history it is judged against). `offsets`: the offsets the
    first run removed from each metric, for a confirmation run (it re-measures only the
    suspects, whose own median would absorb a shift again); a class line is always
    estimated from the run's own figures. `incomparable`: why an entry must not be
    compared (pytest passes the users' hook); default history.incomparable_reason."""
    classes = result_classes(results)
    figures = {r.key: metrics_of(r, classes.get(r.key)) for r in results}
    current = {
        f"{key}::{name}": str(m["noise_class"])
        for key, ms in figures.items()
        for name, m in ms.items()
    }
    derived = {f"{r.key}::value" for r in results if r.derived_from is not None}
    series = series_of(entries, exclude_session, current, derived)
    model = NoiseModel.fit(series)
    raw_model = NoiseModel.fit(series, offsets=False)
    out: dict[str, dict[str, Verdict]] = {r.key: {} for r in results}
    items, per_clock = _items(
        results, figures, entries, env, model, raw_model, out,
        (tolerance, memory_tolerance, allow_cross_gpu, exclude_session, incomparable),
    )  # fmt: skip
    shifts_est, removed = run_offsets(items, list(per_clock.values()), model, offsets)
    gated = [i for i in items if i.result.derived_from is None]
    gated += [i for i in per_clock.values() if i.result.derived_from is None]
    n_shift = len(shifts_est)
    share = SHIFT_SHARE if n_shift else 0.0
    confidence = per_metric_confidence(false_alarm * (1 - share), len(gated))
    conf_s = per_metric_confidence(false_alarm * share, n_shift) if n_shift else None
    unbounded = removed
    removed = clamp_offsets(removed, [*items, *per_clock.values()], model)
    lines = [
        class_shift(
            cls,
            gpu,
            shifts_est[(cls, gpu)],
            items,
            model,
            conf_s or confidence,
            list(per_clock.values()),
        )
        for cls, gpu in sorted(shifts_est, key=str)
    ]
    shifts = [s for s in lines if s is not None]

    def verdict(it: Item, offs: MetricOffsets) -> Verdict:
        it_v = _judge_item(it, model, offs, confidence)
        if it.name == "throughput" and it.result.key in per_clock and it_v.worse is not None:
            cyc = _judge_item(per_clock[it.result.key], model, offs, confidence)
            base_clock = _base_clock(entries[it.result.key]["metrics"]["throughput"])
            it_v = combine_clocked(it_v, cyc, base_clock, it.metric.get("clock_mhz"))
        return it_v

    rests: set[str] = set()  # figures decided only because their offset was bounded
    for it in items:
        out[it.result.key][it.name] = v = verdict(it, removed)
        bounded = any(
            removed.get(k, (0.0, 0, False))[2] for k in (it.key, f"{it.result.key}::{PER_CLOCK}")
        )
        if (
            bounded
            and v.status in (REGRESSED, IMPROVED)
            and verdict(it, unbounded).status != v.status
        ):
            rests.add(it.key)
    bounded_by_class_line(out, [i for i in items if i.key in rests], removed, shifts)
    cap_derived(results, out)
    for r in results:
        base = entries.get(r.key)
        r.verdicts = {
            name: verdict_dict(
                v, len((base or {}).get("metrics", {}).get(name, {}).get("history", []))
            )
            for name, v in out.get(r.key, {}).items()
        }
    judgement = Judgement(
        confidence, len(gated) + n_shift, shifts, dict(shifts_est), removed, conf_s
    )
    busy_verdicts(results, judgement)  # on the CPU, a busy host decides nothing
    return judgement


def _items(
    results: list[Result],
    figures: dict[str, dict[str, dict[str, Any]]],
    entries: dict[str, dict[str, Any]],
    env: dict[str, Any],
    model: NoiseModel,
    raw_model: NoiseModel,
    out: dict[str, dict[str, Verdict]],
    opts: tuple[Any, ...],
) -> tuple[list[Item], dict[str, Item]]:
    """The figures to judge by the noise model; the verdicts decided without it (new,
    incomparable, informational, zero, failed) go straight into `out`."""
    tolerance, memory_tolerance, allow_cross_gpu, exclude_session, incomparable = opts
    items: list[Item] = []
    per_clock: dict[str, Item] = {}
    for r in results:
        tol, mem_tol = tolerances(r, tolerance, memory_tolerance)
        base = entries.get(r.key)
        metrics = figures[r.key]
        verdicts = out[r.key]
        if not metrics:
            for name in (base or {}).get("metrics", {}):
                if name != PER_CLOCK:
                    why = r.error or "the benchmark produced no result"
                    verdicts[name] = Verdict(FAILED, None, None, None, tol, why)
            continue
        why_not = None
        if base is not None:
            decide_incomparable = incomparable or incomparable_reason  # the users' hook
            why_not = decide_incomparable(base.get("environment", {}), env_for(env, r.gpus_used))
            if why_not and allow_cross_gpu and why_not.startswith("gpu differs"):
                why_not = None
        for name, m in metrics.items():
            t = mem_tol if name == PEAK else tol
            v = _precheck(m, base, name, why_not, t, exclude_session)
            if v is None:
                values = values_of(base["metrics"][name], exclude_session)  # type: ignore[index]
                if min(values) <= 0 or m["median"] <= 0:
                    v = _judge_zero(values, m, t)
            if v is not None:
                if name != PER_CLOCK:
                    verdicts[name] = v
                continue
            spread = model.spread(f"{r.key}::{name}")
            if spread is None:  # not a usable history (e.g. a non-finite value)
                continue
            g = better(m["median"], m["direction"] == "higher") - spread.level
            item = Item(r, name, m, str(m.get("noise_class")), spread, t, g,
                         raw_model.spread(f"{r.key}::{name}"))  # fmt: skip
            if name == PER_CLOCK:
                per_clock[r.key] = item
            else:
                items.append(item)
    return items, per_clock


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
        return Verdict(INFO, None, None, None, tol, "informational: reported, never judged")
    if base is None:
        return Verdict(NEW, None, None, None, tol, "no baseline")
    if why_not:
        return Verdict(INCOMPARABLE, None, None, None, tol, why_not)
    base_m = base["metrics"].get(name)
    if base_m is None or not values_of(base_m, exclude_session):
        return Verdict(NEW, None, None, None, tol, "no baseline for this metric")
    if base_m.get("unit") != m["unit"]:
        why = f"unit changed: baseline {base_m.get('unit')}, now {m['unit']}"
        return Verdict(INCOMPARABLE, None, None, None, tol, why)
    if base_m.get("direction") != m["direction"]:
        why = (
            f"direction changed: baseline {base_m.get('direction')} is better, now "
            f"{m['direction']} is better"
        )
        return Verdict(INCOMPARABLE, None, None, None, tol, why)
    return None


def _judge_zero(values: list[float], m: dict[str, Any], tol: float) -> Verdict:
    """A metric whose baseline or value is 0 (no casts, no padding): no ratio exists, so
    it is judged by the difference. A value that was exactly 0 in every one of at least 2
    sessions is deterministic: any move in the bad direction is a regression."""
    now = m["median"]
    higher = m["direction"] == "higher"
    now_text = format_figure(now, m["unit"])
    if all(v == 0 for v in values):
        if now == 0:
            return Verdict(
                UNCHANGED, 0.0, 0.0, 0.0, tol, f"0 in all {len(values)} session(s) and now"
            )
        if len(values) < 2:
            return Verdict(
                INCONCLUSIVE,
                None,
                None,
                None,
                tol,
                f"0 in the only baseline session, now {now_text}: save another session "
                "to tell a constant from noise",
            )
        status = IMPROVED if higher else REGRESSED
        why = f"was exactly 0 in all {len(values)} baseline sessions, now {now_text}"
        return Verdict(status, None, None, 0.0, tol, why, basis="judged by the difference from 0")
    ref = statistics.median(values)
    change = now / ref - 1 if ref > 0 else None
    return Verdict(
        INCONCLUSIVE,
        change,
        None,
        None,
        tol,
        f"a value of 0 in the baseline or now ({', '.join(fmt_number(v) for v in values)} "
        f"-> {now_text}): no ratio to judge",
    )


def _judge_item(
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
        return Verdict(INCONCLUSIVE, change, -change if it.higher else change, None,
                       it.tolerance, why, it.tolerance, basis="one baseline session")  # fmt: skip
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
        return Verdict(INCONCLUSIVE, change, -change if it.higher else change, None,
                       it.tolerance, why, basis="; ".join(sp.set_aside))  # fmt: skip
    v = decide(d, higher_is_better=it.higher, s_cur=_s_cur(it.metric), var=sp.var, df=df,
               k=sp.k, tolerance=it.tolerance, confidence=confidence,
               extra_var=extra)  # fmt: skip
    v = replace(v, basis=_basis(v, sp, it.cls, df) + after)
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


def _base_clock(base_m: dict[str, Any]) -> float | None:
    clocks = [h["clock_mhz"] for h in base_m["history"] if h.get("clock_mhz")]
    return statistics.median(clocks) if clocks else None


# ------------------------------------------------------------------- verdicts as dicts


def verdict_dict(v: Verdict, history_len: int) -> dict[str, Any]:
    d = asdict(v)
    advice = what_would_settle(v, history_len)
    if advice:
        d["advice"] = advice
    return d


def as_verdict(vd: dict[str, Any]) -> Verdict:
    """A Verdict from verdict_dict's output (fields a file lacks take their defaults)."""
    names = ("status", "change", "worse", "uncertainty", "tolerance", "reason")
    optional = [k for k in Verdict.__dataclass_fields__ if k not in names and k in vd]
    return Verdict(
        str(vd.get("status")),
        vd.get("change"),
        vd.get("worse"),
        vd.get("uncertainty"),
        float(vd.get("tolerance") or 0.0),
        str(vd.get("reason") or ""),
        **{k: vd[k] for k in optional},
    )


def failing(result: Result) -> bool:
    return any(v.get("status") in FAILING for v in result.verdicts.values())

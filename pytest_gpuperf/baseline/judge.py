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
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..results import Result, fmt_number, format_figure
from ..settings import BY_NAME, FALSE_ALARM
from ..verdict import (
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
    relative_change_text,
    what_would_settle,
)
from .busy import busy_verdicts
from .history import (
    PER_CLOCK,
    env_for,
    incomparable_reason,
    series_of,
    values_of,
)
from .noise import CLASS_NAMES, LAUNCH, MIN_OFFSET_METRICS, NoiseModel, Spread, run_offset
from .schema import metrics_of, result_classes

DEFAULT_TOLERANCE = float(BY_NAME["tolerance"].cuda)
DEFAULT_MEMORY_TOLERANCE = float(BY_NAME["memory_tolerance"].cuda)
FAILING = (REGRESSED, FAILED)  # verdicts that fail the run (and the compare command)
Z95 = 1.959963984540054
Offsets = dict[tuple[str, "str | None"], tuple[float, int]]  # (class, GPU) -> (log, metrics)


@dataclass(frozen=True)
class ClassShift:
    """One noise class's shift in this run against the baseline's average session."""

    cls: str
    gpu: str | None
    verdict: Verdict
    metrics: int
    keys: tuple[str, ...]  # the run's results that estimated it

    def line(self) -> str:
        where = f" on {self.gpu}" if self.gpu else ""
        v = self.verdict
        return (
            f"class-wide: {CLASS_NAMES.get(self.cls, self.cls)} benchmarks{where} "
            f"{relative_change_text(v)} against the baseline's sessions (median of "
            f"{self.metrics} metrics): {v.status.upper()}"
            + (f" ({v.reason})" if v.status not in (UNCHANGED, IMPROVED) else "")
        )


@dataclass
class Judgement:
    """What judging a run found, beside the verdicts set on its results."""

    confidence: float
    judged: int  # measurements sharing the run's false-alarm budget
    shifts: list[ClassShift] = field(default_factory=list)
    offsets: Offsets = field(default_factory=dict)

    def failing(self, results: Iterable[Result]) -> bool:
        return any(failing(r) for r in results) or any(
            s.verdict.status == REGRESSED for s in self.shifts
        )


@dataclass
class _Item:
    result: Result
    name: str
    metric: dict[str, Any]
    cls: str
    spread: Spread
    tolerance: float
    d: float  # log(now / level)
    raw: Spread | None = None  # the spread with session offsets kept in (no run offset)


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
    offsets: Offsets | None = None,
    incomparable: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None,
) -> Judgement:
    """Judge every result of a run against the baseline `entries`; sets `result.verdicts`.

    `exclude_session`: the run's own session, when it was saved into these entries (its
    values are left out of the history it is judged against). `offsets`: this run's class
    offsets, given (a confirmation run re-measures a few tests: too few to estimate them).
    `incomparable`: why an entry must not be compared (pytest passes the users' hook);
    default history.incomparable_reason."""
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
    items: list[_Item] = []
    per_clock: dict[str, _Item] = {}
    out: dict[str, dict[str, Verdict]] = {}
    for r in results:
        tol, mem_tol = tolerances(r, tolerance, memory_tolerance)
        base = entries.get(r.key)
        metrics = figures[r.key]
        verdicts: dict[str, Verdict] = {}
        out[r.key] = verdicts
        if not metrics:
            if base is not None:
                for name in base.get("metrics", {}):
                    if name != PER_CLOCK:
                        verdicts[name] = Verdict(
                            FAILED,
                            None,
                            None,
                            None,
                            tol,
                            r.error or "the benchmark produced no result",
                        )
            continue
        why_not = None
        if base is not None:
            decide = incomparable or incomparable_reason  # the users' hook, in pytest
            why_not = decide(base.get("environment", {}), env_for(env, r.gpus_used))
            if why_not and allow_cross_gpu and why_not.startswith("gpu differs"):
                why_not = None
        for name, m in metrics.items():
            t = mem_tol if name == "peak_reserved" else tol
            v = _precheck(m, base, name, why_not, t, exclude_session)
            if v is not None:
                if name != PER_CLOCK:
                    verdicts[name] = v
                continue
            values = values_of(base["metrics"][name], exclude_session)  # type: ignore[index]
            if min(values) <= 0 or m["median"] <= 0:
                if name != PER_CLOCK:
                    verdicts[name] = _judge_zero(values, m, t)
                continue
            spread = model.spread(f"{r.key}::{name}")
            if spread is None:  # not a usable history (e.g. a non-finite value)
                continue
            item = _Item(
                r,
                name,
                m,
                str(m.get("noise_class")),
                spread,
                t,
                math.log(m["median"]) - spread.level,
                raw_model.spread(f"{r.key}::{name}"),
            )
            if name == PER_CLOCK:
                per_clock[r.key] = item
            else:
                items.append(item)
    # this run's class offsets, per GPU where the GPU has enough of the class
    if offsets is None:
        offsets = _run_offsets(items, model)
    shifts_wanted = sorted({k for k in offsets}, key=str)
    gated = [i for i in items if not i.result.derived_from]
    m_total = len(gated) + len(shifts_wanted)
    confidence = per_metric_confidence(false_alarm, m_total)
    for it in items:  # a per-clock figure is judged only as part of its throughput's verdict
        it_v = _judge_item(it, model, offsets, confidence)
        if it.name == "throughput" and it.result.key in per_clock and it_v.worse is not None:
            cyc = _judge_item(per_clock[it.result.key], model, offsets, confidence)
            base_clock = _base_clock(entries[it.result.key]["metrics"]["throughput"])
            it_v = combine_clocked(it_v, cyc, base_clock, it.metric.get("clock_mhz"))
        out[it.result.key][it.name] = it_v
    shifts = [
        _shift(cls, gpu, offsets[(cls, gpu)], items, model, confidence)
        for cls, gpu in shifts_wanted
    ]
    for r in results:
        base = entries.get(r.key)
        r.verdicts = {
            name: verdict_dict(
                v, len((base or {}).get("metrics", {}).get(name, {}).get("history", []))
            )
            for name, v in out.get(r.key, {}).items()
        }
    judgement = Judgement(confidence, m_total, [s for s in shifts if s is not None], dict(offsets))
    busy_verdicts(results, judgement)  # on the CPU, a busy host decides nothing
    return judgement


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


def _run_offsets(items: list[_Item], model: NoiseModel) -> Offsets:
    by_cls: dict[str, list[_Item]] = defaultdict(list)
    for it in items:
        fit = model.classes.get(it.cls)
        if fit is not None and fit.offsets and it.spread.offsets_removed:
            by_cls[it.cls].append(it)
    out: Offsets = {}
    for cls, its in by_cls.items():
        whole = run_offset([i.d for i in its])
        by_gpu: dict[str | None, list[float]] = defaultdict(list)
        for i in its:
            by_gpu[i.result.gpu].append(i.d)
        if len(by_gpu) > 1 and all(len(v) >= MIN_OFFSET_METRICS for v in by_gpu.values()):
            for gpu, ds in by_gpu.items():
                out[(cls, gpu)] = (statistics.median(ds), len(ds))
        elif whole is not None:
            out[(cls, None)] = (whole, len(its))
    return out


def _offset_of(offsets: Offsets, cls: str, gpu: str | None) -> tuple[float, int] | None:
    for key in ((cls, gpu), (cls, None)):
        if key in offsets:
            return offsets[key]
    return None


def _offset_var(model: NoiseModel) -> tuple[float, int] | None:
    """The variance of session offsets, pooled over the classes that have them."""
    ss, df = 0.0, 0
    for fit in model.classes.values():
        ov = fit.offset_var
        if ov is not None:
            ss += ov[0] * ov[1]
            df += ov[1]
    return (ss / df, df) if df else None


def _judge_item(it: _Item, model: NoiseModel, offsets: Offsets, confidence: float) -> Verdict:
    sp = it.spread
    higher = it.metric["direction"] == "higher"
    if not math.isfinite(sp.var):
        change = ratio_change(it.d)
        return Verdict(
            INCONCLUSIVE,
            change,
            -change if higher else change,
            None,
            it.tolerance,
            "one baseline session and no class spread to borrow: save another "
            "session to know how much this figure varies",
            it.tolerance,
            basis="one baseline session",
        )
    fit = model.classes.get(it.cls)
    d, extra, df = it.d, 0.0, sp.df
    after = ""
    if fit is not None and fit.offsets and sp.offsets_removed:
        found = _offset_of(offsets, it.cls, it.result.gpu)
        if found is not None:
            d -= found[0]
            pool = fit.pooled_var if fit.pooled_var is not None else sp.var
            extra = (math.pi / 2) * pool / found[1]  # the variance of a median of found[1]
            after = f", after this run's class-wide {ratio_change(found[0]) * 100:+.1f}%"
        elif it.raw is not None and math.isfinite(it.raw.var):
            # too few of its class in this run to estimate the run's offset: judged with
            # the spread that keeps the sessions' offsets in
            sp = it.raw
            d, df = math.log(it.metric["median"]) - sp.level, sp.df
            after = "; its class's offsets kept in the spread (too few of its class in this run)"
    if sp.aside_dev is not None and d * sp.aside_dev > 0 and abs(d) >= abs(sp.aside_dev) / 2:
        change = ratio_change(d)
        why = (
            f"{change * 100:+.1f}%, the way a baseline session went that was set aside as an "
            "outlier: this may be the same cause, not the code (a model left resident, a "
            "throttled card); fix the cause, or save sessions that show which is normal"
        )
        return Verdict(INCONCLUSIVE, change, -change if higher else change, None, it.tolerance,
                       why, basis="; ".join(sp.set_aside))  # fmt: skip
    v = decide(
        d,
        higher_is_better=higher,
        s_cur=_s_cur(it.metric),
        var=sp.var,
        df=df,
        k=sp.k,
        tolerance=it.tolerance,
        confidence=confidence,
        extra_var=extra,
    )
    return replace(v, basis=_basis(v, sp, it.cls, df) + after)


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
    if cls == LAUNCH:
        text += (
            "; launch-bound: judged against the launch-bound class only (it times the host "
            "CPU's launches: a GPU-bound configuration, or gpuperf ab, can see a change)"
        )
    if sp.set_aside:
        text += "; " + "; ".join(sp.set_aside)
    return text


def _shift(
    cls: str,
    gpu: str | None,
    offset: tuple[float, int],
    items: list[_Item],
    model: NoiseModel,
    confidence: float,
) -> ClassShift | None:
    """The verdict on a class's shift: a uniform slowdown is removed from each metric's
    verdict by the offsets, so it is judged here, against how far whole sessions stray."""
    ov = _offset_var(model)
    fit = model.classes.get(cls)
    mine = [i for i in items if i.cls == cls and (gpu is None or i.result.gpu == gpu)]
    if ov is None or fit is None or not mine:
        return None
    tol = statistics.median(i.tolerance for i in mine)
    pool = fit.pooled_var or 0.0
    v = decide(
        offset[0],
        higher_is_better=True,
        s_cur=0.0,
        var=ov[0],
        df=ov[1],
        k=len(fit.offsets),
        tolerance=tol,
        confidence=confidence,
        extra_var=(math.pi / 2) * pool / len(mine),
    )
    v = replace(
        v,
        basis=f"±{(v.uncertainty or 0) * 100:.2f}% from the spread of "
        f"{len(fit.offsets)} baseline sessions' offsets ({ov[1]} df)",
    )
    return ClassShift(cls, gpu, v, len(mine), tuple(sorted({i.result.key for i in mine})))


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

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
    CONFIDENCE,
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
    z_quantile,
)
from .busy import busy_verdicts
from .history import (
    PER_CLOCK,
    env_for,
    incomparable_reason,
    series_of,
    values_of,
)
from .noise import (
    CLASS_NAMES,
    LAUNCH,
    MIN_OFFSET_METRICS,
    SCREEN_P,
    NoiseModel,
    Spread,
    better,
    f_isf,
    leave_one_out,
)
from .schema import metrics_of, result_classes

DEFAULT_TOLERANCE = float(BY_NAME["tolerance"].cuda)
DEFAULT_MEMORY_TOLERANCE = float(BY_NAME["memory_tolerance"].cuda)
FAILING = (REGRESSED, FAILED)  # verdicts that fail the run (and the compare command)
Z95 = 1.959963984540054
SHIFT_SHARE = 0.25  # of the run's false-alarm budget, for the class-wide shift verdicts
MIN_FRESH_OTHERS = 6  # re-measured class-mates a fresh process needs for its own offsets
Offsets = dict[tuple[str, "str | None"], tuple[float, int]]  # (class, GPU) -> (log, metrics)
# "key::metric" -> (log removed, metrics it is the median of, bounded by the sessions)
MetricOffsets = dict[str, tuple[float, int, bool]]


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
            f"{_shift_text(v)} against the baseline's sessions (median of "
            f"{self.metrics} metrics): {v.status.upper()}"
            + (f" ({v.reason})" if v.status not in (UNCHANGED, IMPROVED) else "")
        )


def _shift_text(v: Verdict) -> str:
    """A class shift in words: its figures mix directions (tokens/s and latencies), so it
    is said as faster or slower, never as a signed change of a value."""
    if v.worse is None:
        return "-"
    unc = f" ±{v.uncertainty * 100:.2f}%" if v.uncertainty is not None else ""
    word = "slower" if v.worse > 0 else "faster"
    return f"{abs(v.worse) * 100:.2f}%{unc} {word}"


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


@dataclass
class _Item:
    result: Result
    name: str
    metric: dict[str, Any]
    cls: str
    spread: Spread
    tolerance: float
    g: float  # log(now / level) in "better" space (+ = better)
    raw: Spread | None = None  # the spread with session offsets kept in (no run offset)

    @property
    def key(self) -> str:
        return f"{self.result.key}::{self.name}"

    @property
    def higher(self) -> bool:
        return self.metric["direction"] == "higher"


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
    shifts_est, removed = _run_offsets(items, list(per_clock.values()), model, offsets)
    gated = [i for i in items if i.result.derived_from is None]
    gated += [i for i in per_clock.values() if i.result.derived_from is None]
    n_shift = len(shifts_est)
    share = SHIFT_SHARE if n_shift else 0.0
    confidence = per_metric_confidence(false_alarm * (1 - share), len(gated))
    conf_s = per_metric_confidence(false_alarm * share, n_shift) if n_shift else None
    removed = clamp_offsets(removed, [*items, *per_clock.values()], model)
    for it in items:
        it_v = _judge_item(it, model, removed, confidence)
        if it.name == "throughput" and it.result.key in per_clock and it_v.worse is not None:
            pc = per_clock[it.result.key]
            cyc = _judge_item(pc, model, removed, confidence)
            base_clock = _base_clock(entries[it.result.key]["metrics"]["throughput"])
            it_v = combine_clocked(it_v, cyc, base_clock, it.metric.get("clock_mhz"))
        out[it.result.key][it.name] = it_v
    _cap_derived(results, out)
    shifts = [
        _shift(cls, gpu, shifts_est[(cls, gpu)], items, model, conf_s or confidence)
        for cls, gpu in sorted(shifts_est, key=str)
    ]
    for r in results:
        base = entries.get(r.key)
        r.verdicts = {
            name: verdict_dict(
                v, len((base or {}).get("metrics", {}).get(name, {}).get("history", []))
            )
            for name, v in out.get(r.key, {}).items()
        }
    judgement = Judgement(
        confidence, len(gated) + n_shift, [s for s in shifts if s is not None],
        dict(shifts_est), removed, conf_s,
    )  # fmt: skip
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
) -> tuple[list[_Item], dict[str, _Item]]:
    """The figures to judge by the noise model; the verdicts decided without it (new,
    incomparable, informational, zero, failed) go straight into `out`."""
    tolerance, memory_tolerance, allow_cross_gpu, exclude_session, incomparable = opts
    items: list[_Item] = []
    per_clock: dict[str, _Item] = {}
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
            t = mem_tol if name == "peak_reserved" else tol
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
            item = _Item(r, name, m, str(m.get("noise_class")), spread, t, g,
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


def _groups(its: list[_Item]) -> dict[str | None, list[_Item]]:
    """A class's figures by GPU where each GPU has enough of them for its own offset, else
    all together (the GPUs of one host share a machine state)."""
    by_gpu: dict[str | None, list[_Item]] = defaultdict(list)
    for i in its:
        by_gpu[i.result.gpu].append(i)
    if len(by_gpu) > 1 and all(len(v) >= MIN_OFFSET_METRICS for v in by_gpu.values()):
        return dict(by_gpu)
    return {None: its}


def _source_key(r: Result) -> str:
    """The figure a derived one was computed from: its measurement's throughput."""
    return (
        f"{r.nodeid}::{r.derived_from}::throughput" if r.derived_from else f"{r.nodeid}::throughput"
    )


def _run_offsets(
    items: list[_Item], clocked: list[_Item], model: NoiseModel, given: MetricOffsets | None
) -> tuple[Offsets, MetricOffsets]:
    """This run's class shifts (the median of each offset class's figures, per GPU where it
    can be) and, per figure, the offset judged after: the median of the OTHER figures of
    its class (leave-one-out: its own change never moves it). Per-clock figures have
    offsets of their own (the clock took the power state out of them). A confirmation run
    (`given`: the first run's offsets) re-measures only the suspects: a figure takes its
    own run's offset only with MIN_FRESH_OTHERS re-measured class-mates, else the first
    run's. A derived figure takes its source's."""
    shifts: Offsets = {}
    removed: MetricOffsets = {}
    for kind, pool in (("time", items), ("clock", clocked)):
        by_cls: dict[str, list[_Item]] = defaultdict(list)
        for it in pool:
            fit = model.classes.get(it.cls)
            if fit is not None and fit.offsets and it.spread.offsets_removed:
                by_cls[it.cls].append(it)
        for cls, its in by_cls.items():
            voters = [i for i in its if i.result.derived_from is None]
            for gpu, members in _groups(voters).items():
                gs = [i.g for i in members]
                if kind == "time" and len(members) >= MIN_OFFSET_METRICS:
                    shifts[(cls, gpu)] = (statistics.median(gs), len(members))
                own = given is None or len(members) - 1 >= MIN_FRESH_OTHERS
                loo = leave_one_out(gs) if own else [None] * len(members)
                for i, o in zip(members, loo, strict=True):
                    if o is not None:
                        removed[i.key] = (o, len(members) - 1, False)
                    elif given is not None and i.key in given:
                        removed[i.key] = given[i.key]
            for i in its:
                src = (
                    removed.get(_source_key(i.result))
                    if i.result.derived_from is not None
                    else None
                )
                if src is not None:
                    removed[i.key] = src
    return shifts, removed


def _offset_var(model: NoiseModel, cls: str) -> tuple[float, int] | None:
    """How much sessions moved class `cls` as a whole: the variance of the sessions'
    offsets, pooled over the classes that have them (more degrees of freedom), less any
    class whose offsets are clearly larger than the other classes' (F test at SCREEN_P):
    such a class keeps its own. A class never takes a smaller variance than its own."""
    own = {c: f.offset_var for c, f in model.classes.items() if f.offset_var is not None}
    mine = own.get(cls)
    if mine is None:
        return None

    def pooled(cs: list[str]) -> tuple[float, int]:
        df = sum(own[c][1] for c in cs)
        return sum(own[c][0] * own[c][1] for c in cs) / df, df

    def louder(c: str) -> bool:
        rest = [o for o in own if o != c]
        if not rest:
            return False
        var, df = pooled(rest)
        return var > 0 and own[c][0] > var * f_isf(SCREEN_P, own[c][1], df)

    pool = [c for c in own if not louder(c)]
    if cls not in pool:
        return mine
    var, df = pooled(pool)
    return max(var, mine[0]), df


def machine_bound(model: NoiseModel, cls: str) -> tuple[float, float] | None:
    """How far machines moved a whole class, as the baseline's sessions showed it: the
    range of their offsets ("better" space). A run offset is removed from a figure only
    within this range (widened by the offset's own estimation noise): a shift the sessions
    never showed is left in the figures, and judged as a class-wide verdict too."""
    fit = model.classes.get(cls)
    if fit is None or not fit.offsets:
        return None
    return min(fit.offsets.values()), max(fit.offsets.values())


def clamp_offsets(
    removed: MetricOffsets, items: Iterable[_Item], model: NoiseModel
) -> MetricOffsets:
    out = dict(removed)
    z = z_quantile(CONFIDENCE)
    for it in items:
        found = removed.get(it.key)
        bound = machine_bound(model, it.cls)
        fit = model.classes.get(it.cls)
        if found is None or bound is None or fit is None or found[2]:
            continue
        pool = fit.pooled_var if fit.pooled_var is not None else it.spread.var
        u = z * math.sqrt((math.pi / 2) * pool / max(1, found[1]))  # the median's own noise
        lo, hi = bound[0] - u, bound[1] + u
        if not lo <= found[0] <= hi:
            out[it.key] = (min(max(found[0], lo), hi), found[1], True)
    return out


def _value_d(it: _Item, g: float) -> float:
    return g if it.higher else -g


def _judge_item(
    it: _Item,
    model: NoiseModel,
    removed: MetricOffsets,
    confidence: float,
) -> Verdict:
    sp = it.spread
    if not math.isfinite(sp.var):
        change = ratio_change(_value_d(it, it.g))
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
            after = _after_text(found)
        elif it.raw is not None and math.isfinite(it.raw.var):
            # too few of its class in this run to estimate the run's offset: judged with
            # the spread that keeps the sessions' offsets in
            sp = it.raw
            g, df = better(it.metric["median"], it.higher) - sp.level, sp.df
            after = "; its class's offsets kept in the spread (too few of its class in this run)"
    d = _value_d(it, g)
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
    return _never_by_the_offset(v, it) if found is not None else v


def _after_text(found: tuple[float, int, bool]) -> str:
    o, n, bounded = found
    word = "faster" if o > 0 else "slower"
    text = (
        f", after this run's class-wide {abs(ratio_change(o)) * 100:.1f}% {word} (the median "
        f"of {n} other figures of its class"
    )
    if bounded:
        text += (
            "; the class moved further than the baseline's sessions showed machines move it, "
            "and only that much is removed"
        )
    return text + ")"


def _never_by_the_offset(v: Verdict, it: _Item) -> Verdict:
    """An offset never makes a figure that moved beyond the tolerance UNCHANGED, nor an
    untouched one IMPROVED: where only the class's shift decides, the run cannot tell a
    slower machine from slower code, and the figure is inconclusive (the class line says
    which it is)."""
    raw = ratio_change(_value_d(it, it.g))
    raw_worse = -raw if it.higher else raw
    if v.status == UNCHANGED and abs(raw_worse) > v.tolerance:
        word = "unchanged"
    elif v.status == IMPROVED and -raw_worse <= v.tolerance:
        word = "improved"
    else:
        return v
    why = (
        f"{word} only after removing its class's shift in this run (measured {raw * 100:+.2f}% "
        "against the baseline): this run cannot tell a faster or slower machine from a change "
        "of the code here; see the class-wide line"
    )
    return replace(v, status=INCONCLUSIVE, reason=why)


def _cap_derived(results: list[Result], out: dict[str, dict[str, Verdict]]) -> None:
    """A figure derived from one measurement (samples/s from tokens/s) is never sharper
    than its source: its interval is at least the source's, and its verdict never stronger
    (it takes no share of the false-alarm budget, so it can fail the run only with it)."""
    for r in results:
        if r.derived_from is None or "value" not in out.get(r.key, {}):
            continue
        src_key = f"{r.nodeid}::{r.derived_from}" if r.derived_from else r.nodeid
        src = out.get(src_key, {}).get("throughput")
        v = out[r.key]["value"]
        if src is None or v.worse is None:
            continue
        half = max(v.uncertainty or 0.0, src.uncertainty or 0.0)
        status = v.status
        strong = {REGRESSED: src.status == REGRESSED, IMPROVED: src.status == IMPROVED,
                  UNCHANGED: src.status in (UNCHANGED, REGRESSED, IMPROVED)}  # fmt: skip
        if status in strong and not strong[status]:
            status = INCONCLUSIVE
        if status == UNCHANGED and abs(v.worse) + half > v.tolerance:
            status = INCONCLUSIVE
        if status in (REGRESSED, IMPROVED) and abs(v.worse) <= half:
            status = INCONCLUSIVE
        if status != v.status or half != v.uncertainty:
            why = (
                v.reason
                if status == v.status
                else (
                    f"derived from {src_key}, whose verdict is {src.status}: a derived figure is "
                    "never decided more strongly than the measurement it comes from"
                )
            )
            out[r.key]["value"] = replace(v, status=status, uncertainty=half, reason=why,
                                          mde=max(v.tolerance, half))  # fmt: skip


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
    ov = _offset_var(model, cls)
    fit = model.classes.get(cls)
    mine = [
        i for i in items
        if i.cls == cls and i.result.derived_from is None and (gpu is None or i.result.gpu == gpu)
    ]  # fmt: skip
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
    basis = (
        f"±{(v.uncertainty or 0) * 100:.2f}% from the spread of {len(fit.offsets)} baseline "
        f"sessions' offsets ({ov[1]} df, pooled over the classes)"
    )
    if v.status == INCONCLUSIVE and v.worse is not None:
        why = (
            f"a shift of {abs(v.worse) * 100:.1f}% is within what machines moved this class "
            f"between the baseline's sessions (±{(v.uncertainty or 0) * 100:.1f}%): a slower "
            "machine or slower code; its figures are inconclusive where only the shift decides "
            "(gpuperf ab against the base commit, or more baseline sessions, can tell)"
            if abs(v.worse) > tol
            else v.reason
        )
        v = replace(v, reason=why)
    v = replace(v, basis=basis)
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

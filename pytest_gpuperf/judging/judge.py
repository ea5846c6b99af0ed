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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..baseline.history import (
    env_for,
    incomparable_reason,
    restart_note,
    series_of,
    since_restart,
)
from ..core.figures import (
    PEAK,
    PER_CLOCKS,
    TIMED,
    metrics_of,
    per_clock_name,
    result_classes,
)
from ..core.results import Result
from ..core.settings import BY_NAME, FALSE_ALARM
from ..core.verdict import Rule, amend, make
from .busy import busy_verdicts
from .figure import base_clock, decided_apart, judge_item, set_aside_improvements
from .noise import NoiseModel, better
from .offsets import (
    ClassShift,
    Item,
    MetricOffsets,
    Offsets,
    bounded_by_class_line,
    cap_derived,
    clamp_offsets,
    class_shift,
    run_offsets,
    shared_by_the_class,
)
from .verdict import (
    FAILED,
    IMPROVED,
    INCOMPARABLE,
    NEW,
    REGRESSED,
    UNCHANGED,
    Verdict,
    combine_clocked,
    per_metric_confidence,
    what_would_settle,
)

DEFAULT_TOLERANCE = float(BY_NAME["tolerance"].cuda)
DEFAULT_MEMORY_TOLERANCE = float(BY_NAME["memory_tolerance"].cuda)
FAILING = (REGRESSED, FAILED)  # verdicts that fail the run (and the compare command)
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


@dataclass(frozen=True)
class JudgingParams:
    """How a run's figures are judged beside the figures themselves, resolved once by
    `judge_run` (None: each benchmark's own tolerance) and handed to its stages as one
    typed value instead of a tuple each stage unpacks by position."""

    tolerance: float | None = None
    memory_tolerance: float | None = None
    allow_cross_gpu: bool = False
    exclude_session: str | None = None  # the run's own session, saved into the entries
    # why an entry must not be compared (the users' hook, or the built-in rule)
    incomparable: Callable[[dict[str, Any], dict[str, Any]], str | None] = incomparable_reason


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
    params = JudgingParams(
        tolerance, memory_tolerance, allow_cross_gpu, exclude_session,
        incomparable or incomparable_reason,
    )  # fmt: skip
    figures, model, raw_model = _fit_models(results, entries, exclude_session)
    out: dict[str, dict[str, Verdict]] = {r.key: {} for r in results}
    items, per_clock = _items(results, figures, entries, env, (model, raw_model), out, params)
    clocked = list(per_clock.values())
    shifts_est, unbounded = run_offsets(items, clocked, model, offsets)
    n_gated = sum(1 for i in [*items, *clocked] if i.result.derived_from is None)
    confidence, conf_s = _confidences(false_alarm, n_gated, len(shifts_est))
    removed = clamp_offsets(unbounded, [*items, *clocked], model)
    shifts = _class_lines(shifts_est, items, clocked, model, conf_s or confidence)
    gate = _Gate(model, confidence, per_clock, entries)
    rests = _judge_items(items, gate, removed, unbounded, out)
    bounded_by_class_line(out, [i for i in items if i.key in rests], removed, shifts)
    shared_by_the_class(out, items, removed)
    cap_derived(results, out)
    set_aside_improvements(figures, entries, out, exclude_session)
    _set_verdicts(results, entries, out)
    judgement = Judgement(
        confidence, n_gated + len(shifts_est), shifts, dict(shifts_est), removed, conf_s
    )
    busy_verdicts(results, judgement)  # on the CPU, a busy host decides nothing
    return judgement


def _fit_models(
    results: list[Result], entries: dict[str, dict[str, Any]], exclude_session: str | None
) -> tuple[dict[str, dict[str, dict[str, Any]]], NoiseModel, NoiseModel]:
    """This run's judged figures, and the noise model of the baseline's history fitted
    twice: with the sessions' class offsets removed (how figures are judged), and with
    them kept in the spread (for a figure whose class this run has too few of to estimate
    its own offset). The history is classed by this run's figures, so a figure whose
    class changed is pooled with its new class."""
    classes = result_classes(results)
    figures = {r.key: metrics_of(r, classes.get(r.key)) for r in results}
    current = {
        f"{key}::{name}": str(m["noise_class"])
        for key, ms in figures.items()
        for name, m in ms.items()
    }
    derived = {f"{r.key}::value" for r in results if r.derived_from is not None}
    series = series_of(entries, exclude_session, current, derived)
    return figures, NoiseModel.fit(series), NoiseModel.fit(series, offsets=False)


def _confidences(false_alarm: float, n_gated: int, n_shift: int) -> tuple[float, float | None]:
    """The run's false-alarm budget shared out: SHIFT_SHARE of it to the class-wide shift
    verdicts when there are any, the rest to the gated measurements, so the whole run
    raises a false alarm no more often than `false_alarm`."""
    share = SHIFT_SHARE if n_shift else 0.0
    confidence = per_metric_confidence(false_alarm * (1 - share), n_gated)
    conf_s = per_metric_confidence(false_alarm * share, n_shift) if n_shift else None
    return confidence, conf_s


def _class_lines(
    shifts_est: dict[tuple[str, str | None], Any],
    items: list[Item],
    clocked: list[Item],
    model: NoiseModel,
    confidence: float,
) -> list[ClassShift]:
    """The class-wide lines: each class whose figures this run moved together is judged
    as one shift (a slower machine, or a change that slows a whole class), in a fixed
    order so a run and its confirmation list them alike."""
    lines = [
        class_shift(cls, gpu, shifts_est[(cls, gpu)], items, model, confidence, clocked)
        for cls, gpu in sorted(shifts_est, key=str)
    ]
    return [s for s in lines if s is not None]


@dataclass(frozen=True)
class _Gate:
    """What every figure of one run is judged with: the fitted model, the per-metric
    confidence, the per-clock figures beside the throughputs, and the baseline entries
    (for the base's SM clock)."""

    model: NoiseModel
    confidence: float
    per_clock: dict[str, Item]
    entries: dict[str, dict[str, Any]]

    def verdict(self, it: Item, offs: MetricOffsets) -> Verdict:
        """One figure's verdict with these offsets removed; a throughput that got worse
        is judged with its per-clock figure too (a slower clock, not slower code)."""
        it_v = judge_item(it, self.model, offs, self.confidence)
        if it.name in TIMED and it.result.key in self.per_clock and it_v.worse is not None:
            cyc = judge_item(self.per_clock[it.result.key], self.model, offs, self.confidence)
            base = base_clock(self.entries[it.result.key]["metrics"][it.name])
            it_v = combine_clocked(it_v, cyc, base, it.metric.get("clock_mhz"))
        return it_v


def _judge_items(
    items: list[Item],
    gate: _Gate,
    removed: MetricOffsets,
    unbounded: MetricOffsets,
    out: dict[str, dict[str, Verdict]],
) -> set[str]:
    """Each item's verdict into `out`; returns the figures that the class line then settles
    (bounded_by_class_line), where their class moved further than the machine's range:
    changed only because their offset was bounded to that range (judged with the offset
    unbounded, they would not be), or unchanged only because it was removed (measured
    against the baseline, their interval reaches beyond the tolerance the worse way: a
    regression the whole class shares on a faster machine reads so)."""
    rests: set[str] = set()
    for it in items:
        out[it.result.key][it.name] = v = gate.verdict(it, removed)
        twin = (f"{it.result.key}::{per_clock_name(it.name)}",) if it.name in TIMED else ()
        bounded = any(removed.get(k, (0.0, 0, False))[2] for k in (it.key, *twin))
        cyc = gate.per_clock.get(it.result.key) if it.name in TIMED else None
        if bounded and (
            (v.status in (REGRESSED, IMPROVED) and gate.verdict(it, unbounded).status != v.status)
            or _worse_beyond(v, it, cyc)
        ):
            rests.add(it.key)
    return rests


def _worse_beyond(v: Verdict, *figures: Item | None) -> bool:
    """UNCHANGED, while against the baseline (its class's shift left in) the figure, and its
    per-clock twin where it has one (a regression must hold in both: a capped clock slows
    the time alone), measured worse than the tolerance less its uncertainty, in log units
    as the ladder compares them."""
    bar = math.log1p(v.tolerance) - (v.uncertainty or 0.0)
    return v.status == UNCHANGED and all(-f.g > bar for f in figures if f is not None)


def _set_verdicts(
    results: list[Result], entries: dict[str, dict[str, Any]], out: dict[str, dict[str, Verdict]]
) -> None:
    """The verdicts as each result carries them, with the advice that the length of the
    figure's baseline history makes due."""
    for r in results:
        metrics = (entries.get(r.key) or {}).get("metrics") or {}
        r.verdicts = {}
        for name, v in out.get(r.key, {}).items():
            base_m = metrics.get(name) or {}
            note = restart_note(base_m) if v.status not in (NEW, INCOMPARABLE) else None
            if note:  # the history was restarted from an accepted run: the verdict says so
                v = amend(v, None, basis="; ".join(x for x in (v.basis, note) if x),
                          restarted=note)  # fmt: skip
            r.verdicts[name] = with_advice(v, len(since_restart(base_m)))


def _items(
    results: list[Result],
    figures: dict[str, dict[str, dict[str, Any]]],
    entries: dict[str, dict[str, Any]],
    env: dict[str, Any],
    models: tuple[NoiseModel, NoiseModel],
    out: dict[str, dict[str, Verdict]],
    params: JudgingParams,
) -> tuple[list[Item], dict[str, Item]]:
    """The figures to judge by the noise model; the verdicts decided without it (new,
    incomparable, informational, zero, failed) go straight into `out`."""
    items: list[Item] = []
    per_clock: dict[str, Item] = {}
    for r in results:
        tol, mem_tol = tolerances(r, params.tolerance, params.memory_tolerance)
        base = entries.get(r.key)
        verdicts = out[r.key]
        if not figures[r.key]:
            _failed(r, base, tol, verdicts)
            continue
        why_not = _why_incomparable(r, base, env, params)
        for name, m in figures[r.key].items():
            t = mem_tol if name == PEAK else tol
            v = decided_apart(m, base, name, why_not, t, params.exclude_session)
            if v is not None:
                if name not in PER_CLOCKS:
                    verdicts[name] = v
                continue
            item = _item(r, name, m, t, models)
            if item is None:  # not a usable history (e.g. a non-finite value)
                continue
            if name in PER_CLOCKS:
                per_clock[r.key] = item
            else:
                items.append(item)
    return items, per_clock


def _failed(
    r: Result, base: dict[str, Any] | None, tol: float, verdicts: dict[str, Verdict]
) -> None:
    """A benchmark that produced no figure fails each metric its baseline has: a broken
    benchmark must not pass by measuring nothing."""
    for name in (base or {}).get("metrics", {}):
        if name not in PER_CLOCKS:
            why = r.error or "the benchmark produced no result"
            verdicts[name] = make(FAILED, None, None, None, tol, why, rule=Rule.NO_FIGURE)


def _why_incomparable(
    r: Result, base: dict[str, Any] | None, env: dict[str, Any], params: JudgingParams
) -> str | None:
    """Why this result's baseline entry must not be compared with it (another GPU, another
    environment: the users' hook decides first), or None; --allow-cross-gpu lets another
    GPU through."""
    if base is None:
        return None
    why_not = params.incomparable(base.get("environment", {}), env_for(env, r.gpus_used))
    if why_not and params.allow_cross_gpu and why_not.startswith("gpu differs"):
        return None
    return why_not


def _item(
    r: Result,
    name: str,
    m: dict[str, Any],
    t: float,
    models: tuple[NoiseModel, NoiseModel],
) -> Item | None:
    """A figure to judge by the noise model: its spread, its distance from its level in
    "better" space, and the spread with offsets kept; None without a usable history."""
    model, raw_model = models
    spread = model.spread(f"{r.key}::{name}")
    if spread is None:
        return None
    g = better(m["median"], m["direction"] == "higher") - spread.level
    return Item(r, name, m, str(m.get("noise_class")), spread, t, g,
                raw_model.spread(f"{r.key}::{name}"))  # fmt: skip


def with_advice(v: Verdict, history_len: int) -> Verdict:
    """`v` with what would settle it, where it is undecided (none for any other)."""
    advice = what_would_settle(v, history_len)
    return amend(v, None, advice=advice) if advice else v


def failing(result: Result) -> bool:
    return any(v.status in FAILING for v in result.verdicts.values())

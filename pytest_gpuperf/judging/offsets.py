"""This run's class offsets, the class-wide shift lines, and the rules that keep an offset
honest (baseline/judge.py's helpers). Pure: no pytest and no I/O.

One run cannot tell a slower machine from slower code by itself; the baseline's sessions
say how far machines moved a class. So each figure is judged after the median of the OTHER
figures of its class in this run (leave-one-out: its own change never moves the offset),
only within the range of offsets the sessions showed; the class's shift as a whole is a
verdict of its own (`class_shift`), with its own share of the run's budget; an offset never
makes a moved figure UNCHANGED nor an untouched one IMPROVED; and a figure derived from one
measurement is never decided more strongly than its source. Everything here is in "better"
space: log for higher-is-better figures, -log for lower (a latency).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..core.figures import CLASS_NAMES, TIMED, per_clock_name
from ..core.results import Result
from ..core.verdict import Rule, amend, stage1_record
from .noise import MIN_OFFSET_METRICS, SCREEN_P, ClassFit, NoiseModel, Spread, f_isf, leave_one_out
from .verdict import (
    CHANGED,
    CONFIDENCE,
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    Verdict,
    combine_clocked,
    decide,
    ratio_change,
    worse_text,
    z_quantile,
)

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
        moved = worse_text(v.worse, v.uncertainty, v.change) if v.worse is not None else "-"
        return (
            f"class-wide: {CLASS_NAMES.get(self.cls, self.cls)} benchmarks{where} "
            f"{moved} against "
            f"the baseline's sessions (median of "
            f"{self.metrics} metrics): {v.status.upper()}"
            + (f" ({v.reason})" if v.status not in (UNCHANGED, IMPROVED) else "")
        )


def _line_verdict(
    shift: float, n: int, cls: str, model: NoiseModel, tol: float, confidence: float
) -> tuple[Verdict, tuple[float, int], ClassFit] | None:
    """A class's shift in this run (the median of its `n` figures' deviations, "better"
    space), judged against how far the baseline's sessions moved the class; with the
    offset variance and the class's fit it was judged with. None without session offsets."""
    ov, fit = _offset_var(model, cls), model.classes.get(cls)
    if ov is None or fit is None:
        return None
    # a class with no pool (fewer than three agree): the spread the line had before the
    # screen took the pool away (noise.ClassFit.line_var), never 0
    pool = fit.pooled_var if fit.pooled_var is not None else fit.line_var
    if pool is None:
        return None
    v = decide(
        shift, higher_is_better=True, s_cur=0.0, var=ov[0], df=ov[1], k=len(fit.offsets),
        tolerance=tol, confidence=confidence, extra_var=(math.pi / 2) * pool / max(1, n),
    )  # fmt: skip
    return v, ov, fit


def bounded_by_class_line(
    out: dict[str, dict[str, Verdict]],
    items: Iterable[Item],
    removed: MetricOffsets,
    shifts: list[ClassShift],
) -> None:
    """A figure decided only because its offset was bounded (its class moved further than
    the baseline's sessions showed machines move it, and with the whole shift removed it
    would not be decided so), or unchanged only because it was removed, is never decided
    more strongly than the class line: where the line cannot tell a slower machine from
    slower code, neither can the figure. `items`: those figures (judge.py tells which)."""
    line = {(s.cls, s.gpu): s.verdict for s in shifts}
    for it in items:
        found = removed.get(it.key)  # a time figure's per-clock twin: only the throughput's
        if found is None and it.name in TIMED:  # (or the latency's)
            found = removed.get(f"{it.result.key}::{per_clock_name(it.name)}")
        v = out.get(it.result.key, {}).get(it.name)
        if found is None or v is None or v.status not in (REGRESSED, IMPROVED, UNCHANGED):
            continue
        cls_v = line.get((it.cls, it.result.gpu)) or line.get((it.cls, None))
        if cls_v is not None and cls_v.status == v.status:
            continue
        seen = cls_v.status if cls_v is not None else "not judged"
        said = (f" (measured {ratio_change(value_d(it, it.g)) * 100:+.2f}% against the "
                "baseline)" if v.status == UNCHANGED else "")  # fmt: skip
        why = (
            f"{v.status} only because its class moved {abs(ratio_change(found[0])) * 100:.1f}% "
            f"and more in this run, further than the baseline's sessions showed machines move "
            f"it{said}; the class line, which decides between a machine and the code, is {seen}: "
            "more baseline sessions (on the runners this gate uses), or gpuperf ab, can tell"
        )
        out[it.result.key][it.name] = amend(
            v, Rule.CLASS_BOUND, figures={"class moved": ratio_change(found[0]),
                                                     "class line": str(seen)},
            status=INCONCLUSIVE, reason=why)  # fmt: skip


def shared_by_the_class(
    out: dict[str, dict[str, Verdict]], items: Iterable[Item], removed: MetricOffsets
) -> None:
    """No UNCHANGED for a slowed figure because of its class's offset. The offset is the
    median of the class's other figures in this run, so a regression most of a class
    shares, on a machine faster than the baseline's, is taken for a slower machine and
    removed: 9 of 12 figures slowed 5% on a machine 3% faster all read unchanged (issue 60),
    while the 3 it spared read better beyond the tolerance after it. Where an offset that
    made its class look better was removed (the class slower in this run) and some figure
    of that class then read improved on the ladder (beyond the tolerance and its interval:
    the spared ones), the offset may be the code's: no figure of the class that measured
    worse than the baseline reads unchanged; it is inconclusive, saying why."""
    items = list(items)
    spared: dict[tuple[str, str | None], int] = defaultdict(int)
    for it in items:
        found, v = removed.get(it.key), out.get(it.result.key, {}).get(it.name)
        if found is not None and v is not None and found[0] < 0 and any(
                s.rule == Rule.LADDER and s.status == IMPROVED for s in v.trail):  # fmt: skip
            spared[(it.cls, it.result.gpu)] += 1
    for it in items:
        found, v = removed.get(it.key), out.get(it.result.key, {}).get(it.name)
        n = spared.get((it.cls, it.result.gpu), 0)
        raw = ratio_change(value_d(it, it.g))
        if found is None or v is None or not n or v.status != UNCHANGED or (
                -raw if it.higher else raw) <= 0:  # fmt: skip
            continue
        why = (
            f"unchanged only after removing its class's shift in this run "
            f"({abs(ratio_change(found[0])) * 100:.1f}% slower; measured {raw * 100:+.2f}% "
            f"against the baseline), while {n} figure(s) of its class then read better beyond "
            "the tolerance: the shift may be a regression most of the class shares, on a "
            "faster machine; see the class-wide line, or gpuperf ab"
        )
        out[it.result.key][it.name] = amend(
            v, Rule.OFFSET_ALONE, figures={"measured change": raw, "class figures better": n},
            status=INCONCLUSIVE, reason=why)  # fmt: skip


@dataclass
class Item:
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


def _groups(its: list[Item]) -> dict[str | None, list[Item]]:
    """A class's figures by GPU where each GPU has enough of them for its own offset, else
    all together (the GPUs of one host share a machine state)."""
    by_gpu: dict[str | None, list[Item]] = defaultdict(list)
    for i in its:
        by_gpu[i.result.gpu].append(i)
    if len(by_gpu) > 1 and all(len(v) >= MIN_OFFSET_METRICS for v in by_gpu.values()):
        return dict(by_gpu)
    return {None: its}


def _votes(i: Item) -> bool:
    """Whether a figure counts in its class's shift: a measurement of its own (not derived
    from another's)."""
    return i.result.derived_from is None


def source_of(r: Result) -> str:
    """The result key of the measurement a derived figure was computed from."""
    return f"{r.nodeid}::{r.derived_from}" if r.derived_from else r.nodeid


def run_offsets(
    items: list[Item], clocked: list[Item], model: NoiseModel, given: MetricOffsets | None
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
        by_cls: dict[str, list[Item]] = defaultdict(list)
        for it in pool:
            fit = model.classes.get(it.cls)
            if fit is not None and fit.offsets and it.spread.offsets_removed:
                by_cls[it.cls].append(it)
        for cls, its in by_cls.items():
            voters = [i for i in its if _votes(i)]
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
                src = None
                if i.result.derived_from is not None:  # its measurement's throughput or latency
                    keys = (f"{source_of(i.result)}::{name}" for name in TIMED)
                    src = next((removed[k] for k in keys if k in removed), None)
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
    removed: MetricOffsets, items: Iterable[Item], model: NoiseModel
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


def value_d(it: Item, g: float) -> float:
    return g if it.higher else -g


def after_text(found: tuple[float, int, bool]) -> str:
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


def never_by_the_offset(v: Verdict, it: Item) -> Verdict:
    """An offset never makes a figure that moved beyond the tolerance UNCHANGED, nor an
    untouched one IMPROVED: where only the class's shift decides, the run cannot tell a
    slower machine from slower code, and the figure is inconclusive (the class line says
    which it is)."""
    raw = ratio_change(value_d(it, it.g))
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
    return amend(v, Rule.OFFSET_ALONE, figures={"measured change": raw},
                 status=INCONCLUSIVE, reason=why)  # fmt: skip


def carried(status: str, source: object) -> bool:
    """Whether a derived figure may read `status` where its source reads `source`: changed
    only the way its source changed, unchanged only where its source is decided."""
    if status in (REGRESSED, IMPROVED):
        return source == status
    return status != UNCHANGED or source in (UNCHANGED, *CHANGED)


DERIVED = Rule.DERIVED


def own_change(v: Verdict, src: Verdict) -> float | None:
    """How far (log, the bad way for a regression, the good way for an improvement) a
    derived figure's change went beyond its source's, where that alone lies beyond the
    tolerance and beyond both intervals together: then the derived figure moved on its
    own (a TTFT or a decode rate whose own part of the work changed) and its verdict is
    its own; else None (issue 60: 300 of 300 such figures 10% worse read inconclusive)."""
    if v.status not in (REGRESSED, IMPROVED) or v.worse is None or src.worse is None:
        return None
    if v.worse <= -1 or src.worse <= -1:
        return None
    gap = math.log1p(v.worse) - math.log1p(src.worse)
    gap = gap if v.status == REGRESSED else -gap
    need = max(math.log1p(v.tolerance), (v.uncertainty or 0.0) + (src.uncertainty or 0.0))
    return gap if gap > need else None


def cap_derived(results: list[Result], out: dict[str, dict[str, Verdict]]) -> None:
    """A figure derived from one measurement (samples/s from tokens/s) is never sharper
    than its source: its interval is at least the source's, and its verdict never stronger
    (it takes no share of the false-alarm budget, so it can fail the run only with it)."""
    for r in results:
        if r.derived_from is None or "value" not in out.get(r.key, {}):
            continue
        src_key = source_of(r)
        figs = out.get(src_key, {})
        src = next((figs[name] for name in TIMED if name in figs), None)  # or its latency
        v = out[r.key]["value"]
        if src is None or v.worse is None:
            continue
        half = max(v.uncertainty or 0.0, src.uncertainty or 0.0)
        status, own = v.status, own_change(v, src)
        if own is not None:  # it moved on its own, beyond its source and both intervals
            out[r.key]["value"] = amend(
                v, DERIVED, figures={"source": src_key, "source status": str(src.status),
                                     "beyond its source": math.expm1(own)},
                reason=f"{v.reason}; judged on its own: it moved {math.expm1(own) * 100:.2f}% "
                       f"beyond its source {src_key} ({src.status}), beyond the tolerance and "
                       "both intervals")  # fmt: skip
            continue
        if not carried(status, src.status):
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
            out[r.key]["value"] = amend(
                v, DERIVED, figures={"source": src_key, "source status": str(src.status),
                                     "uncertainty": half},
                status=status, uncertainty=half, reason=why, mde=max(v.tolerance, half),
            )  # fmt: skip


def recap_derived(results: list[Result]) -> None:
    """A figure derived from one measurement (samples/s from tokens/s) is never decided
    more strongly than its source (`cap_derived`, in the first stage): where the paired
    stage (run/paired.py) re-judged a source, each figure derived from it that the new
    verdict no longer carries (regressed or improved where the source is not, unchanged
    where the source is undecided) becomes inconclusive, saying why."""
    by_key = {r.key: r for r in results}
    for r in results:
        v, src = r.verdicts.get("value"), by_key.get(source_of(r))
        if r.derived_from is None or not v or src is None:
            continue
        sv = next((src.verdicts[n] for n in TIMED if n in src.verdicts), None)
        if sv is None or sv.paired is None:  # not re-judged by the stage
            continue
        source = sv.status
        if not carried(v.status, source) and own_change(v, sv) is None:
            r.verdicts = {**r.verdicts, "value": amend(
                v, DERIVED, "paired stage",
                figures={"source": src.key, "source status": str(source)},
                status=INCONCLUSIVE, stage1=stage1_record(v),
                reason=(f"derived from {src.key}, which the paired stage found {source}: a "
                        "derived figure is never decided more strongly than the measurement "
                        "it comes from"),
            )}  # fmt: skip


def class_shift(
    cls: str,
    gpu: str | None,
    offset: tuple[float, int],
    items: list[Item],
    model: NoiseModel,
    confidence: float,
    clocked: list[Item] | None = None,
) -> ClassShift | None:
    """The verdict on a class's shift: a uniform slowdown is removed from each metric's
    verdict by the offsets, so it is judged here, against how far whole sessions stray.
    Where most of the class's figures have a per-clock twin (`clocked`: compute-bound work),
    the shift must hold in time AND per SM clock cycle, as each figure's does: a card
    capped to a lower clock moves the time of the whole class, not its cycles."""
    mine = [
        i for i in items
        if i.cls == cls and _votes(i) and (gpu is None or i.result.gpu == gpu)
    ]  # fmt: skip
    if not mine:
        return None
    tol = statistics.median(i.tolerance for i in mine)
    judged = _line_verdict(offset[0], len(mine), cls, model, tol, confidence)
    if judged is None:
        return None
    v, ov, fit = judged
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
        v = amend(v, None, reason=why)
    v = amend(v, None, basis=basis)
    keys = {i.result.key for i in mine}
    # a per-clock figure is the twin of its result's throughput (or latency), never of another
    # figure of the result (a launch-bound result's per-clock figure is launch-bound)
    timed = {i.result.key for i in mine if i.name in TIMED}
    twins = [p for p in clocked or [] if p.result.key in timed and p.result.derived_from is None]
    if twins and 2 * len(twins) >= len(mine) and v.worse is not None:
        shift = statistics.median(p.g for p in twins)  # the per-clock figures' own shift
        cyc = _line_verdict(shift, len(twins), twins[0].cls, model, tol, confidence)
        if cyc is not None:
            each = "each figure per its own SM clock"
            v = amend(combine_clocked(v, cyc[0], None, None, each), None, basis=basis)
    return ClassShift(cls, gpu, v, len(mine), tuple(sorted(keys)))

"""The paired stage's judge: each re-measured figure judged on its rounds' paired
differences d = log(head / base), its variance pooled within its class and kind (`pooled`),
at the stage's share of the run's false-alarm budget (`judge_paired`). A round measures both
builds minutes apart on one card, so what moves both cancels in their ratio: what stage 1,
judged against sessions of other days and machines, cannot decide. Noise per process (the
process pairs disagree) is screened out (`screened`), or bears a checked change out only
where each pair does (`each_pair_beyond`). Pure: no git, no processes, no files (stage.py
runs the rounds). The rule as gate-sim models it, and what it adds:
docs/evidence/paired-stage-notes.md."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.figures import kernels_of
from ..core.verdict import Rule, Verdict, amend, make
from ..judging.noise import f_isf, pooled_variance
from ..judging.pairedrounds import PairedFigure, outlier_round
from ..judging.verdict import (
    CHANGED,
    IMPROVED,
    INCONCLUSIVE,
    INCONCLUSIVE_POWER,
    REGRESSED,
    UNCHANGED,
    per_metric_confidence,
    quantile,
    relative_change_text,
    status_of,
)

SCREEN_P = 0.01  # a figure this unlikely under its class pool keeps its own variance
PROCESS_P = 0.01  # process pairs this unlikely to agree: the figure's noise is per process
MIN_POOL = 3  # figures of a class with a variance before they pool
MIN_PAIR_ROUNDS = 2  # rounds in each of PAIRS_TO_CHANGE process pairs before a change is called
PAIRS_TO_CHANGE = 2  # (fewer: the figure's own noise, a round's and a process's, is unchecked)
PER_PROCESS = "its noise is per process"  # the screen's reason begins so
CONTRADICT_Z = 0.5  # a pair inside the tolerance by this many of its own se contradicts
CLASS_PER_PROCESS = "its class's noise is per process"  # a basis widened by class_process


def _groups(fig: PairedFigure) -> dict[int, list[float]]:
    groups: dict[int, list[float]] = {}
    for p, d in zip(fig.pair, fig.diffs(), strict=True):
        groups.setdefault(p, []).append(d)
    return groups


def pair_spread(fig: PairedFigure) -> float:
    """Half the range of the process pairs' mean paired differences (log units)."""
    means = [statistics.fmean(g) for g in _groups(fig).values()]
    return (max(means) - min(means)) / 2 if means else 0.0


def per_process(fig: PairedFigure) -> float | None:
    """The p-value that the process pairs agree on the figure's mean paired difference
    (one-way ANOVA over the pairs), or None where it cannot be told (one pair, or a pair
    with a single round)."""
    groups = _groups(fig)
    if len(groups) < 2 or any(len(g) < 2 for g in groups.values()):
        return None
    n = sum(len(g) for g in groups.values())
    grand = statistics.fmean(d for g in groups.values() for d in g)
    between = sum(len(g) * (statistics.fmean(g) - grand) ** 2 for g in groups.values())
    within = sum((d - statistics.fmean(g)) ** 2 for g in groups.values() for d in g)
    df_b, df_w = len(groups) - 1, n - len(groups)
    if within <= 0:
        return 0.0 if between > 0 else 1.0
    f = (between / df_b) / (within / df_w)
    from scipy.stats import f as f_dist

    return float(f_dist.sf(f, df_b, df_w))


def screened(fig: PairedFigure, tolerance: float) -> float | None:
    """The p-value of the per-process screen where it takes the figure from the stage (its
    process pairs disagree at PROCESS_P, their means more than half the tolerance apart:
    its few processes a side cannot average that out), else None."""
    p = per_process(fig)
    if p is not None and p < PROCESS_P and pair_spread(fig) > math.log1p(tolerance) / 4:
        return p
    return None


def each_pair_beyond(fig: PairedFigure, tolerance: float, status: str) -> list[float] | None:
    """Each process pair's own mean paired difference as a relative change (head / base - 1,
    in pair order), where every one of them lies beyond the tolerance in the direction
    `status` names ("regressed" or "improved"); else None.

    The check of a figure the first stage decided whose noise the screen found per process
    (`screened`): its pairs cannot narrow an interval (two of them give one degree of
    freedom), but each is a fresh measurement of both builds side by side, so they can
    contradict the first stage or bear it out. Borne out by every pair, the first stage's
    verdict stands; a false alarm of the first stage then also needs every pair's own
    process levels to land beyond the tolerance on its side."""
    if status not in CHANGED or not fig.usable():
        return None
    pairs = _toward(fig, status)
    if len(pairs) < 2:
        return None
    tol = math.log1p(tolerance)
    return [math.expm1(m) for _, m, _, _ in pairs] if all(s > tol for _, _, s, _ in pairs) else None


def _toward(fig: PairedFigure, status: str) -> list[tuple[int, float, float, int]]:
    """Each process pair, in pair order: its number, its mean paired difference (log), that
    mean signed toward `status` (positive: the way "regressed" or "improved" goes) and its
    rounds."""
    sign = (-1.0 if fig.higher else 1.0) * (1.0 if status == REGRESSED else -1.0)
    return [(p, statistics.fmean(g), sign * statistics.fmean(g), len(g))
            for p, g in sorted(_groups(fig).items())]  # fmt: skip


def enough_to_change(fig: PairedFigure) -> bool:
    """Whether a figure's rounds may call it changed (regressed or improved): at least
    MIN_PAIR_ROUNDS rounds in each of at least PAIRS_TO_CHANGE process pairs. On fewer (2
    rounds, one a pair) neither the figure's own variance nor its per-process noise can be
    checked (the F screen has 1 df, the per-process screen none): a noisier figure then
    borrows its quiet class's pooled variance, and a change within the tolerance reads
    beyond it (issue 60: 2 rounds called a 2% change regressed 0.8% of the time at 3%)."""
    sizes = [len(g) for g in _groups(fig).values()]
    return sum(1 for k in sizes if k >= MIN_PAIR_ROUNDS) >= PAIRS_TO_CHANGE


def withheld(v: Verdict) -> str | None:
    """The change (regressed or improved) the paired stage's rounds showed but did not call:
    too few rounds (`enough_to_change`) or a process pair against it (`_each_pair`); else
    None. Where the first stage decided that change, its verdict stands (stage.py): the
    rounds held it back, they did not contradict it."""
    for step in reversed(v.trail):
        if step.rule in (Rule.TOO_FEW_ROUNDS, Rule.PER_PROCESS) and step.figures.get("withheld"):
            return str(step.figures["withheld"])
    return None


def _too_few(v: Verdict, f: PairedFigure) -> Verdict:
    """`v` where its rounds may call it changed; else inconclusive, the change withheld."""
    if v.status not in CHANGED or enough_to_change(f):
        return v
    n, pairs = len(f.base), len(_groups(f))
    why = (f"{v.status} ({relative_change_text(v)}) on {n} paired round(s) in {pairs} process "
           f"pair(s), too few to call a change: {MIN_PAIR_ROUNDS} or more rounds in each of "
           f"{PAIRS_TO_CHANGE} process pairs are needed (on fewer, its own noise, per round and "
           "per process, is unchecked)")  # fmt: skip
    return amend(v, Rule.TOO_FEW_ROUNDS, STAGE, status=INCONCLUSIVE, reason=why,
                 figures={"rounds": n, "process pairs": pairs, "withheld": str(v.status)})


def _anova(fig: PairedFigure) -> tuple[float, int, float, int] | None:
    """The figure's one-way ANOVA over its process pairs: the sums of squares between and
    within the pairs and their degrees of freedom; None with fewer than 2 pairs or no
    round beside another in a pair."""
    groups = list(_groups(fig).values())
    ds = [d for g in groups for d in g]
    if len(groups) < 2 or len(ds) <= len(groups):
        return None
    grand = statistics.fmean(ds)
    ssb = sum(len(g) * (statistics.fmean(g) - grand) ** 2 for g in groups)
    ssw = sum((d - statistics.fmean(g)) ** 2 for g in groups for d in g)
    return ssb, len(groups) - 1, ssw, len(ds) - len(groups)


Process = tuple[float, float, float]  # a class's pooled between-pair mean square, df, p


def class_process(figs: Sequence[PairedFigure]) -> dict[tuple[str, bool], Process]:
    """Per class and kind (as `pooled` groups them) of at least MIN_POOL figures: whether
    its process pairs disagree, over all its figures (F of the pooled mean squares between
    and within the pairs), with the pooled mean square between them and its df. One
    figure's few pairs rarely show a per-process effect (1-2 df; issue 60: a 2% effect per
    process failed 2.7% of simulated A/A runs), its class's pairs together do; where they
    disagree, an interval from the rounds alone is too narrow for every figure of it."""
    parts: dict[tuple[str, bool], list[tuple[float, int, float, int]]] = {}
    for f in figs:
        a = _anova(f) if f.usable() else None
        if a is not None:
            parts.setdefault((f.cls, kernels_of(f.metric) is not None), []).append(a)
    out: dict[tuple[str, bool], Process] = {}
    for k, rows in parts.items():
        ssb, dfb, ssw, dfw = (sum(r[i] for r in rows) for i in range(4))
        if len(rows) < MIN_POOL or dfw <= 0 or dfb <= 0:
            continue
        msb, msw = ssb / dfb, ssw / dfw
        if msw <= 0:
            p = 0.0 if msb > 0 else 1.0
        else:
            from scipy.stats import f as f_dist

            p = float(f_dist.sf(msb / msw, dfb, dfw))
        out[k] = (msb, float(dfb), p)
    return out


def pooled(figs: Sequence[PairedFigure]) -> dict[tuple[str, str], tuple[float, float]]:
    """Each figure's variance of d and its degrees of freedom: pooled over the figures of
    its kind (wall time, or GPU kernel time) in its class that the F screen keeps, when at
    least MIN_POOL of them agree; else its own. Kernel time and wall time never share a
    pool: their round-to-round noise has other causes (a kernel figure's level can be drawn
    per process), and a few noisy kernel figures in a pool would let a noisy wall-time
    figure in beside them (gate-sim's figures: docs/evidence/paired-stage-notes.md).
    A kernel-time figure beside its own wall time so never counts that benchmark twice."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    groups: dict[tuple[str, bool], list[PairedFigure]] = {}
    for f in figs:
        out[(f.key, f.metric)] = (statistics.variance(f.diffs()), len(f.base) - 1.0)
        groups.setdefault((f.cls, kernels_of(f.metric) is not None), []).append(f)
    for members in groups.values():
        if len(members) < MIN_POOL:
            continue
        keep = {(f.key, f.metric) for f in members}
        for _ in range(10):
            new = {(f.key, f.metric) for f in members if _fits(out, keep, (f.key, f.metric))}
            if new == keep:
                break
            keep = new
            if len(keep) < MIN_POOL:
                break
        if len(keep) < MIN_POOL:  # too few agree to pool: each keeps its own variance
            continue
        sp, df_sum = pooled_variance(out, keep)
        for k in keep:  # a figure noisier than its pool keeps its own df with its own variance
            out[k] = (sp, df_sum) if out[k][0] <= sp else out[k]
    return out


def _fits(out: dict[tuple[str, str], tuple[float, float]], keep: set[tuple[str, str]],
          k: tuple[str, str]) -> bool:  # fmt: skip
    """Whether figure k's variance is one the pool of the OTHER kept figures explains (F at
    SCREEN_P): leave-one-out, so a single noisy member, which would dominate a pool it is
    part of (one of three at ten times the others' variance is still under F's bar), is
    screened out instead of widening every quiet class-mate's interval."""
    sp, df = pooled_variance(out, keep - {k})
    if df <= 0:
        return True
    return out[k][0] <= sp * f_isf(SCREEN_P, out[k][1], df)


STAGE = "paired stage"
VETO = Rule.VETO


def judge_paired(
    figs: Sequence[PairedFigure],
    tolerance: Mapping[str, float],
    false_alarm: float,
    count: int | None = None,
) -> tuple[dict[tuple[str, str], Verdict], float]:
    """The stage-2 verdict of each figure (by key, metric) and the confidence each was
    judged at: `false_alarm` is the share of the run's budget this look spends, split over
    the figures re-measured (`count`, where the look judges fewer: the second look judges
    the figures the first left undecided, over all the stage re-measured); `tolerance`
    each key's."""
    confidence = per_metric_confidence(false_alarm, count if count is not None else len(figs))
    out: dict[tuple[str, str], Verdict] = {}
    good = []
    for f in figs:
        tol = tolerance[f.key]
        if not f.usable():
            why = f"{len(f.base)} paired round(s) of finite positive figures: 2 needed"
            out[(f.key, f.metric)] = make(INCONCLUSIVE, None, None, None, tol, why,
                                          rule=Rule.TOO_FEW_ROUNDS, stage=STAGE)  # fmt: skip
            continue
        p = screened(f, tol)
        if p is not None:
            why = (
                f"{PER_PROCESS}: the process pairs disagree on its paired "
                f"difference (p = {p:.2g}); its few processes a side cannot average it out"
            )
            out[(f.key, f.metric)] = make(INCONCLUSIVE, None, None, None, tol, why,
                                          rule=Rule.PER_PROCESS, stage=STAGE)  # fmt: skip
            continue
        good.append(f)
    variances, procs = pooled(good), class_process(figs)
    for f in good:
        proc = procs.get((f.cls, kernels_of(f.metric) is not None))
        out[(f.key, f.metric)] = _judged(f, variances[(f.key, f.metric)], confidence,
                                         tolerance[f.key], proc)  # fmt: skip
    for f in good:  # one outlier round must not hide a change (issue 60)
        k = (f.key, f.metric)
        if out[k].status == INCONCLUSIVE and (i := outlier_round(f.diffs())) is not None:
            proc = procs.get((f.cls, kernels_of(f.metric) is not None))
            out[k] = _set_aside(f, i, good, out[k], confidence, tolerance[f.key], proc)
    return out, confidence


def _judged(f: PairedFigure, variance: tuple[float, float], confidence: float,
            tolerance: float, proc: Process | None = None) -> Verdict:  # fmt: skip
    """One usable figure's verdict on its rounds, its variance and df (`pooled`); where
    its class's process pairs disagree (`proc`, class_process), its interval is at least
    the one its pairs' means give (the class's mean square between them)."""
    var, df = variance
    n = len(f.base)
    d = statistics.fmean(f.diffs())
    half = quantile(confidence, df) * math.sqrt(var / n)
    p = per_process(f)
    if p is not None and p < PROCESS_P:  # a process effect too small to matter, but real
        half += pair_spread(f)  # its whole size joins the interval
    by_pairs = ""
    if proc is not None and proc[2] < PROCESS_P:
        wide = quantile(confidence, proc[1]) * math.sqrt(proc[0] / n)
        if wide > half:
            half, by_pairs = wide, (
                f"; {CLASS_PER_PROCESS} (its process pairs disagree, p = "
                f"{proc[2]:.2g}): the interval from its pairs' means ({proc[1]:.0f} df)")
    v = _each_pair(status_of(d, half, higher_is_better=f.higher, tolerance=tolerance), f,
                   tolerance, var)  # fmt: skip
    kind = "'s kernel-time figures" if kernels_of(f.metric) is not None else ""
    pool = f"pooled over its class{kind}, {df:.0f} df" if df > n - 1 else f"its own, {n - 1} df"
    more = (", more process pairs would narrow it (a second look takes it where the budget "
            "holds one)") if by_pairs and v.status == INCONCLUSIVE else ""  # fmt: skip
    return _too_few(amend(
        v, None,
        reason=f"{v.reason} over {n} paired rounds{by_pairs}{more}",
        # the half-width as the verdict carries and every output prints it (log units)
        basis=f"±{half * 100:.2f}% over {n} paired rounds ({pool}){by_pairs}",
    ), f)  # fmt: skip


def _each_pair(v: Verdict, f: PairedFigure, tolerance: float, var: float) -> Verdict:
    """`v` unless it is a change that a process pair contradicts: a pair whose own rounds
    put the figure within the tolerance (its mean inside it by more than CONTRADICT_Z of its
    own standard error: the spread of the figure's rounds within their pairs, else `var`);
    then inconclusive. A figure whose level is drawn per process has each pair's rounds
    off together, precise and apart: with two pairs and no such check, 1.0% of simulated
    A/A runs failed, most on a kernel-time figure; 0.33% with three pairs and this check
    (0.45% with three alone; docs/evidence/gate-sim-2026-12-07-project). A pair too noisy
    to tell contradicts nothing: its noise is already in the interval."""
    if v.status not in CHANGED:
        return v
    pairs = _toward(f, str(v.status))
    if len(pairs) < 2:
        return v
    tol = math.log1p(tolerance)
    a = _anova(f)
    if a is not None and a[3] >= 2:  # the spread of its rounds within their pairs
        var = a[2] / a[3]
    against = [p for p, _, s, n in pairs if s < tol - CONTRADICT_Z * math.sqrt(var / n)]
    if not against:
        return v
    said = ", ".join(f"{math.expm1(m) * 100:+.2f}%" for _, m, _, _ in pairs)
    why = (f"{v.status} ({relative_change_text(v)}) over its rounds, but process pair(s) "
           f"{', '.join(str(p + 1) for p in against)} of {len(pairs)} put it within the "
           f"tolerance on their own (the pairs: {said}): {PER_PROCESS}")  # fmt: skip
    return amend(v, Rule.PER_PROCESS, STAGE, status=INCONCLUSIVE, reason=why,
                 figures={"process pairs": said, "withheld": str(v.status)})


def without_round(f: PairedFigure, i: int) -> PairedFigure:
    """`f` less its round `i`."""
    def drop(xs: tuple[Any, ...]) -> tuple[Any, ...]:
        return xs[:i] + xs[i + 1:] if xs else xs

    return replace(f, base=drop(f.base), head=drop(f.head), pair=drop(f.pair),
                   within=drop(f.within))  # fmt: skip


def _set_aside(f: PairedFigure, i: int, good: list[PairedFigure], v: Verdict,
               confidence: float, tolerance: float,
               proc: Process | None = None) -> Verdict:  # fmt: skip
    """An inconclusive figure `f` (verdict `v`) whose round `i` is an outlier
    (`outlier_round`), judged on its other rounds, pooled as the others are: their change
    stands only where it lies on the side away from the outlier (a round that pulled a
    slowdown towards nothing hid it; one that went the way of the change cannot make it)
    and their interval is narrower than the tolerance (a quiet figure with one disturbed
    round, not a noisy one: in the project's simulator a figure whose rounds spread 20%
    read a false regression of -18.9% ±19.3% on its other 17 rounds), else `v`. Never
    unchanged from the rest: a round that alone went far may be the change itself."""
    rest = without_round(f, i)
    if screened(rest, tolerance) is not None:
        return v
    k = (f.key, f.metric)
    v2 = _judged(rest, pooled([rest if g is f else g for g in good])[k], confidence, tolerance,
                 proc)  # fmt: skip
    d = f.diffs()
    worse_o = -d[i] if f.higher else d[i]
    worse_rest = statistics.fmean(-x if f.higher else x for x in rest.diffs())
    away = REGRESSED if worse_o < worse_rest else IMPROVED
    if v2.status != away or (v2.uncertainty or 0.0) > math.log1p(tolerance):
        return v  # the rest too noisy to be told from noise by one round (gate-sim's m60)
    said = (f"round {i + 1} of {len(d)} set aside as an outlier ({math.expm1(d[i]) * 100:+.2f}%, "
            f"where the others' mean is {math.expm1(statistics.fmean(rest.diffs())) * 100:+.2f}%); "
            f"on all its rounds: {v.reason}")  # fmt: skip
    return amend(v2, Rule.OUTLIER, STAGE, note=said, reason=f"{v2.reason}; {said}",
                 figures={"round set aside": i + 1, "its change": math.expm1(d[i])})


def clocked(time_v: Verdict, cycle_v: Verdict) -> Verdict:
    """The paired stage's verdict of compute-bound work from its time's rounds and its
    per-clock twin's (each round's figure per median SM clock cycle).

    Stage 1 asks a regression to hold in time AND per cycle (verdict.combine_clocked): its
    sessions ran on other cards in other power states. A round measures both builds on one card
    minutes apart, alternating, and a round's median clock reading is coarse (the H200's
    figures: docs/evidence/paired-stage-notes.md). So the time decides, at its own interval, and
    the cycles can only veto a change: a time slower or faster beyond the tolerance whose cycles
    are decidedly the same, or changed the other way, is `power-state` (the clocks of the two
    builds' rounds differed), never a regression or an improvement. Every change this gives, the
    time alone gives, so it adds no false alarm to it, and every status but those vetoed is the
    time's."""
    if time_v.worse is None or cycle_v.worse is None:
        return time_v
    per_cycle = f"per clock cycle {relative_change_text(cycle_v)}, {cycle_v.status}"
    cycles = {"per clock cycle": str(cycle_v.status), "per cycle change": cycle_v.change}
    clocks = "each round at its own SM clock"
    against = {REGRESSED: (UNCHANGED, IMPROVED), IMPROVED: (UNCHANGED, REGRESSED)}
    if cycle_v.status in against.get(time_v.status, ()):
        way = "slower" if time_v.status == REGRESSED else "faster"
        why = (f"power state differs: {way} in time ({relative_change_text(time_v)}) but "
               f"{per_cycle} ({clocks})")  # fmt: skip
        return amend(time_v, VETO, STAGE, figures=cycles, status=INCONCLUSIVE_POWER,
                     reason=why, per_cycle=str(cycle_v.status),
                     per_cycle_worse=cycle_v.worse)  # fmt: skip
    return amend(time_v, VETO, STAGE, figures=cycles,
                 reason=f"{time_v.reason} in time; {per_cycle} ({clocks})",
                 per_cycle=str(cycle_v.status), per_cycle_worse=cycle_v.worse)  # fmt: skip

"""The noise model of a baseline: noise classes, per-session class offsets, pooled spread.

Pure: numbers in, numbers out (scipy's F and t quantiles where they are needed). Model, in
log units, for metric m of noise class c measured in session s:

    log y[m, s] = mu[m] + b[c, s] + e[m, s]

A session (one pytest run on one GPU) shifts every metric of a class together by b[c, s]
(a fresh machine, another power state); e is the metric's own residual. Measured on H200s
(docs/baselines.md): model steps 0.71% class offset sd against 0.21% residual, memory
bandwidth 0.36% / 0.44%, compute 0.50% / 1.1%. With the offsets removed, the residual
spread of one metric is estimated from its class's metrics pooled together: tens of
degrees of freedom instead of 2, so three baseline sessions are enough to see a 5% change.

Everything is fitted in "better" space: log y for a figure where higher is better, -log y
for one where lower is better (a latency), so that a slower machine moves every figure of a
class the same way and a class offset never flips a latency's verdict.

What `fit` does, class by class:
1. Offsets (bandwidth, compute, model classes with at least MIN_OFFSET_METRICS metrics in
   a session): b[s] is the median over the class's metrics of their deviation from their
   own level (medians: a metric that moved does not move the offset), iterated with the
   levels; the offsets are centred, so mu is the level of an average session. Their spread
   is how far machines moved the class: judge.py removes this run's class offset from a
   metric only within that bound, and judges a larger shift as a class-wide verdict.
2. Set aside: with MIN_SET_ASIDE sessions or more, a session value that differs from the
   metric's other sessions by more than SET_ASIDE_MIN and SET_ASIDE_SDS times the class's
   spread (a model left resident, a throttled card) is not used, and the reason is kept to
   be shown. Such a metric keeps its own spread (it is never pooled), and a change the way
   the set-aside session went is inconclusive (judge.py).
3. Residual spread: each metric's own variance of the residuals, with k - 1 degrees of
   freedom; a class of at least MIN_POOL such metrics pools them (weighted by their degrees
   of freedom). A metric clearly noisier than the pool (F test at SCREEN_P) is left out of
   the pool and keeps its own spread; the others take the larger of their own and the pool,
   with the pool's degrees of freedom. Where fewer than MIN_POOL are left, there is no pool
   and each keeps its own spread. Recorded values (a user's own figures) share no noise
   source and are never pooled. A figure derived from another (judge.py marks a copy of a
   measurement) never votes: not in the offsets, not in the pool; it takes the pool where
   it is as quiet as the pool. GPU kernel-time figures are a class of their own with no
   offsets (core.figures.KERNEL_TIME): pooled among themselves, each session's value as
   measured. On the H200 the suite's 11 kernel-time figures spread 0.17-0.73% over three
   fresh machines, where their work's wall-time class moved with the host; removing the
   wall-time class's offsets from them added that noise (judged +-52-105%), and offsets of
   their own, estimated from a handful of figures, cost more than they removed.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..baseline.history import Series
from ..core.figures import (  # the classes are the result model's; noise fits them
    BANDWIDTH,
    CLOCK,
    COMPUTE,
    LAUNCH,
    MODEL,
    RECORDED,
)
from .verdict import ratio_change

OFFSET_CLASSES = (BANDWIDTH, COMPUTE, MODEL, CLOCK)  # one machine moves them together
# (not KERNEL_TIME: a GPU state that moves every kernel reads as each figure changed, and the
# paired stage re-measures a kernel-time figure stage 1 finds changed: paired/stage.py)
UNPOOLED = (RECORDED,)  # a user's own figures: nothing in common to pool
MIN_OFFSET_METRICS = 4  # metrics of a class in one session to estimate its offset ...
FULL_OFFSET_METRICS = 6  # ... or this many where the class has them (a steadier median)
MIN_RUN_OTHERS = MIN_OFFSET_METRICS - 1  # other metrics of its class for a run offset
MIN_POOL = 3  # metrics with a spread of their own for a class pool
SCREEN_P = 0.01  # F test: a metric noisier than its class keeps its own spread
SET_ASIDE_MIN = 0.05  # a session value this far (relative) from the metric's others ...
SET_ASIDE_SDS = 10.0  # ... and this many class spreads away is set aside
MIN_SET_ASIDE = 4  # sessions a metric needs before one may be set aside (3 remain to agree)
OFFSET_ITERATIONS = 20
# Launch-bound wall time moves between processes by more than a few sessions show: on the
# H200 9-30% sd between sessions (gate-sim's fit), a 7B prefill 25.6 -> 42.4 ms between two
# processes of one lease, and matmuls at batch 8 and 256 whose 3 saved sessions were within
# 7% read 42-49% faster in later processes (2026-12-01). Its spread is never taken below
# the top of that range, a prior (infinite degrees of freedom), not an estimate: such a
# figure decides only changes of about 3x or more; gpuperf ab, or a GPU-bound
# configuration, sees smaller ones.
LAUNCH_FLOOR = 0.30
LAUNCH_FLOOR_VAR = math.log1p(LAUNCH_FLOOR) ** 2


@dataclass(frozen=True)
class Spread:
    """What the model knows of one metric: its level and how far a new session's value
    strays from it when nothing changed."""

    level: float  # log of the metric's level in an average session (offsets removed)
    var: float  # variance (log units) of one session's residual
    df: float  # degrees of freedom of `var` (math.inf: not estimated from data)
    k: int  # sessions the level is the mean of
    source: str  # "own", "class", "own, noisier than its class", "class (1 session)"
    pool_metrics: int = 0  # metrics the class pool was made of
    set_aside: tuple[str, ...] = ()  # why a session's value was not used
    offsets_removed: bool = False  # the baseline's class offsets were removed
    aside_dev: float | None = None  # how far (log) the set-aside value was from the others
    floored: bool = False  # launch-bound: the spread raised to the floor between processes


@dataclass
class ClassFit:
    cls: str
    offsets: dict[str, float] = field(default_factory=dict)  # session -> log offset
    pooled_var: float | None = None
    pooled_df: float = 0.0
    pool_metrics: int = 0
    screened: int = 0
    # the class line's spread of one figure where the class has no pool (fewer than
    # MIN_POOL agree): the pool of the screen's last set of at least MIN_POOL (`_pool`)
    line_var: float | None = None

    @property
    def offset_var(self) -> tuple[float, int] | None:
        """Variance of the session offsets (log units) and its degrees of freedom."""
        n = len(self.offsets)
        if n < 2:
            return None
        return sum(b * b for b in self.offsets.values()) / (n - 1), n - 1


def better(value: float, higher: bool) -> float:
    """A positive figure in "better" space: log for higher-is-better, -log for lower."""
    return math.log(value) if higher else -math.log(value)


def _median(xs: Iterable[float]) -> float:
    return statistics.median(list(xs))


def _var(xs: Sequence[float]) -> float:
    """statistics.variance, to the bit (the exact variance, rounded once), in integers:
    its Fractions cost seconds over a baseline of 20,000 figures. A float is an integer
    over a power of two; over the largest such denominator D every value is an integer
    X, and the variance is (n sum X^2 - (sum X)^2) / (n (n - 1) D^2), which Python's
    integer division rounds correctly."""
    n = len(xs)
    if n < 2:
        return math.nan
    if not all(isinstance(x, float) and math.isfinite(x) for x in xs):
        return statistics.variance(xs)
    ratios = [x.as_integer_ratio() for x in xs]
    den = max(d for _, d in ratios)
    ints = [num * (den // d) for num, d in ratios]
    s1 = sum(ints)
    return (n * sum(x * x for x in ints) - s1 * s1) / (n * (n - 1) * den * den)


def f_isf(p: float, dfn: float, dfd: float) -> float:
    from scipy.special import fdtri

    return float(fdtri(dfn, dfd, 1 - p))


class NoiseModel:
    """The fitted model of one baseline file (see the module's docstring)."""

    def __init__(self) -> None:
        self.classes: dict[str, ClassFit] = {}
        self.spreads: dict[str, Spread] = {}
        self.series: dict[str, Series] = {}
        self.use_offsets = True

    @classmethod
    def fit(cls, series: Iterable[Series], offsets: bool = True) -> NoiseModel:
        """The model of these series; `offsets=False` keeps each session's class offset
        in the spread (for a run too small to estimate its own offset)."""
        model = cls()
        model.use_offsets = offsets
        by_class: dict[str, list[Series]] = defaultdict(list)
        for s in series:
            logs = [v for v in s.values if v > 0 and math.isfinite(v)]
            if len(logs) != len(s.values) or not logs:
                continue  # zeros are judged apart (judge.py); no log of them
            model.series[s.key] = s
            by_class[s.cls].append(s)
        for c, members in by_class.items():
            model._fit_class(c, members)
        return model

    def _fit_class(self, c: str, members: list[Series]) -> None:
        """One class, steps 1-3 of the module's docstring: its session offsets, each
        metric's own level and spread with a wild session set aside, the class pool, and
        from them each member's Spread."""
        fit = ClassFit(c)
        self.classes[c] = fit
        derived = {s.key for s in members if s.derived}  # copies of a measurement: no vote
        residuals = self._residuals(fit, members, derived)
        own: dict[str, _Own] = {}
        for s in members:
            res = residuals[s.key]
            own[s.key] = (statistics.fmean(res), _var(res), len(res), ())
        aside_dev = _set_aside(members, residuals, own)
        # the degrees of freedom the offsets took: a metric's residuals are a little small
        m_fit = sum(1 for s in members if len(s.values) > 1 and not s.derived)
        scale = m_fit / (m_fit - 1) if fit.offsets and m_fit > 1 else 1.0
        with_spread = {
            k: (v * scale, n - 1) for k, (_, v, n, _) in own.items() if n > 1 and math.isfinite(v)
        }
        # a metric with a session set aside keeps its own spread: the sessions left may
        # agree by chance, and one that strays that far may be how the metric behaves
        unpooled = derived | set(aside_dev)
        pooled_keys = _pool(fit, with_spread, derived, unpooled, set(aside_dev))
        for s in members:
            spread = _member_spread(s.key, fit, own[s.key], with_spread, pooled_keys, unpooled)
            if s.key in aside_dev:
                spread = replace(spread, aside_dev=aside_dev[s.key])
            if c == LAUNCH and math.isfinite(spread.var) and spread.var < LAUNCH_FLOOR_VAR:
                spread = replace(spread, var=LAUNCH_FLOOR_VAR, df=math.inf, floored=True)
            self.spreads[s.key] = spread

    def _residuals(
        self, fit: ClassFit, members: list[Series], derived: set[str]
    ) -> dict[str, list[float]]:
        """Each member's values in "better" space less its session's class offset; the
        offsets (step 1) are fitted here first, from the class's measurements only (a
        derived figure is a copy of one: counting it would weigh one measurement twice)."""
        logs = {s.key: [better(v, s.higher) for v in s.values] for s in members}
        sessions = {s.key: s.sessions for s in members}
        if fit.cls in OFFSET_CLASSES and self.use_offsets:
            fit.offsets = _offsets({k: v for k, v in logs.items() if k not in derived}, sessions)
        return {
            s.key: [
                y - fit.offsets.get(ss, 0.0) for y, ss in zip(logs[s.key], s.sessions, strict=True)
            ]
            for s in members
        }

    def spread(self, key: str) -> Spread | None:
        return self.spreads.get(key)


# a metric's own fit: level, variance of one session, sessions, why a session was set aside
_Own = tuple[float, float, int, tuple[str, ...]]


def _set_aside(
    members: list[Series], residuals: dict[str, list[float]], own: dict[str, _Own]
) -> dict[str, float]:
    """Step 2: a session value far from the metric's other sessions (a model left
    resident, a throttled card) is set aside, so one bad session cannot widen the spread
    or move the level; `own` takes the metric's fit without it and the reason to show.
    Judged against the class's typical spread, measured before any is set aside. Returns
    how far (log) each set-aside value was from the others."""
    typical = [v for _, v, k, _ in own.values() if k > 1 and math.isfinite(v)]
    typical_sd = math.sqrt(_median(typical)) if typical else 0.0
    bound = max(math.log1p(SET_ASIDE_MIN), SET_ASIDE_SDS * typical_sd)
    aside_dev: dict[str, float] = {}
    for s in members:
        res = residuals[s.key]
        if len(res) < MIN_SET_ASIDE:
            continue
        far = max(range(len(res)), key=lambda i: abs(res[i] - _median(res[:i] + res[i + 1 :])))
        others = res[:far] + res[far + 1 :]
        dev = res[far] - _median(others)
        if abs(dev) > bound:
            shown = dev if s.higher else -dev  # the value's own change, not "better"
            why = (
                f"session of {s.sessions[far]} set aside: {ratio_change(shown) * 100:+.1f}% "
                f"from the metric's other {len(others)} sessions (more than "
                f"{ratio_change(bound) * 100:.1f}%: another model resident, a throttled "
                "card?)"
            )
            own[s.key] = (statistics.fmean(others), _var(others), len(others), (why,))
            aside_dev[s.key] = dev
    return aside_dev


def _pool(
    fit: ClassFit,
    with_spread: Mapping[str, tuple[float, float]],
    derived: set[str],
    unpooled: set[str],
    aside: set[str],
) -> set[str]:
    """Step 3: the class pool, set on `fit` (its variance, degrees of freedom, metrics,
    how many were screened out), made of the metrics that vote (not derived, none set
    aside) and pass the F test; returns the metrics that take the pool's spread: those,
    and a derived figure as quiet as the pool. None in an UNPOOLED class or one of fewer
    than MIN_POOL voters: each keeps its own spread."""
    voters = {k: v for k, v in with_spread.items() if k not in unpooled}
    if fit.cls in UNPOOLED or len(voters) < MIN_POOL:
        return set()
    keep, last = _screened(voters)
    if len(keep) < MIN_POOL:  # too few agree to pool: each keeps its own spread; the class
        # line (offsets.py) keeps the spread it had before the screen took the pool away
        fit.line_var = pooled_variance(with_spread, last)[0]
        return set()
    fit.pooled_var, fit.pooled_df = pooled_variance(with_spread, keep)
    fit.pool_metrics = len(keep)
    fit.screened = len(voters) - len(keep)
    return keep | {  # a derived figure as quiet as the pool takes its spread
        k
        for k in (derived - aside) & set(with_spread)
        if with_spread[k][0] <= fit.pooled_var * f_isf(SCREEN_P, with_spread[k][1], fit.pooled_df)
    }


def _member_spread(
    key: str,
    fit: ClassFit,
    own: _Own,
    with_spread: Mapping[str, tuple[float, float]],
    pooled_keys: set[str],
    unpooled: set[str],
) -> Spread:
    """One metric's Spread: the pool's (never below its own) if it is pooled, else its own
    (named noisier than its class when the F test left it out), else, with one session,
    the class's; with neither, no spread (NaN: judged inconclusive)."""
    level, _, n, aside = own
    offsets = bool(fit.offsets)
    if key in pooled_keys and fit.pooled_var is not None:
        v, _d = with_spread[key]
        return Spread(level, max(v, fit.pooled_var), fit.pooled_df, n, "class",
                      fit.pool_metrics, aside, offsets)  # fmt: skip
    if key in with_spread:
        v, d = with_spread[key]
        noisier = fit.pooled_var is not None and key not in unpooled
        source = "own, noisier than its class" if noisier else "own"
        return Spread(level, v, d, n, source, fit.pool_metrics, aside, offsets)
    if fit.pooled_var is not None:  # one session: the class's spread
        return Spread(level, fit.pooled_var, fit.pooled_df, n, "class (1 session)",
                      fit.pool_metrics, aside, offsets)  # fmt: skip
    return Spread(level, math.nan, 0, n, "none", 0, aside, offsets)


def pooled_variance(spreads: Mapping[Any, tuple[float, float]],
                    keys: Iterable[Any]) -> tuple[float, float]:  # fmt: skip
    """The variance of `keys` pooled (each figure's (variance, degrees of freedom) in
    `spreads`, weighted by its degrees of freedom) and its degrees of freedom; NaN with none.
    Summed in key order: a sum over a set is added in hash order, which differs between
    processes (PYTHONHASHSEED), and the run and its confirmation must agree. Stage 1's class
    pools and screen use it, and the paired stage's (paired/judge.pooled)."""
    ks = sorted(keys)
    df = sum(spreads[k][1] for k in ks)
    return (sum(spreads[k][0] * spreads[k][1] for k in ks) / df if df > 0 else math.nan), df


def _screened(voters: Mapping[str, tuple[float, float]]) -> tuple[set[str], set[str]]:
    """The metrics a class pool is made of: each is compared with the pool of the OTHER
    metrics kept (F test at SCREEN_P), so that one very noisy metric (a benchmark that is
    launch-bound in some sessions and not in others) cannot widen the pool enough to
    pass its own test and blind its quiet class-mates; iterated until it settles. Fewer
    than MIN_POOL left is no pool (`_pool`), as in the paired stage (paired/judge.pooled): a class
    of three with one noisy member no longer pools it with the two quiet ones (on the own
    file of 2026-12-02 a kernel time whose level is drawn per run, 4.7% between sessions,
    took a launch-bound step's quiet kernel time, 0.03%, from ±3.2% to ±28%). Returns the
    metrics kept and the last set of at least MIN_POOL the screen held (the same where
    the pool stands)."""
    keep = last = set(voters)
    for _ in range(10):
        new = _screen_round(voters, keep)
        if new == keep:
            break
        keep = new
        if len(keep) < MIN_POOL:
            break
        last = keep
    return keep, last


_ROUNDING = 2.0**-53  # a double's unit roundoff


def _screen_round(voters: Mapping[str, tuple[float, float]], keep: set[str]) -> set[str]:
    """One pass of the screen: the voters that pass the F test against the pool of the
    others in `keep`. The pool of "all kept but k" is the whole pool's sums less k's own
    (one sum per pass, not one per voter: a class of 20,000 figures took minutes); where
    that difference from `pooled_variance`'s own sum (added in key order) could decide
    the test, by the bound on a sum's rounding, the voter is tested by `pooled_variance`
    itself, so the screen keeps exactly the figures it kept when each pool was summed
    afresh (tests/test_baseline_noise.py checks it on random classes)."""
    keys = sorted(keep)
    weighted = {k: voters[k][0] * voters[k][1] for k in keys}
    total = math.fsum(weighted.values())
    spread = math.fsum(abs(x) for x in weighted.values())
    dfs = [voters[k][1] for k in keys]
    df_all = math.fsum(dfs)
    exact_df = all(float(d).is_integer() for d in dfs) and df_all < 2.0**52
    # |the sum in key order - the exact sum| <= (n-1)u * sum|x| (Higham); the difference
    # taken here rounds twice more (sums near the subnormals: summed afresh, below)
    err = 2 * (len(keys) + 4) * _ROUNDING * spread
    new = set()
    for k, (v, d) in voters.items():
        if not (exact_df and math.isfinite(spread) and (spread == 0 or spread > 1e-250)):
            passed = _passes(voters, keep, k)
        else:
            df = df_all - (d if k in keep else 0.0)
            if df <= 0:
                new.add(k)
                continue
            f = _bound(d, df)
            num = total - weighted.get(k, 0.0)
            low, high = (num - err) / df * f, (num + err) / df * f
            if v <= low - abs(low) * 1e-12:  # the division and product round a few ulps
                passed = True
            elif v > high + abs(high) * 1e-12:
                passed = False
            else:  # too close to call from the difference: the pool summed afresh
                passed = _passes(voters, keep, k)
        if passed:
            new.add(k)
    return new


@functools.lru_cache(maxsize=4096)
def _bound(d: float, df: float) -> float:
    """The screen's F bound for (d, df) degrees of freedom: few pairs recur, each once."""
    return f_isf(SCREEN_P, d, df)


def _passes(voters: Mapping[str, tuple[float, float]], keep: set[str], k: str) -> bool:
    """Whether voter k passes the F test against the pool of the others kept, that pool
    summed afresh (`pooled_variance`): the screen's definition."""
    sp, df = pooled_variance(voters, keep - {k})
    return df <= 0 or voters[k][0] <= sp * _bound(voters[k][1], df)


def _offsets(
    logs: dict[str, list[float]], sessions: dict[str, tuple[str, ...]]
) -> dict[str, float]:
    """Session offsets of one class by alternating medians (a two-way fit that a few moved
    metrics cannot drag); only sessions with enough of the class's metrics get one:
    FULL_OFFSET_METRICS, or all of them in a class of MIN_OFFSET_METRICS to 5."""
    usable = {k: v for k, v in logs.items() if len(v) > 1}
    need = max(MIN_OFFSET_METRICS, min(FULL_OFFSET_METRICS, len(usable)))
    count: dict[str, int] = defaultdict(int)
    for k in usable:
        for s in set(sessions[k]):
            count[s] += 1
    estimable = {s for s, n in count.items() if n >= need}
    if len(estimable) < 2:
        return {}
    mu = {k: _median(v) for k, v in usable.items()}
    b: dict[str, float] = {}
    for _ in range(OFFSET_ITERATIONS):
        dev: dict[str, list[float]] = defaultdict(list)
        for k, ys in usable.items():
            for y, s in zip(ys, sessions[k], strict=True):
                if s in estimable:
                    dev[s].append(y - mu[k])
        new = {s: _median(v) for s, v in dev.items()}
        centre = statistics.fmean(new.values())
        new = {s: v - centre for s, v in new.items()}
        mu = {
            k: statistics.fmean(y - new.get(s, 0.0) for y, s in zip(ys, sessions[k], strict=True))
            for k, ys in usable.items()
        }
        if b and max(abs(new[s] - b.get(s, 0.0)) for s in new) < 1e-9:
            b = new
            break
        b = new
    return b


def leave_one_out(deviations: Sequence[float]) -> list[float | None]:
    """For each metric, the median of the OTHER metrics' deviations: the run's offset that
    metric is judged after, so that its own change (a regression) never moves it. None
    where fewer than MIN_RUN_OTHERS others exist. Sorted once: without the i-th value the
    sorted list is the whole one less one copy of that value, whose middle is read off
    the whole by index (statistics.median's own arithmetic: equal to the bit, where sorting
    each metric's others made a 50,000-test run's judging quadratic)."""
    n = len(deviations)
    if n - 1 < MIN_RUN_OTHERS:
        return [None] * n
    if not all(math.isfinite(d) for d in deviations):  # NaN sorts by position: as before
        return [_median([d for j, d in enumerate(deviations) if j != i]) for i in range(n)]
    order = sorted(range(n), key=lambda i: deviations[i])
    ranked = [deviations[i] for i in order]
    rank = {i: r for r, i in enumerate(order)}
    m = n - 1  # the others of each

    def at(j: int, gone: int) -> float:  # the j-th of the others, `gone` the removed rank
        return ranked[j] if j < gone else ranked[j + 1]

    out: list[float | None] = []
    for i in range(n):
        r = rank[i]
        if m % 2:
            out.append(at(m // 2, r))
        else:
            out.append((at(m // 2 - 1, r) + at(m // 2, r)) / 2)
    return out

"""Changes over a figure's series: steps (with the commit range they fall in) and creep.

No maintained change-point library is installed with the plugin (ruptures, Apache Otava and
signal-processing-algorithms are not its dependencies), so the method is a small one,
written here and tested on made-up series (tests/test_history_changes.py):

- Measured (tools/history_detection_rates.py; docs/performance.md, "The nightly history").
- Values in "better" space, log y (higher is better) or -log y (lower is better); points
  flagged power-state, gpu-shared or busy-host are left out and counted.
- The noise: sd of one run about its level, the larger of the series' own (from its
  successive differences, median absolute deviation: a step moves one difference only)
  and its noise class's spread between machines (CLASS_SD, the numbers the paired stage's
  base check uses: gate-sim's fit of the H200 sessions).
- Heavy tails: each value is held within CLIP sds of the running median of 5 around it
  (winsorized), so a machine far off one night does not make a step.
- Steps: binary segmentation. In a stretch of runs, the split with the largest two-sample
  z statistic (difference of the means over its standard error at that noise) is a step
  where it passes a two-sided test at ALPHA, Bonferroni over the splits tried; each side
  is searched again. A step's size and interval come from the runs between its
  neighbouring steps; its range is every split
  whose z^2 is within chi2(1, 99%) of the best (a likelihood-ratio interval of its place):
  the last run before it and the first after.
- Creep: neighbouring steps of one direction (binary segmentation cuts a ramp into
  several) that a ramp explains better: the fit of two corners (a level, a straight line
  of at least MIN_RAMP points, a level) against the steps' (for one step, its sum of
  squares lower by more than chi2(1) at 1 - ALPHA times the noise: a parameter more), no
  run of its line moving by more than the tolerance. A ramp whose line moved beyond the
  tolerance is creep, reported with its rate and the runs it spans, and the steps inside
  it are its own; a smaller one stays steps.
- A step whose two runs differ in driver, CUDA or torch is labelled the environment's.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol

from ..core.figures import (
    BANDWIDTH,
    CLOCK,
    COMPUTE,
    KERNEL_TIME,
    LAUNCH,
    MEMORY,
    MODEL,
    PER_CLOCKS,
    SPEED,
    TIMED,
    per_clock_name,
)
from ..core.settings import SETTINGS
from ..judging.noise import LAUNCH_FLOOR
from ..judging.verdict import z_quantile
from .store import STATUSES, History, Run, Series

ALPHA = 0.001  # per series, before the Bonferroni split over the splits tried
MIN_SEGMENT = 3  # runs on each side of a step
RUNNING, CLIP = 5, 3.0  # a value is held within CLIP sds of the median of 5 around it
RAMP_REACH = 30  # a ramp's corners are looked for this many runs either side of its steps
MIN_RAMP = 4  # points of a ramp (3 runs between its corners): fewer is a step
CHI2_PLACE = 6.635  # chi-squared, 1 degree of freedom, 99%: the step's place interval
# one run's sd about its level, by class (paired/basecheck.py's MACHINE_SD, the same fit;
# kernel time from the recorded sessions: the base check's 10% would hide a 5% step)
CLASS_SD = {
    MODEL: math.hypot(0.0071, 0.0021),
    BANDWIDTH: math.hypot(0.0036, 0.0044),
    COMPUTE: math.hypot(0.0050, 0.011),
    CLOCK: math.hypot(0.0050, 0.011),
    KERNEL_TIME: 0.0087,  # the recorded sessions' (docs/evidence/history-2026-12-07.md)
    LAUNCH: LAUNCH_FLOOR,
}
MIN_SD = 1e-4  # a deterministic figure (peak memory): a change of 0.01% is still real
ENV_FIELDS = ("driver", "cuda", "torch")
JUDGED = ("regressed", "inconclusive", "unchanged", "improved")  # a flip is between two
_TOL = {s.name: float(s.cuda) for s in SETTINGS if s.name in ("tolerance", "memory_tolerance")}


@dataclass(frozen=True)
class Change:
    """A step or a creep in one figure's series: its size (relative, in the figure's own
    value: + larger), the interval's half-width (log units), how sure (z), where (indexes
    into History.runs: the last run at the old level and the first at the new one)."""

    profile: str
    test: str
    figure: str
    kind: str  # "step" | "creep"
    direction: str  # slower | faster (a speed figure), worse | better
    change: float
    interval: float
    z: float
    last_good: int
    first_bad: int
    environment: str | None = None  # "driver 580 -> 590": the environment changed there
    rate: float | None = None  # creep: relative change per run
    runs: int = 0  # creep: the runs it spans


@dataclass(frozen=True)
class Found:
    changes: list[Change]
    left_out: dict[tuple[str, str, str], dict[str, int]]  # series -> flag -> points
    # series -> (nights judged, verdict flips between judged nights, regressed nights with
    # no change for the worse before them): where either count is not 0
    verdicts: dict[tuple[str, str, str], tuple[int, int, int]]


class Memo(Protocol):
    """A series' changes found before, where the series is as it was then (detectcache.py:
    a new run re-examines only the series it changed)."""

    def get(self, key: tuple[str, str, str],
            s: Series) -> tuple[list[Change], tuple[int, int, int]] | None: ...  # fmt: skip

    def put(self, key: tuple[str, str, str], s: Series, found: list[Change],
            judged: tuple[int, int, int]) -> None: ...  # fmt: skip


def find_changes(history: History, memo: Memo | None = None) -> Found:
    """Every series' steps and creep, newest first (a series `memo` knows as it is: its
    changes as found before)."""
    changes: list[Change] = []
    left: dict[tuple[str, str, str], dict[str, int]] = {}
    verdicts = {}
    for key, s in history.series.items():
        if s.left:
            counts: dict[str, int] = {}
            for flag in s.left.values():
                counts[flag] = counts.get(flag, 0) + 1
            left[key] = counts
        known = memo.get(key, s) if memo is not None else None
        if known is not None:
            found, judged = known
        else:
            found = series_changes(s, history.runs)
            judged = verdict_counts(s, found)
            if memo is not None:
                memo.put(key, s, found, judged)
        changes += found
        if judged[1] or judged[2]:
            verdicts[key] = judged
    changes = beside_their_time(changes)
    changes.sort(key=lambda c: (-c.first_bad, c.profile, c.test, c.figure))
    return Found(changes, left, verdicts)


def beside_their_time(changes: list[Change]) -> list[Change]:
    """`changes` less each per-clock one that no change of its time figure (its test, its
    profile) meets in range: as the gate judges per cycle only beside the time, a per-clock
    step alone is its clock readings' noise (on the recorded sessions' noise, 5.5% of flat
    per-clock series reported one: docs/evidence/history-2026-12-07.md)."""
    time: dict[tuple[str, str, str], list[Change]] = {}  # by the per-clock twin's name
    for c in changes:
        if c.figure in TIMED:
            time.setdefault((c.profile, c.test, per_clock_name(c.figure)), []).append(c)
    return [c for c in changes if c.figure not in PER_CLOCKS or any(
        t.last_good <= c.first_bad and c.last_good <= t.first_bad
        for t in time.get((c.profile, c.test, c.figure), ()))]


def verdict_counts(s: Series, found: list[Change]) -> tuple[int, int, int]:
    """(nights judged, flips, false alarms): how often the figure's verdict changed between
    one judged night and the next (a flaky benchmark flips between unchanged and
    inconclusive), and the nights it regressed with no change for the worse found at or
    before them."""
    judged = [(s.runs[i], STATUSES[st]) for i, st in enumerate(s.status)
              if st >= 0 and STATUSES[st] in JUDGED]  # fmt: skip
    flips = sum(a[1] != b[1] for a, b in pairwise(judged))
    worse = [c.first_bad for c in found if c.direction in ("slower", "worse")]
    false = sum(1 for run, st in judged if st == "regressed" and not any(w <= run for w in worse))
    return len(judged), flips, false


def tolerance_of(s: Series) -> float:
    """The figure's tolerance: its newest verdict's, else the default for its kind."""
    if s.tolerance:
        return s.tolerance
    return _TOL["memory_tolerance"] if s.noise_class == MEMORY else _TOL["tolerance"]


def noise_sd(x: Any, cls: str | None) -> float:
    """One run's sd about its level: the series' own, robust to steps, at least its class's."""
    import numpy as np

    own = 0.0
    if len(x) >= 3:
        d = np.diff(x)
        own = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2)
    return max(own, CLASS_SD.get(cls or "", 0.0), MIN_SD)


def series_changes(s: Series, runs: list[Run]) -> list[Change]:
    """The steps and creep of one series."""
    import numpy as np

    keep = [i for i in range(len(s.runs)) if i not in s.left]
    if len(keep) < 2 * MIN_SEGMENT:
        return []
    values = np.asarray([s.median[i] for i in keep], dtype=float)
    if np.any(values <= 0):
        return []  # a log scale needs positive values; a zero figure has no level to move
    x = np.log(values) if s.higher else -np.log(values)
    at = [s.runs[i] for i in keep]  # run index of each point
    sd, tol = noise_sd(x, s.noise_class), math.log1p(tolerance_of(s))
    x = _winsorized(x, sd)
    cuts = _segment(x, sd)
    cs = np.concatenate(([0.0], np.cumsum(x)))
    spans = [r for g in _groups(cs, cuts, sd) if (r := _ramp(x, g, cuts, sd, tol)) is not None]
    spans = [(a, e) for a, e in spans if abs(_fit(x, a, e)[0]) * (e - a) > tol]
    out = [_creep_change(s, x, sd, a, e, at) for a, e in spans]
    for k in cuts:
        if not any(a < k <= e for a, e in spans):  # inside a creep: the creep's
            out.append(_step_change(s, x, sd, cuts, k, at, runs))
    return out


def bisect_command(good: str | None, bad: str | None, nodeid: str) -> str | None:
    """The `gpuperf bisect` line for a range (None where a run recorded no commit)."""
    if not good or not bad:
        return None
    return f"gpuperf bisect --good {good[:12]} --bad {bad[:12]} -- {shlex.quote(nodeid)}"


def chi2_quantile(p: float, k: int) -> float:
    """The chi-squared quantile, by Wilson and Hilferty's cube (within 2% from k = 4 on;
    scipy.stats takes a second to import)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    return k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3


def _z_limit(tries: int) -> float:
    return z_quantile(1 - ALPHA / max(1, tries))


def _split_z(cs: Any, lo: int, hi: int, sd: float) -> tuple[Any, Any]:
    """Splits k of x[lo:hi] (MIN_SEGMENT each side) and their z statistics."""
    import numpy as np

    k = np.arange(lo + MIN_SEGMENT, hi - MIN_SEGMENT + 1)
    nl, nr = k - lo, hi - k
    diff = (cs[hi] - cs[k]) / nr - (cs[k] - cs[lo]) / nl
    return k, diff / (sd * np.sqrt(1 / nl + 1 / nr))


def _winsorized(x: Any, sd: float) -> Any:
    """x with each value held within CLIP noise sds of the median of the RUNNING values
    around it: a night far off (a heavy tail of machine noise) weighs as a night off by
    CLIP sds, and a new level, which the running median follows within two runs, stays."""
    import numpy as np

    half = RUNNING // 2
    padded = np.pad(x, half, mode="reflect")  # the ends' own value is not repeated: judged
    windows = np.lib.stride_tricks.sliding_window_view(padded, RUNNING)
    med = np.median(windows, axis=1)
    return np.clip(x, med - CLIP * sd, med + CLIP * sd)


def _segment(x: Any, sd: float) -> list[int]:
    """Binary segmentation: the first point of each new level, then those whose step,
    measured between its neighbours, still passes."""
    import numpy as np

    cs = np.concatenate(([0.0], np.cumsum(x)))
    limit = _z_limit(len(x) - 2 * MIN_SEGMENT + 1)
    cuts: list[int] = []
    todo = [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        if hi - lo < 2 * MIN_SEGMENT:
            continue
        k, z = _split_z(cs, lo, hi, sd)
        best = int(np.argmax(np.abs(z)))
        if abs(z[best]) <= limit:
            continue
        cut = int(k[best])
        cuts.append(cut)
        todo += [(lo, cut), (cut, hi)]
    cuts.sort()
    return [c for c in cuts if abs(_between(cs, cuts, c, sd)[1]) > limit]


def _between(cs: Any, cuts: list[int], k: int, sd: float) -> tuple[float, float, int, int]:
    """The step at k between its neighbouring steps: (difference, z, lo, hi)."""
    i = cuts.index(k)
    lo = cuts[i - 1] if i > 0 else 0
    hi = cuts[i + 1] if i + 1 < len(cuts) else len(cs) - 1
    nl, nr = k - lo, hi - k
    diff = (cs[hi] - cs[k]) / nr - (cs[k] - cs[lo]) / nl
    return float(diff), float(diff / (sd * math.sqrt(1 / nl + 1 / nr))), lo, hi


def _step_change(s: Series, x: Any, sd: float, cuts: list[int], k: int, at: list[int],
                 runs: list[Run]) -> Change:  # fmt: skip
    import numpy as np

    cs = np.concatenate(([0.0], np.cumsum(x)))
    diff, z, lo, hi = _between(cs, cuts, k, sd)
    first, last = k, k
    if hi - lo >= 2 * MIN_SEGMENT:  # the place's interval: splits nearly as good
        ks, zs = _split_z(cs, lo, hi, sd)
        same = zs * np.sign(diff)
        near = ks[(same > 0) & (same**2 >= float(same.max()) ** 2 - CHI2_PLACE)]
        first, last = min(k, int(near.min())), max(k, int(near.max()))
    good, bad = at[first - 1], at[last]
    half = z_quantile(0.95) * sd * math.sqrt(1 / (k - lo) + 1 / (hi - k))
    env = _environment(runs[good], runs[bad])
    return Change(s.profile, s.test, s.figure, "step", _direction(s, diff), _relative(s, diff),
                  half, abs(z), good, bad, environment=env)  # fmt: skip


def _fit(x: Any, a: int, e: int) -> tuple[float, float]:
    """Slope and residual sum of squares of a straight line through x[a..e]."""
    import numpy as np

    y = x[a : e + 1]
    t = np.arange(len(y), dtype=float)
    t -= t.mean()
    slope = float((t * (y - y.mean())).sum() / (t * t).sum())
    return slope, float(((y - y.mean() - slope * t) ** 2).sum())


def _groups(cs: Any, cuts: list[int], sd: float) -> list[list[int]]:
    """The cuts in groups a ramp may explain: neighbours of one direction within reach."""
    out: list[list[int]] = []
    sign = 0.0
    for k in cuts:
        d = math.copysign(1.0, _between(cs, cuts, k, sd)[0])
        if out and d == sign and k - out[-1][-1] <= RAMP_REACH:
            out[-1].append(k)
        else:
            out.append([k])
        sign = d
    return out


def _ramp(
    x: Any, group: list[int], cuts: list[int], sd: float, tol: float
) -> tuple[int, int] | None:
    """The ramp (its first and last point) that explains a group of steps better than the
    steps do, no run of it moving beyond the tolerance; None: steps. One step's ramp has
    one more parameter: it must fit better by more than chi2(1) at 1 - ALPHA."""
    import numpy as np

    i0 = cuts.index(group[0])
    lo = cuts[i0 - 1] if i0 > 0 else 0
    hi = cuts[i0 + len(group)] if i0 + len(group) < len(cuts) else len(x)
    y = x[lo:hi]
    bounds = [lo, *group, hi]
    step_sse = sum(float(((x[a:b] - x[a:b].mean()) ** 2).sum()) for a, b in pairwise(bounds))
    t = np.arange(len(y), dtype=float)
    best = (math.inf, 0, 0, 0.0)
    first, last = group[0] - lo, group[-1] - lo
    for i in range(max(0, first - RAMP_REACH), first):
        for j in range(max(last, i + MIN_RAMP - 1), min(len(y), last + RAMP_REACH)):
            g = np.clip(t - i, 0, j - i)
            gc, yc = g - g.mean(), y - y.mean()
            slope = float((gc * yc).sum() / (gc * gc).sum())
            sse = float(((yc - slope * gc) ** 2).sum())
            if sse < best[0]:
                best = (sse, i, j, slope)
    sse, i, j, slope = best
    penalty = chi2_quantile(1 - ALPHA, 1) * sd * sd if len(group) == 1 else 0.0
    if step_sse - sse <= penalty or abs(slope) > tol:  # a run beyond the tolerance: steps
        return None
    return lo + i, lo + j


def _creep_change(s: Series, x: Any, sd: float, a: int, e: int, at: list[int]) -> Change:
    slope, _ = _fit(x, a, e)
    total = slope * (e - a)
    sxx = (e - a + 1) * ((e - a + 1) ** 2 - 1) / 12
    se = sd / math.sqrt(sxx)
    return Change(s.profile, s.test, s.figure, "creep", _direction(s, total), _relative(s, total),
                  z_quantile(0.95) * se * (e - a), abs(slope / se), at[a], at[e],
                  rate=_relative(s, slope), runs=e - a + 1)  # fmt: skip


def _relative(s: Series, d: float) -> float:
    """A better-space log difference as the figure's own relative change."""
    return math.expm1(d if s.higher else -d)


def _direction(s: Series, d: float) -> str:
    if s.figure in SPEED:
        return "faster" if d > 0 else "slower"
    return "better" if d > 0 else "worse"


def _environment(good: Run, bad: Run) -> str | None:
    """What of the environment differs between the two runs, or None."""
    moved = [f"{name} {good.card.get(name)} -> {bad.card.get(name)}" for name in ENV_FIELDS
             if good.card.get(name) != bad.card.get(name)]  # fmt: skip
    return ", ".join(moved) or None

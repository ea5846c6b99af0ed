"""A figure's paired rounds (base and head measured back to back, round by round) and the
advice that would settle one left inconclusive on them: shared by the paired stage's judge
(paired/judge.py) and gpuperf ab's (abjudge.py), so one figure gets one advice. Pure: no
git, no processes, no files."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .verdict import quantile

SETTLE_CAP = 1000  # paired rounds: a projection beyond this says "more than"
LEVEL_RATIO = 4.0  # base rounds spread this many times a round's own interval: set per run


@dataclass(frozen=True)
class PairedFigure:
    """One figure's rounds: round i measured `base[i]` and `head[i]` back to back, in the
    process pair `pair[i]`."""

    key: str  # the result's baseline key
    metric: str
    cls: str  # its noise class
    higher: bool  # higher is better
    base: tuple[float, ...]
    head: tuple[float, ...]
    pair: tuple[int, ...]
    # each round's own interval of the base build's figure, relative half-width (its
    # samples' spread within the round); () where the rounds did not record one
    within: tuple[float, ...] = ()

    def diffs(self) -> list[float]:
        """log(head / base) per round."""
        return [math.log(h / b) for b, h in zip(self.base, self.head, strict=True)]

    def usable(self) -> bool:
        n = len(self.base)
        values = (*self.base, *self.head)
        return n >= 2 and n == len(self.head) and all(math.isfinite(v) and v > 0 for v in values)


OUTLIER_P = 0.01  # a round this unlikely beside the others (Bonferroni over the rounds)
OUTLIER_MIN = 5  # rounds before one can be told an outlier (4 others, 3 df)


def outlier_round(diffs: Sequence[float]) -> int | None:
    """The index of the one round whose paired difference the others' do not explain, or
    None: the largest studentized deleted residual (the round against the mean and sd of the
    others), two-sided, beyond Student's t at OUTLIER_P split over the rounds, n - 2 df. A
    round beside others that are all equal is an outlier wherever it differs from them."""
    n = len(diffs)
    if n < OUTLIER_MIN:
        return None
    best, worst = None, 0.0
    for i, x in enumerate(diffs):
        rest = [*diffs[:i], *diffs[i + 1:]]
        m, s = statistics.fmean(rest), statistics.stdev(rest)
        gap = abs(x - m)
        t = gap / (s * math.sqrt(1 + 1 / (n - 1))) if s > 0 else (math.inf if gap > 0 else 0.0)
        if t > worst:
            best, worst = i, t
    return best if worst > quantile(1 - OUTLIER_P / n, n - 2) else None


def rounds_to_settle(var: float, confidence: float, tolerance: float) -> int | None:
    """The paired rounds after which a figure whose paired difference varies `var` a round
    (log units) has an interval of half the tolerance at `confidence` on its own degrees
    of freedom: it is decided then whether it moved 1.5 times the tolerance or less than
    half of it. None when not even SETTLE_CAP rounds would do, or `var` is not finite."""
    if not (math.isfinite(var) and var >= 0):
        return None
    target = math.log1p(tolerance) / 2

    def fits(n: int) -> bool:  # monotone in n: both t and 1/sqrt(n) fall
        return quantile(confidence, n - 1) * math.sqrt(var / n) <= target

    lo, hi = 2, SETTLE_CAP
    if fits(lo):
        return lo
    if not fits(hi):
        return None
    while hi - lo > 1:  # fits(hi), not fits(lo)
        mid = (lo + hi) // 2
        hi, lo = (mid, lo) if fits(mid) else (hi, mid)
    return hi


# how the paired stage asks for rounds (the option with its value, its name) and widens a
# tolerance; gpuperf ab's (AB_ROUNDS): one advice, each tool's own options
STAGE_ROUNDS = ("--gpuperf-paired-rounds={n}{cost}, --gpuperf-paired-budget",
                "--gpuperf-paired-rounds", "@pytest.mark.gpuperf(tolerance=...)")
AB_ROUNDS = ("--rounds {n}{cost}", "--rounds", "--tolerance")


def settle_advice(fig: PairedFigure, tolerance: float, confidence: float,
                  round_s: float | None = None, more: int = 0,
                  most: int | None = None, asked: tuple[str, str, str] = STAGE_ROUNDS,
                  ) -> str:  # fmt: skip
    """What would settle a figure left inconclusive on paired rounds, in words, the one
    advice of the paired stage and gpuperf ab (`asked`: how each asks for rounds,
    STAGE_ROUNDS or AB_ROUNDS): its rounds' spread, whether its level is set each time the
    test runs (the base build's rounds, the same code each time, spread far more than a
    round's own interval), the rounds that would narrow it to half the tolerance and the
    option that buys them (a second look adds `more` times the asked; `most`, the most that
    option takes), and its test's time a round of both builds (`round_s`, where known). ""
    for a figure without two usable rounds."""
    if not fig.usable():
        return ""
    n, sd = len(fig.base), statistics.stdev(fig.diffs())
    tips = [f"its paired difference varies ±{math.expm1(sd) * 100:.1f}% a round (sd over "
            f"{n} rounds)"]  # fmt: skip
    base_sd = statistics.stdev(math.log(b) for b in fig.base)
    own = [w for w in fig.within if w > 0]  # 0: a round that recorded no interval
    within = statistics.median(own) if own else None
    if within is not None and base_sd > max(LEVEL_RATIO * within, math.log1p(tolerance) / 4):
        tips.append(
            f"the base build's own rounds spread ±{math.expm1(base_sd) * 100:.1f}% where a "
            f"round's own interval is ±{within * 100:.2g}%: its level is set each time the "
            "test runs (where its tensors land in memory, what they hold), not by the code, "
            "so more rounds narrow it and longer ones do not"
        )
    r = rounds_to_settle(sd * sd, confidence, tolerance)
    if r is None:
        tips.append(f"not even {SETTLE_CAP} paired rounds would narrow it to half the tolerance")
    else:
        cost = f"; its test takes {round_s:.1f} s a round of both builds" if round_s else ""
        n = max(2, math.ceil(r / (1 + more)))  # the second look adds `more` times these
        how = asked[0].format(n=n, cost=cost)
        if most is not None and n > most:
            how = f"more than the stage measures: {asked[1]} is at most {most}"
        tips.append(f"about {r} paired rounds would narrow its interval to half the tolerance "
                    f"({how})")  # fmt: skip
    tips.append(f"or widen this benchmark's tolerance ({asked[2]})")
    return "; ".join(tips)

"""Pure statistics for timing samples: no I/O, no torch, no numpy.

The centre of a timing distribution is its median (robust to the occasional preempted
sample); its uncertainty is the distribution-free confidence interval of the median from
order statistics (the binomial method), so no normality is assumed. The stopping rule asks
for that interval to be narrow, in the spirit of nvbench's noise target.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


def median(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("median of no samples")
    return statistics.median(xs)


def quartiles(sorted_xs: Sequence[float]) -> tuple[float, float]:
    """Lower and upper quartiles by linear interpolation (numpy's default; statistics'
    'inclusive' method); one sample is its own quartiles."""
    if not sorted_xs:
        raise ValueError("quartiles of no samples")
    if len(sorted_xs) == 1:
        return sorted_xs[0], sorted_xs[0]
    q1, _, q3 = statistics.quantiles(sorted_xs, n=4, method="inclusive")
    return q1, q3


@lru_cache(maxsize=4096)
def median_ci_ranks(n: int, confidence: float) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the order statistics bounding the median's CI.

    The interval [x_(lo), x_(hi)] covers the population median with probability at least
    `confidence`, for any continuous distribution. None when n is too small for that.
    """
    if n < 1:
        return None
    alpha = 1 - confidence
    # k: the number of i with P(X <= i) <= alpha/2 for X ~ Binomial(n, 1/2), i.e. the
    # quantile function at alpha/2 (the interval is [x_(k), x_(n-k+1)], 1-based)
    from scipy.special import bdtr, bdtrik  # the binomial CDF and its inverse (scipy.stats
    # would add most of a second of import to the first measurement)

    k = max(0, math.floor(bdtrik(alpha / 2, n, 0.5)))  # continuous inverse: k is next to it
    while k <= n and bdtr(k, n, 0.5) <= alpha / 2:
        k += 1
    while k > 0 and bdtr(k - 1, n, 0.5) > alpha / 2:
        k -= 1
    if k < 1:
        return None
    return k - 1, n - k


@dataclass(frozen=True)
class Summary:
    """Summary of timing samples (seconds per call)."""

    n: int
    median: float
    ci_low: float  # confidence interval of the median
    ci_high: float
    confidence: float
    ci_exact: bool  # False when n was too small: the interval is then [min, max]
    q1: float
    q3: float
    mean: float
    stdev: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        return self.iqr / self.median if self.median else math.inf

    @property
    def rel_ci_halfwidth(self) -> float:
        """Largest distance from the median to a CI bound, relative to the median."""
        if self.median == 0:
            return 0.0 if self.ci_high == self.ci_low else math.inf
        return max(self.median - self.ci_low, self.ci_high - self.median) / self.median


def summarize(samples: Sequence[float], confidence: float = 0.95) -> Summary:
    if not samples:
        raise ValueError("cannot summarize zero samples")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    s = sorted(float(x) for x in samples)
    if any(math.isnan(x) or math.isinf(x) for x in s):
        raise ValueError("samples contain NaN or infinity")
    n = len(s)
    med = median(s)
    ranks = median_ci_ranks(n, confidence)
    if ranks is None:
        lo, hi, exact = s[0], s[-1], False
    else:
        lo, hi, exact = s[ranks[0]], s[ranks[1]], True
    mean = math.fsum(s) / n
    var = math.fsum((x - mean) ** 2 for x in s) / (n - 1) if n > 1 else 0.0
    q1, q3 = quartiles(s)
    return Summary(
        n=n,
        median=med,
        ci_low=min(lo, med),
        ci_high=max(hi, med),
        confidence=confidence,
        ci_exact=exact,
        q1=q1,
        q3=q3,
        mean=mean,
        stdev=math.sqrt(var),
        min=s[0],
        max=s[-1],
    )


# ------------------------------------------------------------------------ stopping rule


@dataclass(frozen=True)
class StopRule:
    """When to stop sampling one benchmark.

    Stop when at least `min_samples` samples and `min_time` seconds were taken and the
    confidence interval of the median is within `target` (relative half-width); or when
    the noise makes the target unreachable within the budget (the projected time to reach
    it exceeds `max_time` by `hopeless_factor`); or at `max_time` / `max_samples`.
    """

    min_samples: int = 10
    min_time: float = 0.5
    max_time: float = 10.0
    target: float = 0.005
    confidence: float = 0.95
    max_samples: int = 100_000
    hopeless_factor: float = 4.0

    def __post_init__(self) -> None:
        problems = []
        if self.min_samples < 1:
            problems.append(f"min_samples must be >= 1, got {self.min_samples!r}")
        if self.min_time < 0:
            problems.append(f"min_time must be >= 0, got {self.min_time!r}")
        if not self.max_time > 0:
            problems.append(f"max_time must be > 0, got {self.max_time!r}")
        if not self.target > 0:
            problems.append(f"target must be > 0, got {self.target!r}")
        if not 0 < self.confidence < 1:
            problems.append(f"confidence must be in (0, 1), got {self.confidence!r}")
        if self.max_samples < self.min_samples:
            problems.append("max_samples must be >= min_samples")
        if problems:
            raise ValueError("; ".join(problems))


NOISE_MIN_SAMPLES = 30


@dataclass(frozen=True)
class StopDecision:
    """What the stopping rule (`stop_decision`) says after a sample."""

    stop: bool
    reason: str  # converged | noise-limited | budget | max-samples | "" (go on)
    rel_ci: float


def stop_decision(samples: Sequence[float], elapsed: float, rule: StopRule) -> StopDecision:
    """The measurement's stopping rule: whether to stop sampling after `samples`, taken in
    `elapsed` seconds, under `rule`, and why (the verdict rule is judging/verdict.decide)."""
    n = len(samples)
    if n == 0:
        over = elapsed >= rule.max_time
        return StopDecision(over, "budget" if over else "", math.inf)
    summ = summarize(samples, rule.confidence)
    rel = summ.rel_ci_halfwidth if summ.ci_exact else math.inf
    if summ.median == 0 and summ.max == 0:
        rel = 0.0
    enough = n >= rule.min_samples and elapsed >= rule.min_time
    if enough and rel <= rule.target:
        return StopDecision(True, "converged", rel)
    if n >= rule.max_samples:
        return StopDecision(True, "max-samples", rel)
    overrun = n >= rule.min_samples and elapsed * (n + 1) / n > rule.max_time
    if elapsed >= rule.max_time or overrun:
        return StopDecision(True, "budget", rel)  # spent, or the next sample would overrun it
    # giving up on the target needs a noise estimate worth trusting: not from fewer than
    # NOISE_MIN_SAMPLES samples (10 samples of an H200 under power capping stopped with a
    # +-6% interval of the median, where 30 would have narrowed it several-fold)
    if enough and n >= NOISE_MIN_SAMPLES and math.isfinite(rel) and rel > 0:
        needed_n = n * (rel / rule.target) ** 2
        projected = elapsed / n * needed_n
        if projected > rule.max_time * rule.hopeless_factor:
            return StopDecision(True, "noise-limited", rel)
    return StopDecision(False, "", rel)

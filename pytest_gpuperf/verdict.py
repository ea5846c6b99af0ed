"""Baseline vs current -> a verdict. Pure: numbers in, a frozen Verdict out.

A change counts as a regression only when it is both larger than the tolerance and
statistically clear (in the spirit of asv: a ratio threshold AND a significance test).
The uncertainty of the change combines the current session's own interval with the
between-session variation recorded in the baseline's history of session medians, because
a new session differs from the last ones by that much even when nothing changed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

REGRESSED = "regressed"
IMPROVED = "improved"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"
NEW = "new"
MISSING = "missing"
INCOMPARABLE = "incomparable"
FAILED = "failed"  # the benchmark itself failed (e.g. out of memory) where a baseline exists

# worst first, for the session summary
SEVERITY = {
    REGRESSED: 0,
    FAILED: 1,
    INCONCLUSIVE: 2,
    INCOMPARABLE: 3,
    MISSING: 4,
    NEW: 5,
    UNCHANGED: 6,
    IMPROVED: 7,
}

Z_TWO_SIDED_95 = 1.959963984540054
Z_TWO_SIDED_99 = 2.5758293035489004

# Two-sided 99% quantiles of Student's t by degrees of freedom (standard tables): a spread
# estimated from k baseline sessions is itself uncertain, the more so the fewer they are.
T99 = {
    1: 63.657,
    2: 9.925,
    3: 5.841,
    4: 4.604,
    5: 4.032,
    6: 3.707,
    7: 3.499,
    8: 3.355,
    9: 3.250,
    10: 3.169,
    12: 3.055,
    15: 2.947,
    20: 2.845,
    30: 2.750,
    60: 2.660,
}


def t99(df: int) -> float:
    """Two-sided 99% quantile of Student's t: the tabulated value at the largest tabulated
    degrees of freedom not above `df` (conservative between entries)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return T99[max(d for d in T99 if d <= df)]


@dataclass(frozen=True)
class Current:
    """The current session's value of one metric: its median and 95% interval."""

    median: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Reference:
    """The baseline of one metric: medians of the last sessions, oldest first."""

    history: tuple[float, ...]

    @property
    def value(self) -> float:
        return statistics.median(self.history)

    @property
    def between_rel_sd(self) -> float | None:
        """Relative standard deviation of session medians; None with fewer than 2."""
        if len(self.history) < 2:
            return None
        ref = self.value
        return statistics.stdev(self.history) / ref if ref else None


@dataclass(frozen=True)
class Verdict:
    status: str
    change: float | None  # relative change of the metric's value, signed (+ = larger value)
    worse: float | None  # relative change in the bad direction (+ = worse), None if n/a
    uncertainty: float | None  # half-width of the change's confidence interval (relative)
    tolerance: float
    reason: str

    @property
    def failed(self) -> bool:
        return self.status == REGRESSED


def judge(
    current: Current,
    reference: Reference,
    *,
    higher_is_better: bool,
    tolerance: float,
    min_between_rel_sd: float = 0.0,
) -> Verdict:
    """Verdict for one metric, at 99% confidence: a regression must be clear, not likely.

    The change's uncertainty (relative half-width) is
    sqrt((z * s_cur)^2 + (t * s_bet)^2 * (1 + 1/k)): s_cur from the current interval,
    s_bet the relative sd of the k baseline session medians (a new session deviates from
    them by about s_bet, their median by about s_bet/sqrt(k)), z the normal and t Student's
    99% quantile with k-1 degrees of freedom (a spread from 3 sessions is a rough one).
    With fewer than 2 baseline sessions s_bet is unknown and `min_between_rel_sd` stands in.
    """
    if not (tolerance > 0 and math.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if not reference.history:
        return Verdict(NEW, None, None, None, tolerance, "no baseline")
    ref = reference.value
    values = (current.median, current.ci_low, current.ci_high, ref)
    if any(not math.isfinite(v) for v in values) or ref <= 0 or current.median < 0:
        return Verdict(INCONCLUSIVE, None, None, None, tolerance, "not a finite positive value")
    change = current.median / ref - 1
    worse = -change if higher_is_better else change
    half_ci = max(current.median - current.ci_low, current.ci_high - current.median)
    s_cur = half_ci / current.median / Z_TWO_SIDED_95 if current.median > 0 else 0.0
    s_bet = reference.between_rel_sd
    k = len(reference.history)
    t = t99(k - 1) if s_bet is not None else Z_TWO_SIDED_99
    if s_bet is None:
        s_bet, k = min_between_rel_sd, 1
    half = math.sqrt((Z_TWO_SIDED_99 * s_cur) ** 2 + (t * s_bet) ** 2 * (1 + 1 / k))
    if worse > tolerance and worse > half:
        return Verdict(
            REGRESSED, change, worse, half, tolerance, "beyond tolerance and significant"
        )
    if -worse > tolerance and -worse > half:
        return Verdict(IMPROVED, change, worse, half, tolerance, "beyond tolerance and significant")
    if half > tolerance or abs(worse) > tolerance:
        why = (
            f"the change's uncertainty ±{half * 100:.1f}% is wider than the tolerance "
            f"{tolerance * 100:.1f}%"
            if half > tolerance
            else f"the change is beyond the tolerance but within its uncertainty ±{half * 100:.1f}%"
        )
        return Verdict(INCONCLUSIVE, change, worse, half, tolerance, why)
    return Verdict(UNCHANGED, change, worse, half, tolerance, "within tolerance")


def what_would_settle(v: Verdict, history_len: int) -> str:
    """Advice for an inconclusive verdict."""
    if v.status != INCONCLUSIVE:
        return ""
    tips = []
    if history_len < 3:
        tips.append(f"save more baseline sessions ({history_len} so far; 3 or more)")
    tips.append(
        "measure longer (--gpuperf-max-time) or more stably (a larger batch, a "
        "GPU-bound configuration, cuda_graph=True)"
    )
    if v.uncertainty is not None and v.uncertainty > v.tolerance:
        tips.append(f"or widen this benchmark's tolerance above ±{v.uncertainty * 100:.1f}%")
    return "; ".join(tips)


def relative_change_text(v: Verdict) -> str:
    if v.change is None:
        return "-"
    unc = f" ±{v.uncertainty * 100:.2f}%" if v.uncertainty is not None else ""
    return f"{v.change * 100:+.2f}%{unc}"


def order(statuses: Sequence[str]) -> list[int]:
    return sorted(range(len(statuses)), key=lambda i: SEVERITY.get(statuses[i], 99))

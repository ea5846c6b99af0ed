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

from ..baseline.history import HISTORY
from ..core.verdict import Rule, Status, Verdict, amend, make

REGRESSED = Status.REGRESSED
IMPROVED = Status.IMPROVED
CHANGED = (REGRESSED, IMPROVED)  # the verdicts that say the figure moved
UNCHANGED = Status.UNCHANGED
INCONCLUSIVE = Status.INCONCLUSIVE
NEW = Status.NEW
MISSING = Status.MISSING
INCOMPARABLE = Status.INCOMPARABLE
FAILED = Status.FAILED  # the benchmark itself failed (e.g. out of memory) where a baseline exists
INFO = Status.INFO  # an informational figure (compile time, gate=False): reported, never judged
INCONCLUSIVE_POWER = Status.POWER_STATE  # a change in time that the SM clock explains

# worst first, for the session summary; power-state beside inconclusive: not a
# regression, worth reading
SEVERITY: dict[str, int] = {
    REGRESSED: 0, FAILED: 1, INCONCLUSIVE: 2, INCOMPARABLE: 3, MISSING: 4, NEW: 5,
    UNCHANGED: 6, IMPROVED: 7, INFO: 8, INCONCLUSIVE_POWER: 2,
}  # fmt: skip

LADDER = Rule.LADDER
CLOCKED = Rule.CLOCKED
CONFIDENCE = 0.99  # of one metric's verdict, before the run-wide false-alarm budget


def z_quantile(confidence: float) -> float:
    """Two-sided quantile of the standard normal at this confidence."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def t_quantile(confidence: float, df: int) -> float:
    """Two-sided quantile of Student's t with `df` degrees of freedom (scipy.special, loaded
    only when a verdict needs it: about 0.25 s, where scipy.stats would cost 0.7 s)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    from scipy.special import stdtrit

    return float(stdtrit(df, 1 - (1 - confidence) / 2))


def per_metric_confidence(run_false_alarm: float, metrics: int) -> float:
    """The confidence each of `metrics` verdicts needs so that the whole run raises a false
    alarm with probability at most `run_false_alarm` (Bonferroni: valid whatever the
    dependence between metrics, and decidable per test as pytest runs, unlike Holm's
    step-down, which needs every p-value of the run first). Never below CONFIDENCE."""
    if not 0 < run_false_alarm < 1:
        raise ValueError(f"the run's false-alarm rate must be in (0, 1), got {run_false_alarm}")
    return max(CONFIDENCE, 1 - run_false_alarm / max(1, metrics))


def quantile(confidence: float, df: float) -> float:
    """Student's t at `confidence` with `df` degrees of freedom; the normal's for an
    infinite (or huge) df."""
    if not math.isfinite(df) or df > 1e6:
        return z_quantile(confidence)
    return t_quantile(confidence, max(1, round(df)))


def decide(
    d: float,
    *,
    higher_is_better: bool,
    s_cur: float,
    var: float,
    df: float,
    k: int,
    tolerance: float,
    confidence: float,
    extra_var: float = 0.0,
) -> Verdict:
    """THE verdict rule, on the log of the ratio now / reference (`d`).

    Its uncertainty (half-width, log units) is sqrt(t^2 (var / k + extra_var) +
    max(t^2 var, (z s_cur)^2)): var the variance of one session's median around the
    reference, which is the mean of k sessions; extra_var what estimating this run's class
    offset adds; s_cur the current session's own relative standard error, z and t (df
    degrees of freedom) at `confidence`. The current session counts once: var is already
    the spread of whole sessions' medians, sampling noise included, so its own interval
    matters only where it is wider than that (a noisier session than the baseline's).
    A regression must be beyond the tolerance AND beyond the half-width (a ratio threshold
    and a significance test, as asv). UNCHANGED means the whole interval lies within the
    tolerance; otherwise the verdict is inconclusive."""
    if not (tolerance > 0 and math.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if not all(math.isfinite(x) for x in (d, s_cur, var, extra_var)) or var < 0 or s_cur < 0:
        return make(INCONCLUSIVE, None, None, None, tolerance, "not a finite value", rule=LADDER)
    z = z_quantile(confidence)
    t = quantile(confidence, df)
    # hypot: a current interval near a float's limit gives an infinite half-width, never
    # an OverflowError
    ref_part = t * math.sqrt(var / max(1, k) + extra_var)
    half = math.hypot(ref_part, max(t * math.sqrt(var), z * s_cur))
    change = ratio_change(d)
    worse = -change if higher_is_better else change
    return _status(change, worse, -d if higher_is_better else d, half, tolerance)


def status_of(d: float, half: float, *, higher_is_better: bool, tolerance: float,
              stage: str = "paired stage") -> Verdict:  # fmt: skip
    """The verdict ladder on a log ratio now / reference (`d`) whose interval's half-width
    (log units) is already known: a paired stage's, whose interval comes from its rounds."""
    change = ratio_change(d)
    worse = -change if higher_is_better else change
    return _status(change, worse, -d if higher_is_better else d, half, tolerance, stage)


def _status(
    change: float, worse: float, worse_log: float, half: float, tolerance: float,
    stage: str = "stage 1",
) -> Verdict:
    """The verdict of a change and its half-width (log units) against the tolerance, all
    compared in log units, so that a halving and a doubling are equally far from nothing
    (a throughput's relative change in the bad direction can never exceed 100%, a
    latency's can; compared as relative changes, a throughput could never regress beyond
    an interval wider than 100%)."""
    mde = max(tolerance, half)
    tol = math.log1p(tolerance)

    def verdict(status: str, why: str) -> Verdict:
        return make(status, change, worse, half, tolerance, why, mde=mde, rule=LADDER,
                    stage=stage, figures={"change": change, "uncertainty": half,
                                          "tolerance": tolerance})  # fmt: skip

    if worse_log > tol and worse_log > half:
        return verdict(REGRESSED, "beyond tolerance and significant")
    if -worse_log > tol and -worse_log > half:
        return verdict(IMPROVED, "beyond tolerance and significant")
    if half > tol or abs(worse_log) > tol:
        why = (
            f"the change's uncertainty ±{half * 100:.1f}% is wider than the tolerance "
            f"{tolerance * 100:.1f}%"
            if half > tol
            else f"the change is beyond the tolerance but within its uncertainty ±{half * 100:.1f}%"
        )
        return verdict(INCONCLUSIVE, why)
    if abs(worse_log) + half > tol:
        why = (
            f"within the tolerance {tolerance * 100:.1f}%, but its interval "
            f"({worse * 100:+.2f}% ±{half * 100:.2f}% worse) reaches beyond it"
        )
        return verdict(INCONCLUSIVE, why)
    return verdict(UNCHANGED, "within tolerance")


def combine_clocked(
    time_v: Verdict,
    cycle_v: Verdict,
    base_clock: float | None,
    cur_clock: float | None,
    clocks: str = "",
) -> Verdict:
    """The verdict of compute-bound work: a regression must hold in time AND in cycles
    (time x SM clock), as nvbench's compare script asks. The uncertainty is the cycle
    verdict's: its between-session spread is the code's, not the card's power state.
    A change in time that the clock explains is reported as such, never as a regression.
    A time whose whole interval lies inside the tolerance is UNCHANGED with its own
    interval even where the cycles' is too wide to say: neither of the verdicts that need
    time AND cycles can hold (a per-clock interval can be far wider than the time's:
    docs/evidence/paired-stage-notes.md).
    `clocks`: the text naming the clocks where no one pair of them applies (a class line)."""
    tol = time_v.tolerance
    clocks = clocks or (
        f"SM clock median {cur_clock:.0f} vs {base_clock:.0f} MHz"
        if base_clock and cur_clock
        else "SM clock unknown"
    )
    per_cycle = relative_change_text(cycle_v)
    if time_v.worse is None or cycle_v.worse is None:
        return cycle_v if time_v.worse is None else time_v
    slower_in_time = time_v.worse > tol
    base = make(
        UNCHANGED,
        time_v.change,
        time_v.worse,
        cycle_v.uncertainty,
        tol,
        "",
        mde=cycle_v.mde,
        sessions_needed=cycle_v.sessions_needed,
        basis=cycle_v.basis + " (per SM clock cycle)" if cycle_v.basis else "",
        per_cycle=str(cycle_v.status),
        per_cycle_worse=cycle_v.worse,
        trail=time_v.trail,  # the time's ladder; this rule's step follows
    )
    cycles = {"per clock cycle": str(cycle_v.status), "per cycle worse": cycle_v.worse,
              "per cycle uncertainty": cycle_v.uncertainty}  # fmt: skip
    if cycle_v.status == REGRESSED and slower_in_time:
        why = f"slower in time and per clock cycle ({per_cycle}); {clocks}"
        return amend(base, CLOCKED, figures=cycles, status=REGRESSED, reason=why)
    if slower_in_time and cycle_v.status in (UNCHANGED, IMPROVED):
        why = f"power state differs: {clocks}; per clock cycle {per_cycle}, {cycle_v.status}"
        return amend(base, CLOCKED, figures=cycles, status=INCONCLUSIVE_POWER, reason=why)
    if cycle_v.status == REGRESSED:
        why = f"slower per clock cycle ({per_cycle}) but not in time: {clocks}"
        return amend(base, CLOCKED, figures=cycles, status=INCONCLUSIVE, reason=why)
    if cycle_v.status == IMPROVED and -time_v.worse > tol:
        why = f"faster in time and per clock cycle; {clocks}"
        return amend(base, CLOCKED, figures=cycles, status=IMPROVED, reason=why)
    if time_v.status == UNCHANGED and cycle_v.status == INCONCLUSIVE:
        # the time's whole interval inside the tolerance: neither slower nor faster in time,
        # so neither of the two that need time AND cycles can hold, whatever the cycles say
        why = (f"within the tolerance in time, its whole interval inside it, so neither "
               f"slower nor faster whatever its clock (per clock cycle {per_cycle}, "
               f"inconclusive; {clocks})")  # fmt: skip
        return amend(base, CLOCKED, figures=cycles, status=UNCHANGED, reason=why,
                     uncertainty=time_v.uncertainty, mde=time_v.mde,
                     sessions_needed=time_v.sessions_needed,
                     basis=time_v.basis + " (in time)" if time_v.basis else "")  # fmt: skip
    status = cycle_v.status if cycle_v.status in (UNCHANGED, INCONCLUSIVE) else UNCHANGED
    why = f"{cycle_v.reason} (judged per clock cycle; {clocks})"
    return amend(base, CLOCKED, figures=cycles, status=status, reason=why)


def ratio_change(log_ratio: float) -> float:
    """exp(x) - 1, infinite where it overflows a float (an interval as wide as that)."""
    return math.expm1(log_ratio) if log_ratio < 700 else math.inf


def paired(
    base: Sequence[float],
    head: Sequence[float],
    *,
    higher_is_better: bool,
    tolerance: float,
    confidence: float = CONFIDENCE,
) -> Verdict:
    """A/B verdict from rounds run back to back on one GPU: round i measured `base[i]` and
    `head[i]`. The statistic is the mean log ratio over rounds with Student's t interval:
    swapping base and head mirrors the verdict, and scaling every figure changes nothing."""
    if len(base) != len(head):
        raise ValueError(f"paired rounds differ in number: {len(base)} base, {len(head)} head")
    if not (tolerance > 0 and math.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if any(not (math.isfinite(x) and x > 0) for x in (*base, *head)):
        return make(INCONCLUSIVE, None, None, None, tolerance, "not a finite positive value",
                    rule=LADDER, stage="gpuperf ab")  # fmt: skip
    n = len(base)
    if n < 2:
        return make(INCONCLUSIVE, None, None, None, tolerance, f"{n} round(s): 2 needed",
                    rule=LADDER, stage="gpuperf ab")  # fmt: skip
    d = [math.log(h / b) for b, h in zip(base, head, strict=True)]
    # the half-width in log units, as the judge's stages store it (2 rounds that differ 6x
    # at 99.9%: t(1) = 637 gives a half-width near 7, finite here, infinite as exp(h) - 1)
    half_log = t_quantile(confidence, n - 1) * statistics.stdev(d) / math.sqrt(n)
    v = status_of(statistics.fmean(d), half_log, higher_is_better=higher_is_better,
                  tolerance=tolerance, stage="gpuperf ab")  # fmt: skip
    return amend(v, None, reason=f"{v.reason} ({n} paired rounds)")


def what_would_settle(v: Verdict, history_len: int) -> str:
    """Advice for an inconclusive verdict."""
    if v.status != INCONCLUSIVE:
        return ""
    tips = []
    if v.spread is not None and v.spread > v.tolerance:  # more of the same will not help
        tips.append(
            f"the baseline's sessions disagree (relative sd {v.spread * 100:.1f}%, over the "
            f"tolerance {v.tolerance * 100:.1f}%): find what differed between them (another "
            "GPU or power state, other tests' memory in the same process) and save it anew"
        )
    elif v.sessions_needed is not None:
        tips.append(
            f"save {v.sessions_needed} more baseline session(s) ({history_len} so far), or "
            f"run it A/B against the base commit (gpuperf ab)"
        )
    elif history_len < 3:
        tips.append(f"save more baseline sessions ({history_len} so far; 3 or more)")
    elif history_len < HISTORY:
        tips.append(
            f"save more baseline sessions ({history_len} so far; the newest "
            f"{HISTORY} are judged): an interval from the sessions' spread has few "
            "degrees of freedom and narrows with each one"
        )
    tips.append(
        "measure longer (--gpuperf-max-time) or more stably (a larger batch, a "
        "GPU-bound configuration, cuda_graph=True)"
    )
    if v.uncertainty is not None and v.uncertainty > v.tolerance:
        tips.append(f"or widen this benchmark's tolerance above ±{v.uncertainty * 100:.1f}%")
    return "; ".join(tips)


def interval_text(change: float | None, half: float | None) -> str:
    """The interval printed after a relative `change` whose log ratio has the half-width
    `half`: " ±2.10%", or its bounds, " [-52.63%, -4.29%]", where change ± half would
    misstate one by more than a quarter of `half` and half a percentage point (a change
    beyond about 25% or an interval beyond about 50%: the interval is symmetric in log
    units, lopsided in relative ones; a break-it pass found "-32.67% ±35.17%" printed for a
    REGRESSED whose bounds are -52.63% and -4.29%). "" without a half-width."""
    if half is None:
        return ""
    bounds = lopsided_bounds(change, half)
    if bounds is None:
        return f" ±{half * 100:.2f}%"
    return f" [{_bound(bounds[0])}, {_bound(bounds[1])}]"


def lopsided_bounds(change: float | None, half: float) -> tuple[float, float] | None:
    """The relative bounds of `change`'s interval (`half` its log half-width) where change ±
    half would misstate one by more than a quarter of `half` and half a percentage point
    (`interval_text`); None where ± states them well enough, or no bounds can be had."""
    if change is None or not (math.isfinite(change) and change > -1 and math.isfinite(half)):
        return None
    d = math.log1p(change)
    lo, hi = ratio_change(d - half), ratio_change(d + half)
    if max(abs(lo - (change - half)), abs(hi - (change + half))) <= max(0.25 * half, 0.005):
        return None
    return lo, hi


def _bound(x: float, sign: str = "+") -> str:
    """A relative bound in percent: two decimals, three digits past 10,000% (an interval
    as wide as that says little, and 30 digits of it say less)."""
    return f"{x * 100:{sign}.3g}%" if abs(x) >= 100 else f"{x * 100:{sign}.2f}%"


def worse_text(
    worse: float | None, uncertainty: float | None = None, change: float | None = None
) -> str:
    """A change in the bad direction in words ("2.10% ±0.50% slower"), for figures whose
    directions differ (a class of tokens/s and latencies) or that are compared per cycle;
    with its `change` (worse is it, or it negated), a lopsided interval is printed by its
    bounds in the bad direction ("32.67% [4.29%, 52.63%] slower": `interval_text`)."""
    if worse is None:
        return "no figure"
    unc = f" ±{uncertainty * 100:.2f}%" if uncertainty is not None else ""
    bounds = lopsided_bounds(change, uncertainty) if uncertainty is not None else None
    if change is not None and bounds is not None:
        sign = 1 if abs(worse - change) <= abs(worse + change) else -1
        sign *= 1 if worse > 0 else -1  # the bounds in the word's direction, as the figure
        lo, hi = sorted(sign * b for b in bounds)
        unc = f" [{_bound(lo, '')}, {_bound(hi, '')}]"
    return f"{abs(worse) * 100:.2f}%{unc} {'slower' if worse > 0 else 'faster'}"


def relative_change_text(v: Verdict) -> str:
    if v.change is None:
        return "-"
    return f"{v.change * 100:+.2f}%{interval_text(v.change, v.uncertainty)}"

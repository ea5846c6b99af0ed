"""The base check: a build of the baseline's commit may judge code (the paired stage, later
`gpuperf bisect`) only where it reproduces the level the baseline saved at that commit.

Both builds of the paired stage run on this machine, under this run's environment and with
what its checkout holds: a slowdown from outside the repository's code (an environment
variable, a dependency upgraded, a config file read by an absolute path) slows both, and a
build the base worktree lacks (a gitignored in-place extension, a submodule) slows or speeds
the base alone. Either way the rounds compare the head with something the baseline never
measured. The baseline's own sessions at that commit say what the base should measure, so
the base's median over its rounds is compared with them first. Pure: numbers in, a verdict
dict out.

The rule, in "better" space (log of a throughput, -log of a latency): the base reproduces
when |log(base median) - mean(log(session values at the commit))| is at most

    log(1 + tolerance) + Z * s * sqrt(1 + 1/k)          (a figure the first stage left undecided)
    max(log(1 + tolerance), Z * s * sqrt(1 + 1/k))      (one it found changed, checked)

with k the sessions at the commit, Z the two-sided normal quantile at the per-figure
confidence (verdict.CONFIDENCE, 99%: 2.58) and s the larger of the figure's own spread
between its sessions at the commit and its class's spread between machines (MACHINE_SD):
the base is one more session, on another machine than some of them. For an undecided
figure the tolerance is added: an offset the gate would call unchanged between machines
changes no verdict the rounds may reach. A regression the first stage found and confirmed
is taken back only by a base within the larger of the two. A base off by more than their
sum measured what the head measured: the regression stands, outside the code. Between the
two, a base off the way the change went is not told from this machine: inconclusive (three
sessions that agreed by chance make a machine's offset look like a regression; in the
project's simulator most of the A/A false alarms left were such figures). A base off the
other way explains none of the change, and the first stage's verdict stands.
What it refuses on recorded runs: docs/evidence/paired-stage-notes.md.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..baseline.history import window
from ..core.figures import BANDWIDTH, CLOCK, COMPUTE, KERNEL_TIME, LAUNCH, MODEL
from ..core.verdict import Rule, Verdict, amend
from ..judging.noise import LAUNCH_FLOOR, better
from ..judging.verdict import CHANGED, CONFIDENCE, INCONCLUSIVE, REGRESSED, z_quantile

Z = z_quantile(CONFIDENCE)
# One figure's spread between machines (one session about its level, relative sd), by class:
# a wall-time class's session offset and its residual, as gate-sim fitted them to the H200
# sessions (../shared/gate-sim/noise_model.json; DESIGN.md "A gate needs a noise model"):
# model steps 0.71% / 0.21%, bandwidth 0.36% / 0.44%, compute 0.50% / 1.1%, combined; the
# per-clock figures are compute-bound work's. The GPU's kernel time moves with the card's
# state: an unchanged build's read 4-10% off on other H200s in 6 of 6 runs (stage._leave),
# so 10% is taken as its 99% band. Launch-bound wall time: its floor between processes
# (noise.LAUNCH_FLOOR). Another class: compute's, the widest of the wall-time classes.
MACHINE_SD = {
    MODEL: math.hypot(0.0071, 0.0021),
    BANDWIDTH: math.hypot(0.0036, 0.0044),
    COMPUTE: math.hypot(0.0050, 0.011),
    CLOCK: math.hypot(0.0050, 0.011),
    KERNEL_TIME: 0.10 / Z,
    LAUNCH: LAUNCH_FLOOR,
}
WHY = "environment, dependency, build or install"


@dataclass(frozen=True)
class Refusal:
    """A figure whose base build did not reproduce its sessions at the commit."""

    key: str
    metric: str
    off: float  # relative: the base's median against the sessions' level (better space)
    bound: float  # relative: what the rule allowed
    sessions: int
    commit: str
    outside: bool = True  # beyond the tolerance and the machines' band together (above)

    def said(self) -> str:
        off = (f"the base build measured {100 * self.off:+.2f}% off its own {self.sessions} "
               f"session(s) at {self.commit[:12]}")
        if not self.outside:
            return (f"{off} (more than the tolerance or the machines' band alone, within the "
                    f"±{100 * self.bound:.2f}% the two together allow: this machine, or a "
                    "change outside the code)")  # fmt: skip
        return (f"{off} (beyond the ±{100 * self.bound:.2f}% machines and the tolerance "
                f"allow): a change outside the code ({WHY})")  # fmt: skip

    def record(self) -> dict[str, Any]:
        return {"off": self.off, "bound": self.bound, "sessions": self.sessions,
                "commit": self.commit, **({} if self.outside else {"outside": False})}  # fmt: skip


def at_commit(base_m: dict[str, Any], entry: dict[str, Any], commit: str) -> list[float]:
    """The figure's saved values of the sessions at `commit` (its judged window). An item
    that recorded no commit is the entry's where it is the newest (older files)."""
    items = [h for h in window(base_m) if isinstance(h, dict)]
    out = [h.get("median") for h in items if h.get("commit") == commit]
    if not out and items and not any(h.get("commit") for h in items) and (
            entry.get("commit") == commit):  # fmt: skip
        out = [items[-1].get("median")]
    return [float(v) for v in out if isinstance(v, int | float) and v > 0 and math.isfinite(v)]


def check(key: str, metric: str, base_median: float, entry: dict[str, Any], commit: str,
          cls: str, tolerance: float, checked: bool = False) -> Refusal | None:  # fmt: skip
    """The Refusal of figure `key`/`metric` whose base rounds' median is `base_median`,
    against the entry's sessions at `commit`; None where it reproduces (the module's rule)
    or where nothing was saved at that commit to check it with. `checked`: the first stage
    found the figure changed (confirmed), and the rounds may take that back only where the
    base is within the larger of the tolerance and the machines' band, not their sum; a
    base off by more than the sum explains the head's change (`outside`), one in between
    may (`held`)."""
    base_m = ((entry or {}).get("metrics") or {}).get(metric)
    if not isinstance(base_m, dict) or not (base_median > 0 and math.isfinite(base_median)):
        return None
    values = at_commit(base_m, entry, commit)
    if not values:
        return None
    higher = base_m.get("direction") != "lower"
    level = statistics.fmean(better(v, higher) for v in values)
    off = better(base_median, higher) - level
    own = [better(v, higher) for v in values]  # the sessions at the commit alone: another
    # commit's level says nothing of this build's (a code change between them is no noise)
    s = max(MACHINE_SD.get(cls, MACHINE_SD[COMPUTE]),
            statistics.stdev(own) if len(own) > 1 else 0.0)  # fmt: skip
    band = Z * s * math.sqrt(1 + 1 / len(values))
    sure = math.log1p(tolerance) + band
    if abs(off) <= (max(math.log1p(tolerance), band) if checked else sure):
        return None
    return Refusal(key, metric, math.expm1(off), math.expm1(sure), len(values), commit,
                   outside=abs(off) > sure)  # fmt: skip


def differences(saved: dict[str, Any], now: dict[str, Any]) -> str:
    """ "torch 2.10.0 -> 2.11.0, python 3.11 -> 3.12" for what the baseline's sessions
    recorded of their environment (baseline/history.environment, a
    pytest_gpuperf_environment hook's) and this run records differently; "" where none."""
    return ", ".join(f"{name} {saved[name]} -> {now[name]}" for name in sorted(saved)
                     if saved.get(name) is not None and now.get(name) is not None
                     and saved[name] != now[name])  # fmt: skip


BASE_CHECK = Rule.BASE_CHECK


def held(first: Verdict, paired: Mapping[str, Any], refusal: Refusal,
         agree: bool = False) -> Verdict:  # fmt: skip
    """The verdict of a figure the base build may not judge: the first stage's, as it
    stood (a regression stays a regression, now one outside the code; an undecided figure
    stays undecided), with the rounds' record and why the stage did not judge it. A change
    whose base was off the same way by less than the tolerance and the machines' band
    together is inconclusive: neither the code nor the environment is shown to have moved
    it, unless the rounds found the same change against that base (`agree`). A base off
    the other way explains none of it: the first stage's verdict stands."""
    said = f"{first.reason or first.status}; not judged by the paired stage: {refusal.said()}"
    status, tail = first.status, "; the first stage's verdict stands" + (
        " (a regression outside the code)" if first.status == REGRESSED else "")
    if not refusal.outside and first.status in CHANGED:
        if agree:
            tail = (f"; the first stage's verdict stands (the rounds found it {first.status} "
                    "against that base too)")
        elif (refusal.off < 0) == (first.status == REGRESSED):  # the base moved as the head
            status = INCONCLUSIVE
            tail = f": not told apart; the first stage's {first.status} is not borne out"
        else:
            tail = ("; the first stage's verdict stands (the base was off the other way, which "
                    "explains none of the change)")
    return amend(first, BASE_CHECK, "paired stage", figures=_figures(refusal), status=status,
                 paired={**paired, "base_check": refusal.record()}, reason=said + tail)


def judged(first: Verdict, new: Verdict, refusal: Refusal) -> Verdict:
    """The verdict of a figure whose base build did not reproduce its sessions: `held`
    (the first stage's), unless the rounds found the head worse than that base (REGRESSED,
    `new`): a base off its level cannot make the head measure worse beside it, so that
    verdict stands as before, its record saying how far the base was off (`base_off`)."""
    if new.status != REGRESSED:
        return held(first, new.paired or {}, refusal, agree=new.status == first.status)
    return amend(new, BASE_CHECK, "paired stage", figures=_figures(refusal),
                 paired={**(new.paired or {}), "base_off": refusal.record()},
                 reason=(f"{new.reason}; {refusal.said()}, and the head measured worse than "
                         "that base"))  # fmt: skip


def _figures(refusal: Refusal) -> dict[str, Any]:
    return {"base off": refusal.off, "bound": refusal.bound, "sessions": refusal.sessions}


def line(refused: list[Refusal], env_said: str, undecided: int = 0) -> str:
    """The stage line's words on the figures it refused ("" where none): how far the base
    was off, the recorded environment that differs, or that none does, and how many
    confirmed changes its middle band left inconclusive (`undecided`, held)."""
    if not refused:
        return ""
    worst = max(refused, key=lambda r: abs(r.off))
    differ = (f"recorded environment that differs: {env_said}" if env_said else
              "no recorded version differs (an environment variable, an unrecorded "
              "dependency, or a build the base worktree lacks: --gpuperf-paired-setup)")
    near = (f"{undecided} confirmed change(s) whose base was off their way by less than the "
            "tolerance and the machines' band together are inconclusive (this machine or the "
            "environment, not told apart); the first stage's other verdicts of those figures "
            if undecided else "the first stage's verdicts of those figures ")  # fmt: skip
    return (f"base check: {len(refused)} figure(s) not judged, {worst.said()}, "
            f"{worst.key.split('::')[-1]} {worst.metric}; {differ}; {near}stand, a "
            "regression as one outside the code")

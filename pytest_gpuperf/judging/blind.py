"""Where the gate was blind: the gated figures a judged run left undecided, each with one
typed reason (`Why`), the smallest change the run could have seen in it, and the one thing
to do; the figures the gate never decides by design (a launch-bound wall time beside its
kernel time, a derived figure) listed apart and never counted by --gpuperf-strict.

Pure: verdict dicts and baseline entries in, a frozen `Blindness` out. Every reason is
decided here, in `why_undecided`, from the figure's verdict, its result and its baseline
entry, so a typed verdict trail can later supply the same reasons without a second rule."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..baseline.history import HISTORY, since_restart
from ..core.verdict import Rule, Verdict
from .verdict import (
    CONFIDENCE,
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    INCONCLUSIVE_POWER,
    REGRESSED,
    UNCHANGED,
    z_quantile,
)

UNDECIDED = (INCONCLUSIVE, INCONCLUSIVE_POWER)  # a gated figure the run could not decide
JUDGED = (*UNDECIDED, UNCHANGED, REGRESSED, IMPROVED)  # judged against its history
PER_PROCESS_RATIO = 4.0  # between-session spread this many times the sessions' own: per process
# a verdict's reason when the paired stage left it out, in files written before the trail
PAIRED_LEFT = ("not re-measured by the paired stage", "not checked by the paired stage")


@dataclass(frozen=True)
class Why:
    """One reason a figure was not decided: its code (stable, in the results JSON), its
    words, the one thing to do, and whether the gate leaves such a figure undecided by
    design (listed, never counted by --gpuperf-strict)."""

    code: str
    words: str
    todo: str
    by_design: bool = False


WHYS = {w.code: w for w in (  # the order ties are broken in (the first wins)
    Why("busy-host", "busy host", "run it on an idle machine (a CPU figure measured beside "
        "other work decides nothing)"),
    Why("gpu-shared", "shared GPU", "run it on a GPU no other process uses"),
    Why("per-process", "a level that moves between sessions", "more sessions will not narrow "
        "it; larger work per call, gpuperf ab (both builds alternated) or another measure "
        "might (docs/writing-benchmarks.md)"),
    Why("not-paired", "priced out of the paired stage", "give the paired stage more time "
        "(--gpuperf-paired-budget), or run gpuperf ab on it"),
    Why("few-sessions", "too few sessions", "save more baseline sessions "
        "(--gpuperf-baseline=save, 3 or more, each in a fresh process)"),
    Why("power-state", "the SM clock explains the change", "run it where the clocks hold "
        "steady (the change follows the card's power state)"),
    Why("rounds-spread", "the paired rounds' spread", "give the paired stage more rounds "
        "(--gpuperf-paired-rounds, --gpuperf-paired-budget), or run gpuperf ab on it"),
    Why("spread", "baseline spread", "measure it more steadily (more work per call, "
        "--gpuperf-max-time) or widen its tolerance"),
    Why("base-off", "the base build off its own sessions", "find what differs outside the "
        "code (the paired stage's line names recorded versions; --gpuperf-paired-setup for "
        "a build the base worktree lacks), or where nothing does, save more baseline "
        "sessions"),
    Why("incomparable", "incomparable with its baseline", "re-save its sessions "
        "(gpuperf baseline accept --restart-incomparable, or --gpuperf-baseline=save)"),
    Why("missing", "no result this run", "run the benchmark (it was collected and skipped "
        "or produced no figure), or remove its baseline entry"),
    Why("launch-bound", "launch-bound wall time", "its GPU kernel time is the figure gated",
        by_design=True),
    Why("derived", "derived figure", "the figure it is derived from is judged",
        by_design=True),
)}  # fmt: skip


@dataclass(frozen=True)
class Blind:
    """One gated figure left undecided: its result key and metric, why (a WHYS code), the
    smallest change in the bad direction it could have seen (log units, as a verdict's
    `mde`; None: unknown), its tolerance, and what was measured for the reason ("")."""

    key: str
    metric: str
    why: str
    mde: float | None
    tolerance: float | None
    detail: str = ""

    @property
    def by_design(self) -> bool:
        return WHYS[self.why].by_design

    def line(self, said_todo: str | None = None) -> str:
        """The figure's own line under -v; its to-do where it is not `said_todo`."""
        mde = f"{self.mde * 100:.1f}%" if self.mde is not None else "-"
        tol = f"{self.tolerance * 100:.1f}%" if self.tolerance else "-"
        w = WHYS[self.why]
        said = f"{w.words}: {self.detail}" if self.detail else w.words
        todo = f"; not counted: {w.todo}" if w.by_design else f"; to do: {w.todo}"
        todo = "" if w.todo == said_todo else todo
        return f"  undecided: {self.key} {self.metric}: detects {mde} (tol. {tol}); {said}{todo}"


@dataclass(frozen=True)
class Blindness:
    """The gated figures of a run that its judgement left undecided (`figures`, counted
    and by design), of `gated` gated figures judged against a history."""

    gated: int
    figures: tuple[Blind, ...] = ()

    @property
    def counted(self) -> list[Blind]:
        """The undecided figures --gpuperf-strict fails a run on (none by design)."""
        return [f for f in self.figures if not f.by_design]

    def line(self, hint: str = "; -v lists each figure") -> str | None:
        """The run's one line, None where every gated figure was decided; `hint` ends it
        where a figure is counted (how to see each one)."""
        if not self.figures:
            return None
        counted, design = self.counted, [f for f in self.figures if f.by_design]
        of = self.gated - len(design)
        if counted:
            head = f"gpuperf: BLIND to {len(counted)} of {of} gated figure(s): {_seen(counted)}"
            why = Counter(f.why for f in counted)
            order = sorted(why, key=lambda c: (-why[c], list(WHYS).index(c)))  # commonest first
            head += "; why: " + ", ".join(f"{why[c]} {WHYS[c].words}" for c in order)
            head += f"; to do: {self.todo()}"
        else:
            head = f"gpuperf: every gated figure decided ({of} of {of})"
        if design:
            n = Counter(f.why for f in design)
            head += "; not decided by design, not counted: " + ", ".join(
                f"{n[c]} {WHYS[c].words}{'s' if n[c] > 1 else ''} ({WHYS[c].todo})"
                for c in WHYS if c in n)  # fmt: skip
        return head + (hint if counted else "")

    def todo(self) -> str | None:
        """The one thing to do: that of the commonest reason of the counted figures."""
        why = Counter(f.why for f in self.counted)
        if not why:
            return None
        return WHYS[min(why, key=lambda c: (-why[c], list(WHYS).index(c)))].todo

    def lines(self, verbosity: int = 0) -> list[str]:
        """The one line, and with -v each undecided figure's own."""
        line = self.line()
        if line is None:
            return []
        todo = self.todo()
        return [line, *(f.line(todo) for f in self.figures)] if verbosity > 0 else [line]

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line(), "gated": self.gated, "counted": len(self.counted),
                "figures": [asdict(f) for f in self.figures]}  # fmt: skip

    @classmethod
    def from_json(cls, d: Any) -> Blindness | None:
        """A results file's `blind` object (None where absent or not one of this form)."""
        try:
            figures = tuple(Blind(**f) for f in d["figures"] if f.get("why") in WHYS)
            return cls(int(d["gated"]), figures)
        except (TypeError, KeyError, ValueError, AttributeError):
            return None


def _seen(figures: list[Blind]) -> str:
    """The smallest changes the run could have seen in `figures`, as a range."""
    mdes = [f.mde for f in figures if f.mde is not None and math.isfinite(f.mde)]
    tols = sorted({round(f.tolerance * 100, 1) for f in figures if f.tolerance})
    tol = "/".join(f"{t:.1f}%" for t in tols) or "-"
    if not mdes:
        return f"the smallest change it could have seen unknown (tolerance {tol})"
    lo, hi = min(mdes) * 100, max(mdes) * 100
    rng = f"{lo:.1f}%" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}%-{hi:.1f}%"
    return f"the smallest change it could have seen {rng} (tolerance {tol})"


def blindness(results: Iterable[Any], entries: Mapping[str, Any],
              missing: Iterable[str] = ()) -> Blindness:  # fmt: skip
    """The undecided gated figures of judged `results` (their verdict dicts) against the
    baseline `entries` they were judged with; an incomparable figure, and each entry of
    `missing` (collected, with a baseline, and no result this run), are undecided too: a
    gate that did not see them did not pass them. New, informational and failed figures
    are not judged here."""
    gated, out = 0, []
    for r in results:
        for name, v in (r.verdicts or {}).items():
            status = v.status
            if status not in (*JUDGED, INCOMPARABLE):
                continue
            gated += 1
            if status == INCOMPARABLE:
                out.append(Blind(r.key, name, "incomparable", None, v.tolerance, v.reason))
            elif status in UNDECIDED:
                base_m = ((entries.get(r.key) or {}).get("metrics") or {}).get(name) or {}
                why, detail = why_undecided(r, name, v, base_m)
                out.append(Blind(r.key, name, why, v.mde, v.tolerance, detail))
    for key in missing:
        gated += 1
        out.append(Blind(key, "all", "missing", None, None, "collected, no result this run"))
    return Blindness(gated, tuple(out))


def why_undecided(r: Any, name: str, v: Verdict, base_m: Mapping[str, Any],
                  reason: str | None = None) -> tuple[str, str]:  # fmt: skip
    """THE reason one undecided figure was not decided (a WHYS code), and what was measured
    for it: by design first, then the environment, the paired stage, the baseline's
    sessions (a level that moves between them, too few of them, their spread). `reason`:
    the verdict's reason to read (default its own)."""
    if name in ("throughput", "latency") and r.launch_bound and f"{name}_kernels" in r.verdicts:
        return "launch-bound", ""
    if r.derived_from is not None:
        return "derived", f"from {r.derived_from or 'the test`s own figure'}"
    if r.backend == "cpu" and (r.host or {}).get("busy"):
        return "busy-host", ""
    if r.gpu_shared:
        return "gpu-shared", ""
    if v.status == INCONCLUSIVE_POWER:
        return "power-state", ""
    reason = v.reason if reason is None else reason
    # the trail names the rule; a file written before verdicts had one, its reason's words
    left = (any(s.rule == Rule.LEFT_OUT for s in v.trail) if v.trail
            else any(s in reason for s in PAIRED_LEFT))  # fmt: skip
    if left:
        return "not-paired", ""
    if (v.paired or {}).get("base_check"):
        return "base-off", ""
    if v.paired:
        return "rounds-spread", ""
    tol = float(v.tolerance or 0.0)
    level = per_process(base_m)
    if level is not None and _drawn_per_process(level, tol):
        n, _, within, apart = level
        return "per-process", (
            f"its {n} sessions {apart * 100:.0f}% apart, each within ±{within * 196:.1f}%")
    n = len(since_restart(dict(base_m))[-HISTORY:])  # 0: the entries are not at hand
    if 0 < n < 3 or (level is not None and n < HISTORY and _z() * level[1] < 0.8 * tol):
        return "few-sessions", f"{n} session(s) saved"
    return "spread", ""


def per_process(base_m: Mapping[str, Any]) -> tuple[int, float, float, float] | None:
    """A figure's level between processes against its spread within one, from the baseline
    sessions it is judged against: (sessions, the relative sd of their medians, the root
    mean square of each session's own relative standard error (its 95% interval / 3.92),
    how far apart the lowest and highest medians are); None under 2 usable sessions."""
    hist = [h for h in since_restart(dict(base_m))[-HISTORY:] if isinstance(h, dict)]
    med, own = [], []
    for h in hist:
        m, lo, hi = (h.get(k) for k in ("median", "ci_low", "ci_high"))
        if not all(isinstance(x, int | float) and not isinstance(x, bool) and x > 0
                   for x in (m, lo, hi)):  # fmt: skip
            continue
        med.append(math.log(float(m)))  # type: ignore[arg-type]
        own.append(max(0.0, math.log(float(hi) / float(lo))) / (2 * 1.96))  # type: ignore[arg-type]
    if len(med) < 2:
        return None
    between = statistics.stdev(med)
    within = math.sqrt(statistics.fmean(s * s for s in own))
    return len(med), between, within, math.expm1(max(med) - min(med))


def _drawn_per_process(level: tuple[int, float, float, float], tolerance: float) -> bool:
    """Whether a figure's level moves between sessions (per process, or with the time each
    ran): its sessions differ far beyond each one's own interval, by more than any number
    of sessions could judge at `tolerance` (a new process lands anywhere within that
    spread)."""
    _, between, within, _ = level
    return between > PER_PROCESS_RATIO * within and _z() * between > tolerance


def _z() -> float:
    return z_quantile(CONFIDENCE)


def unseen_after_save(results: list[Any], entries: Mapping[str, Any],
                      env: dict[str, Any]) -> list[str]:  # fmt: skip
    """Per figure, where a baseline just saved (`entries`, this run's session in them)
    cannot see its tolerance: the smallest change a run like this one could detect against
    it, beside the tolerance, and why (`why_undecided`). Judges copies: the results keep
    their own verdicts (none, in a save)."""
    from dataclasses import replace

    from .judge import judge_run

    copies = [replace(r, verdicts={}) for r in results]
    judge_run(copies, dict(entries), env)
    out = []
    for r in copies:
        for name, v in r.verdicts.items():
            if v.status not in JUDGED:
                continue
            tol, half = float(v.tolerance or 0.0), v.uncertainty
            if half is not None and half <= math.log1p(tol):
                continue
            base_m = ((entries.get(r.key) or {}).get("metrics") or {}).get(name) or {}
            why, detail = why_undecided(r, name, v, base_m, reason="")
            if WHYS[why].by_design:
                continue
            sees = f"detects {v.mde * 100:.1f}%" if v.mde is not None and half \
                is not None else "detects nothing yet"
            said = f"{WHYS[why].words}: {detail}" if detail else WHYS[why].words
            out.append(f"{r.key} {name} {sees} (tol. {tol * 100:.1f}%; {said})")
    return out

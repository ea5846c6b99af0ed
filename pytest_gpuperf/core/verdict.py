"""The verdict record: what the gate decided about one figure, and the trail of how.

A Verdict is frozen. The rule that first decides it (judging/verdict.py's ladder) builds it
with `make`; every rule after that (a busy host, the fresh-process confirmation, a derived
figure's cap, the paired stage, ...) returns a new record with `amend`, which appends one
`Step` naming the rule, its stage, the status it left and the figures it used. Nothing
else builds or changes a verdict (tests/test_architecture.py holds that), so a reader
follows a verdict from its trail alone: `-v` prints it. The dict form exists only here
(`to_json`, `from_json`), for results files, JSON output and pytest-xdist.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any


class Status(StrEnum):
    """A verdict's status; its value is what files, JSON and JUnit properties carry."""

    REGRESSED = "regressed"
    FAILED = "failed"  # the benchmark itself failed (out of memory) where a baseline exists
    INCONCLUSIVE = "inconclusive"
    INCOMPARABLE = "incomparable"
    MISSING = "missing"
    NEW = "new"
    UNCHANGED = "unchanged"
    IMPROVED = "improved"
    INFO = "info"  # an informational figure (compile time, gate=False): never judged
    POWER_STATE = "power-state"  # a change in time that the SM clock explains


def _built_here() -> None:
    """Refuse a record or step built anywhere but this module (the constructor, or
    dataclasses.replace from outside): only make, amend and from_json build them."""
    frame = sys._getframe(3)
    while frame.f_back is not None and frame.f_globals.get("__name__") == "dataclasses":
        frame = frame.f_back
    caller = frame.f_globals.get("__name__")
    if caller != __name__:
        raise TypeError(
            f"a Verdict is built by pytest_gpuperf.core.verdict (make, amend, from_json), "
            f"not by {caller}"
        )


class Rule(StrEnum):
    """Every rule a trail can name, in the order a run applies them: a closed set, so a
    reader learns them once (docs/gating.md) and a new rule shows in review."""

    LADDER = "ladder (beyond the tolerance and its interval)"
    APART = "decided apart (no statistics: informational, new, incomparable)"
    ZERO = "judged by the difference from 0"
    NO_FIGURE = "no figure"
    ONE_SESSION = "one baseline session"
    SET_ASIDE = "the way a set-aside session went"
    OFFSET_ALONE = "never decided by the offset alone"
    CLOCKED = "in time and per SM clock cycle (a regression must hold in both)"
    CLASS_BOUND = "bounded by the class line"
    DERIVED = "a derived figure never decided more strongly than its source"
    OTHER_REGIME = "an improvement timed otherwise"
    BUSY = "a busy host decides nothing"
    CONFIRM = "a regression stands only if a fresh process shows it too"
    LEFT_OUT = "left out of the paired rounds"
    TOO_FEW_ROUNDS = "too few usable paired rounds"
    PER_PROCESS = "its noise is per process"
    OUTLIER = "an outlier round set aside decides a change only away from it"
    VETO = "the time decides; its per-clock twin can only veto a change"
    STAGE1_STANDS = "undecided rounds leave the first stage's verdict standing"
    EACH_PAIR = "each process pair bore the first stage out on its own"
    BASE_CHECK = "the base build must reproduce the baseline's sessions at its commit"
    ENVIRONMENT = "a class line the paired stage found unchanged: the environment's"
    AB = "gpuperf ab: base and head rounds, interleaved"
    UNCONFIRMED = "an improvement nothing re-measured stays unconfirmed"


@dataclass(frozen=True)
class Step:
    """One rule's part in a verdict: which `rule`, at which `stage`, the `status` it left,
    the `figures` it used (name -> number or text) and, where it said one, its `note`."""

    rule: str
    stage: str
    status: Status
    figures: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    def __post_init__(self) -> None:
        _built_here()

    def text(self) -> str:
        """ "stage 1, ladder: regressed (change -8.30%, tolerance 3.00%)" """
        figs = ", ".join(f"{k} {_figure(k, v)}" for k, v in self.figures.items())
        said = f" ({figs})" if figs else ""
        note = f": {self.note}" if self.note else ""
        return f"{self.stage}, {self.rule}: {self.status}{said}{note}"


def _figure(name: str, v: Any) -> str:
    """A step's figure as text: a relative one (a change, an interval, a tolerance) in
    percent, any other number to 4 digits."""
    if isinstance(v, float) and math.isfinite(v):
        if "uncertainty" in name or "tolerance" in name:
            return f"{'±' * ('uncertainty' in name)}{v * 100:.2f}%"
        if any(w in name for w in ("change", "worse", "off", "bound", "moved")):
            return f"{v * 100:+.2f}%"
        return f"{v:.4g}"
    return "-" if v is None else str(v)


_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Verdict:
    status: Status
    change: float | None  # relative change of the metric's value, signed (+ = larger value)
    worse: float | None  # relative change in the bad direction (+ = worse), None if n/a
    # half-width of the change's confidence interval, of its log ratio, from every rule
    # (the ladder compares log units: ±7.09% is -6.85%/+7.35% relative); printed as ±%
    uncertainty: float | None
    tolerance: float
    reason: str
    mde: float | None = None  # smallest change in the bad direction this verdict can detect
    # set by no rule of this version; kept because results files carry them
    sessions_needed: int | None = None
    spread: float | None = None
    basis: str = ""  # where the uncertainty comes from ("±2.1% from the spread of 19 ...")
    confirmed: bool | None = None  # a regression re-measured in a fresh process: held or not
    per_cycle: str | None = None  # compute-bound work: the verdict per SM clock cycle
    per_cycle_worse: float | None = None  # and its change in the bad direction
    advice: str | None = None  # what would settle an undecided verdict
    restarted: str | None = None  # the figure's history was restarted from an accepted run
    stage1: Mapping[str, Any] | None = None  # the first stage's, where a later stage replaced it
    paired: Mapping[str, Any] | None = None  # the paired stage's record of its rounds
    # keys a file holds that this version does not know: kept as they were
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    trail: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        _built_here()

    @property
    def failed(self) -> bool:
        return self.status == Status.REGRESSED

    def said(self) -> str:
        """The trail in lines, one a step ("" where it has none)."""
        return "\n".join(s.text() for s in self.trail)


# the fields every dict form carries (a results file of any version has them); the rest
# only where set
_ALWAYS = (
    "status", "change", "worse", "uncertainty", "tolerance", "reason", "mde",
    "sessions_needed", "spread", "basis", "confirmed", "per_cycle", "per_cycle_worse",
)  # fmt: skip
_WHERE_SET = ("advice", "restarted", "stage1", "paired")
_FIELDS = {f.name for f in fields(Verdict)}


def make(
    status: str,
    change: float | None,
    worse: float | None,
    uncertainty: float | None,
    tolerance: float,
    reason: str,
    *,
    rule: str | None = None,
    stage: str = "stage 1",
    figures: Mapping[str, Any] | None = None,
    **more: Any,
) -> Verdict:
    """A new record; with `rule`, its trail opens with that rule's step."""
    s = Status(status)
    if rule is not None:
        more["trail"] = (_step(rule, stage, s, figures, ""),)
    return Verdict(s, change, worse, uncertainty, tolerance, reason, **more)


def amend(
    v: Verdict,
    rule: str | None,
    stage: str = "stage 1",
    *,
    figures: Mapping[str, Any] | None = None,
    note: str = "",
    **changes: Any,
) -> Verdict:
    """`v` with `changes`, and one step appended naming `rule` (None: an annotation that
    decides nothing, such as advice, appends none, and may change neither the status nor
    the trail)."""
    if rule is None and ("status" in changes or "trail" in changes):
        raise ValueError("a change of status or trail names its rule: the trail must hold it")
    if "status" in changes:
        changes["status"] = Status(changes["status"])
    for name in ("stage1", "paired"):
        if changes.get(name) is not None:
            changes[name] = MappingProxyType(dict(changes[name]))
    if rule is not None:
        step = _step(rule, stage, changes.get("status", v.status), figures, note)
        changes["trail"] = (*v.trail, step)
    return replace(v, **changes)


def _step(
    rule: str, stage: str, status: Status, figures: Mapping[str, Any] | None, note: str
) -> Step:
    """One step: `rule` (one of Rule's names) at `stage` left `status`."""
    return Step(str(Rule(rule)), stage, status, MappingProxyType(dict(figures or {})), note)


def after(first: Verdict, later: Verdict, **changes: Any) -> Verdict:
    """`later` (a later stage's own verdict of the figure `first` judged) with `changes`,
    its trail continuing `first`'s."""
    if "status" in changes or "trail" in changes:
        raise ValueError("after() keeps the later stage's status and both trails")
    return replace(amend(later, None, **changes), trail=(*first.trail, *later.trail))


def stage1_record(first: Verdict) -> dict[str, Any]:
    """What a verdict a later stage replaced keeps of the first stage's (`stage1`)."""
    return {"status": str(first.status), "change": first.change,
            "uncertainty": first.uncertainty, "reason": first.reason}  # fmt: skip


# ------------------------------------------------------------------------- dict form


def to_json(v: Verdict) -> dict[str, Any]:
    """The record as JSON data: the fields every version wrote, the optional ones where
    set, unknown keys read from a file as they were, and the trail."""
    d: dict[str, Any] = {k: getattr(v, k) for k in _ALWAYS}
    d["status"] = str(v.status)
    for k in _WHERE_SET:
        value = getattr(v, k)
        if value is not None:
            d[k] = _plain(value)
    d.update(_plain(v.extra))
    if v.trail:
        d["trail"] = [
            {"rule": s.rule, "stage": s.stage, "status": str(s.status),
             "figures": _plain(s.figures), **({"note": s.note} if s.note else {})}
            for s in v.trail
        ]  # fmt: skip
    return d


def _plain(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


_NOT_READ = ("trail", "extra", "status")  # a file's "extra" key is one it holds, kept as is
_NUMBERS = ("change", "worse", "uncertainty", "tolerance", "mde", "spread", "per_cycle_worse")
_TEXTS = ("reason", "advice", "basis", "per_cycle", "restarted")


def problem(d: Any) -> str | None:
    """What is wrong with one verdict as read from a file, or None: an object whose status
    is one the gate gives, numbers finite or null, texts strings or null."""
    if not isinstance(d, dict):
        return f"must be an object, got {_show(d)}"
    status = d.get("status")
    if not isinstance(status, str) or status not in {s.value for s in Status}:
        return f"status must be one of {', '.join(s.value for s in Status)}, got {_show(status)}"
    for name in _NUMBERS:
        x = d.get(name)
        if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)
                              or not math.isfinite(x)):  # fmt: skip
            return f"{name} must be a finite number or null, got {_show(x)}"
    for name in _TEXTS:
        if d.get(name) is not None and not isinstance(d[name], str):
            return f"{name} must be a string or null, got {_show(d[name])}"
    needed = d.get("sessions_needed")
    if needed is not None and (isinstance(needed, bool) or not isinstance(needed, int)):
        return f"sessions_needed must be a whole number or null, got {_show(needed)}"
    if d.get("confirmed") is not None and not isinstance(d["confirmed"], bool):
        return f"confirmed must be true, false or null, got {_show(d['confirmed'])}"
    for name in ("stage1", "paired"):
        if d.get(name) is not None and not isinstance(d[name], dict):
            return f"{name} must be an object or null, got {_show(d[name])}"
    trail = d.get("trail", [])
    if not isinstance(trail, list) or not all(_step_ok(s) for s in trail):
        return "trail must be a list of steps (rule, stage, status, figures)"
    return None


def _step_ok(s: Any) -> bool:
    return (isinstance(s, dict) and isinstance(s.get("rule"), str)
            and isinstance(s.get("stage"), str) and isinstance(s.get("status"), str)
            and s["status"] in set(Status)
            and isinstance(s.get("figures", {}), dict)
            and isinstance(s.get("note", ""), str))  # fmt: skip


def _show(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def from_json(d: Any) -> Verdict:
    """A record from `to_json`'s output (or an older version's, whose fields it lacks take
    their defaults); ValueError saying what is wrong with anything else."""
    why = problem(d)
    if why is not None:
        raise ValueError(why)
    known = {k: d[k] for k in d if k in _FIELDS and k not in _NOT_READ}
    for k in ("stage1", "paired"):
        if known.get(k) is not None:
            known[k] = MappingProxyType(dict(known[k]))
    known.setdefault("tolerance", 0.0)
    known["tolerance"] = float(known["tolerance"] or 0.0)
    known["reason"] = str(known.get("reason") or "")
    for k in ("change", "worse", "uncertainty"):
        known.setdefault(k, None)
    extra = {k: d[k] for k in d if k not in _FIELDS or k == "extra"}
    trail = tuple(
        Step(s["rule"], s["stage"], Status(s["status"]),
             MappingProxyType(dict(s.get("figures") or {})), s.get("note", ""))
        for s in d.get("trail", [])
    )  # fmt: skip
    return Verdict(Status(d["status"]), extra=MappingProxyType(extra), trail=trail, **known)

"""A rolling baseline from the history (`gpuperf baseline rolling`, issue 61 point 4): for
each figure the baseline file holds, its last N sessions at one level, taken from the
nightly history and written as the sessions it is judged against.

- One level: only runs at or after the newest change (step or creep) that `gpuperf
  history`'s detection (changes.py) finds in the figure's series: never across a step.
- Never older than the oldest session the file judges the figure against now, so an
  accepted restart (`gpuperf baseline accept`) is never undone.
- Never after a change for the worse that is not the environment's and that no restart at
  or after it accepted: the figure is left as it was (a regression the gate left undecided
  must not become its level).
- Not taken, and said per figure: a run whose verdict for the figure was REGRESSED, or an
  improvement nothing re-measured (Rule.UNCONFIRMED: one run's luck must never ratchet
  into a baseline; an improvement whose last step is not a re-measurement's counts as
  unconfirmed, REMEASURED); a
  point flagged power-state, gpu-shared or busy-host; a run on another GPU than the
  file's entry, or on another card (serial) than the one chosen (the newest run's, or
  `--card`; ANY takes every card of the entry's GPU: a fleet's sessions, as a save takes).
- Fewer than MIN_TAKEN runs to take: the figure is left as it was.
- Written as `accept` writes a restart (edit.restart's way): the first session taken
  carries a restart record, sessions the file holds are reused (never copied twice), the
  earlier ones are kept before it, and the file keeps the newest HISTORY items; a session
  that would leave the file and that the history does not hold is `dropped` (the command
  refuses it without --force). Pure but for reading the run files that decide a rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..baseline.history import HISTORY, session_key, window
from ..baseline.schema import BaselineFile, file_error
from ..core.verdict import Rule
from ..judging.confirmation import FRESH
from .changes import MIN_SEGMENT, Change, series_changes
from .store import STATUSES, History, Run, Series, run_figures, utc

MIN_TAKEN = MIN_SEGMENT  # a level is 3 runs: fewer leave a figure as it was
# an improvement was measured again where its last step is a re-measurement's (confirmation
# FRESH's, the paired stage's) and says no less: files recorded before Rule.UNCONFIRMED
# (2026-12-07) end an unconfirmed improvement at stage 1, or at a paired stage that left it
REMEASURED = (FRESH, "paired stage")  # paired/stage.py's STAGE (a layer above this one)
NOT_REMEASURED = tuple(r.value for r in (Rule.UNCONFIRMED, Rule.LEFT_OUT, Rule.TOO_FEW_ROUNDS,
                                         Rule.STAGE1_STANDS))  # fmt: skip
ENV_FROM_CARD = ("driver", "cuda", "torch")  # the entry's environment follows its sessions
_REGRESSED, _IMPROVED = STATUSES.index("regressed"), STATUSES.index("improved")


@dataclass
class FigurePlan:
    """What the rolling baseline does to one figure: the runs it takes (indexes into
    History.runs, oldest first) and their history items, what it skipped and why, the
    change it starts after, or why it leaves the figure as it was."""

    key: str
    figure: str
    taken: list[int] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    which: dict[str, list[str]] = field(default_factory=dict)  # the GPUs, cards skipped
    after: int | None = None  # the newest change's first run at the new level
    card: str | None = None
    left: str | None = None  # why nothing is taken


@dataclass
class Plan:
    figures: list[FigurePlan]
    not_in_file: int  # series of the profile that the file holds no metric for
    not_in_history: int  # metrics of the file with no series in the history


ANY = "any"  # --card any: every card of the entry's GPU


def card_of(run: Run) -> str:
    """A run's card: its GPU's UUID (serial), else its name on its host."""
    return run.card.get("uuid") or f"{run.card.get('name')} on {run.card.get('host')}"


def ident(item: dict[str, Any]) -> str:
    """A history item's session: its id and GPU, else its date (in UTC)."""
    if isinstance(item.get("session"), str) and item["session"]:
        return session_key(item)
    return f"date {utc(item.get('date')) or item.get('date')}"


def run_ident(run: Run) -> str:
    return ident({"session": run.session_id, "gpu_uuid": run.card.get("uuid"), "date": run.date})


class _Columns:
    """The run files read for their figures' rules, flags and counts, each once."""

    def __init__(self, directory: Path, hist: History) -> None:
        self.directory, self.hist = directory, hist
        self.read: dict[int, tuple[dict[str, list[Any]], dict[tuple[str, str], int]]] = {}

    def row(self, run: int, test: str, figure: str) -> dict[str, Any] | None:
        if run not in self.read:
            cols = run_figures(self.directory, self.hist.runs[run].name)
            at = {(t, f): i for i, (t, f) in enumerate(zip(cols["test"], cols["figure"],
                                                           strict=True))}  # fmt: skip
            self.read[run] = (cols, at)
        cols, at = self.read[run]
        i = at.get((test, figure))
        return None if i is None else {c: v[i] for c, v in cols.items()}


def plan_rolling(hist: History, base: BaselineFile, directory: Path, sessions: int,
                 card: str | None = None) -> Plan:  # fmt: skip
    """Each figure of `base` (its profile's series in `hist`): the runs to take, newest
    `sessions` of them, and what was skipped."""
    cols = _Columns(directory, hist)
    series = {(t, f): s for (p, t, f), s in hist.series.items() if p == base.profile}
    out, held = [], 0
    for key, entry in sorted(base.entries.items()):
        for name, m in sorted((entry.get("metrics") or {}).items()):
            s = series.get((key, name))
            if s is None:
                continue
            held += 1
            out.append(figure_plan(s, hist, entry, m, sessions, card, cols))
    metrics = sum(len(e.get("metrics") or {}) for e in base.entries.values())
    return Plan(out, len(series) - held, metrics - held)


def figure_plan(s: Series, hist: History, entry: dict[str, Any], m: dict[str, Any],
                sessions: int, card: str | None, cols: _Columns) -> FigurePlan:  # fmt: skip
    """One figure's plan (the module's docstring has the rules)."""
    plan = FigurePlan(s.test, s.figure)
    if (s.unit, s.higher) != (m.get("unit"), m.get("direction") != "lower"):
        plan.left = (f"the history's unit ({s.unit}, {'higher' if s.higher else 'lower'} is "
                     f"better) is not the file's ({m.get('unit')}, {m.get('direction')})")
        return plan
    found = series_changes(s, hist.runs)
    plan.after = max((c.first_bad for c in found), default=None)
    floor = min((d for h in window(m) if isinstance(h, dict) and (d := utc(h.get("date")))),
                default="")  # fmt: skip
    plan.left = _unaccepted(found, hist, floor)
    if plan.left is not None:
        return plan
    gpu = (entry.get("environment") or {}).get("gpu")
    points = [i for i in range(len(s.runs)) if plan.after is None or s.runs[i] >= plan.after]
    mine = [i for i in points if i not in s.left
            and (not gpu or hist.runs[s.runs[i]].card.get("name") == gpu)]  # fmt: skip
    plan.card = card or (card_of(hist.runs[s.runs[mine[-1]]]) if mine else None)
    for i in reversed(points):
        if len(plan.taken) == sessions:
            break
        run = hist.runs[s.runs[i]]
        why, which = _skip(s, i, run, gpu, plan.card, floor, cols)
        if why is not None:
            plan.skipped[why] = plan.skipped.get(why, 0) + 1
            if which and which not in plan.which.setdefault(why, []):
                plan.which[why].append(which)
            continue
        plan.taken.insert(0, s.runs[i])
        plan.items.insert(0, _item(s, i, run, cols.row(s.runs[i], s.test, s.figure)))
    if len(plan.taken) < min(sessions, MIN_TAKEN):
        plan.left = (f"{len(plan.taken)} run(s) at its level to take, "
                     f"{min(sessions, MIN_TAKEN)} needed")  # fmt: skip
        plan.taken, plan.items = [], []
    return plan


def _unaccepted(found: list[Change], hist: History, floor: str) -> str | None:
    """Why a figure whose newest change is for the worse is left as it was: one that is not
    the environment's (a driver, CUDA or torch step) and that no restart at or after it
    accepted is a regression the gate may have left undecided, never a new level (rolled,
    the nights after it would read unchanged); None otherwise."""
    newest = max(found, key=lambda c: c.first_bad, default=None)
    if newest is None or newest.direction not in ("slower", "worse") or newest.environment:
        return None
    run = hist.runs[newest.first_bad]
    if floor and utc(run.date) is not None and floor >= (utc(run.date) or ""):
        return None  # the file judges against sessions since then: accepted
    return (f"its newest change is {newest.change * 100:+.2f}% {newest.direction}, first seen "
            f"in {run.name} ({run.commit[:12] if run.commit else 'no commit'}), and nothing "
            "accepted it (a regression must not become its level: gpuperf baseline accept)")


def _skip(s: Series, i: int, run: Run, gpu: str | None, card: str | None, floor: str,
          cols: _Columns) -> tuple[str | None, str | None]:  # fmt: skip
    """Why point i of the series is not taken (None: it is), and which GPU or card."""
    if i in s.left:
        return s.left[i], None
    if gpu and run.card.get("name") != gpu:
        return "another GPU", run.card.get("name")
    if card != ANY and card_of(run) != card:
        return "another card", card_of(run)
    if run.date < floor:
        return "older than the sessions the file judges against now", None
    if s.status[i] == _REGRESSED:
        return "regressed", None
    if s.status[i] == _IMPROVED:
        row = cols.row(s.runs[i], s.test, s.figure)
        if row is None or row["stage"] not in REMEASURED or row["rule"] in NOT_REMEASURED:
            return "improved, unconfirmed", None
    return None, None


def _item(s: Series, i: int, run: Run, row: dict[str, Any] | None) -> dict[str, Any]:
    """The history item of point i: its value, when, the code (none where the tree was
    dirty: no commit measured it), its interval, flags and ids."""
    item: dict[str, Any] = {"median": s.median[i], "date": run.date,
                            "commit": None if run.dirty else run.commit}  # fmt: skip
    lo, hi = s.ci_low[i], s.ci_high[i]
    if lo == lo and hi == hi:  # not nan
        item["ci_low"], item["ci_high"] = lo, hi
    if row is not None and row["flags"]:
        item["flags"] = list(row["flags"])
    for name, value in (("session", run.session_id), ("gpu_uuid", run.card.get("uuid")),
                        ("host", run.card.get("host"))):  # fmt: skip
        if value:
            item[name] = value
    return item


def apply_rolling(base: BaselineFile, plan: Plan, hist: History, record: dict[str, Any],
                  now: str) -> tuple[BaselineFile, list[str], list[str]]:  # fmt: skip
    """`base` with each planned figure's sessions replaced by its taken ones: (the new
    file, the figures changed as "KEY FIGURE", the sessions that leave the file and the
    history does not hold, as "KEY FIGURE: session (date)"). Raises BaselineError for a
    planned figure the file no longer holds."""
    entries = json.loads(json.dumps(base.entries))
    held = {run_ident(r) for r in hist.runs}
    changed, dropped = [], []
    newest: dict[str, Run] = {}
    for fp in plan.figures:
        if not fp.items:
            continue
        m = (entries.get(fp.key, {}).get("metrics") or {}).get(fp.figure)
        if m is None:
            raise file_error(base.path, f"{fp.key} {fp.figure}: no longer in the file")
        new, gone = _rolled(m, fp.items, record)
        if [ident(h) for h in window(new)] == [ident(h) for h in window(m)]:
            continue  # already so
        entries[fp.key]["metrics"][fp.figure] = new
        changed.append(f"{fp.key} {fp.figure}")
        dropped += [f"{fp.key} {fp.figure}: session {ident(h)} ({h.get('date')})"
                    for h in gone if ident(h) not in held]  # fmt: skip
        run = hist.runs[fp.taken[-1]]
        if fp.key not in newest or run.date > newest[fp.key].date:
            newest[fp.key] = run
    for key, run in newest.items():
        e = entries[key]
        e["date"], e["commit"] = run.date, _one_commit(e, None if run.dirty else run.commit)
        env = dict(e.get("environment") or {})
        env.update({k: run.card[k] for k in ENV_FROM_CARD if run.card.get(k)})
        e["environment"] = env
    return BaselineFile(base.path, base.profile, entries, now, dict(base.extra)), changed, dropped


def _one_commit(entry: dict[str, Any], commit: str | None) -> str | None:
    """`commit` where every figure of the entry is judged against sessions that end at it,
    else None: the paired stage builds the entry's commit, and a figure whose sessions end
    elsewhere (left as it was, or its newest runs skipped) would be compared with a build
    that may already hold its regression (None: its test is left to stage 1)."""
    ends = {judged[-1].get("commit") if isinstance(judged[-1], dict) else None
            for m in (entry.get("metrics") or {}).values()
            if isinstance(m, dict) and (judged := window(m))}  # fmt: skip
    return commit if ends <= {commit} else None


def _rolled(m: dict[str, Any], items: list[dict[str, Any]],
            record: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """A metric whose judged sessions are `items` (the file's own copy of a session it
    holds), the first carrying `record` (or the restart record it carries already: an
    accept's reason is never replaced), the others before it; and the items that leave
    the file (it keeps the newest HISTORY)."""
    old = [h for h in m.get("history") or [] if isinstance(h, dict)]
    by_id = {ident(h): h for h in old}
    taken = [{k: v for k, v in by_id.get(ident(x), x).items() if k != "restart"} for x in items]
    own = by_id.get(ident(items[0]), {}).get("restart")  # an accept's: its reason and who stay
    taken[0]["restart"] = ({**own, **{k: v for k, v in record.items() if k == "forced"}}
                           if isinstance(own, dict) else record)  # fmt: skip
    ids = {ident(h) for h in taken}
    history = [h for h in old if ident(h) not in ids] + taken
    cut = max(0, len(history) - HISTORY)
    newest = taken[-1]
    summary = {k: v for k, v in m.items() if k not in ("history", "ci_low", "ci_high")}
    summary["median"] = newest["median"]
    if "ci_low" in newest:
        summary["ci_low"], summary["ci_high"] = newest["ci_low"], newest["ci_high"]
    return {**summary, "history": history[cut:]}, history[:cut]

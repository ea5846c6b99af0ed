"""Since when a regressed figure has been at its new level (issue 61, point 4): the history's
change finding (changes.py) run on the figure's series with this run's value added. Where
its newest change is a step (or creep) for the worse, the regression line says from which
run and commit the figure has been at that level, and the commit range the change lies
in; where no change is found (a regression first seen tonight: a step needs MIN_SEGMENT
runs after it), nothing more is said."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, replace
from typing import Any

from .changes import Change, series_changes
from .store import History, Run, Series


@dataclass(frozen=True)
class Since:
    """A regressed figure's newest change for the worse, with its two runs."""

    change: Change
    last_good: Run
    first_bad: Run


def with_point(s: Series, run_index: int, value: float) -> Series:
    """The series with one more point (this run's), its arrays copied."""
    out = replace(s, runs=array("i", s.runs), median=array("d", s.median),
                  ci_low=array("d", s.ci_low), ci_high=array("d", s.ci_high),
                  status=array("b", s.status), left=dict(s.left))  # fmt: skip
    out.runs.append(run_index)
    out.median.append(value)
    out.ci_low.append(float("nan"))
    out.ci_high.append(float("nan"))
    out.status.append(-1)
    return out


def new_levels(hist: History, points: list[tuple[str, str, float]], profile: str | None,
               this: Run) -> dict[tuple[str, str], Since]:  # fmt: skip
    """For each (test key, figure, tonight's value) whose series in the history, with
    tonight's value added, has a newest change that is for the worse: that change."""
    runs = [*hist.runs, this]
    out = {}
    for key, figure, value in points:
        s = hist.series.get((profile or "", key, figure))
        if s is None:
            continue
        found = series_changes(with_point(s, len(hist.runs), value), runs)
        if not found:
            continue
        newest = max(found, key=lambda c: c.first_bad)
        if newest.direction in ("slower", "worse"):
            out[(key, figure)] = Since(newest, runs[newest.last_good], runs[newest.first_bad])
    return out


def since_text(since: Since, commits: int | None) -> str:
    """'at this level since 2026-07-31 (run ..., commit 0060cccccccc); 1 commit in range
    0059cccccccc..0060cccccccc' (the count where git could give it)."""
    bad, good = since.first_bad, since.last_good
    where = "this run" if bad.name == "this run" else f"run {bad.name}"
    commit = f", commit {bad.commit[:12]}" if bad.commit else ""
    text = f"at this level since {bad.date[:10]} ({where}{commit})"
    if good.commit and bad.commit:
        count = "" if commits is None else f"{commits} commit{'s' if commits != 1 else ''} in "
        text += f"; {count}range {good.commit[:12]}..{bad.commit[:12]}"
    if since.change.environment:
        text += f" (the environment's: {since.change.environment})"
    return text


def regressed_points(results: list[Any]) -> list[tuple[str, str, float]]:
    """(test key, figure, value) of each figure of the results judged REGRESSED."""
    from ..core.figures import metrics_of
    from ..core.verdict import Status

    out = []
    for r in results:
        names = [n for n, v in r.verdicts.items() if v.status == Status.REGRESSED]
        metrics = metrics_of(r) if names else {}
        out += [(r.key, n, float(metrics[n]["median"])) for n in names if n in metrics]
    return out

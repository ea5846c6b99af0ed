"""`gpuperf bisect`'s report: the outcome of judging/bisection.py with each commit's subject,
author and date, as a dict (--json), terminal lines and markdown (--markdown). No git, no
processes: cli/bisect.py gathers what this renders."""

from __future__ import annotations

import math
import shlex
from typing import Any

from ..judging.bisection import Outcome, Range
from ..judging.verdict import interval_text, ratio_change, status_of
from ..outputs.text import md_cell, plain, table

PROBES_HEADER = ["commit", "subject", "rounds", "change vs good", "rounds vs bad", "vs bad"]
SAID = {
    "walked": "the range was walked",
    "same": "good and bad measure the same within half the tolerance: the change is not in "
    "the code between them (the environment: a driver, a dependency, the machine, a "
    "setting); nothing was walked",
    "small": "good and bad differ by less than half the tolerance as far as the most rounds "
    "allowed tell (no step shown): the change is not in the code between them as far as this "
    "machine can tell; nothing was walked",
    "undecided": "whether good and bad differ cannot be said at the most rounds allowed: "
    "nothing was walked",
    "budget": "the budget ran out: the narrowest ranges reached are listed; --resume goes on",
}


def _pct(log_ratio: float | None, half: float | None) -> str:
    if log_ratio is None or not math.isfinite(log_ratio):
        return "-"
    change = ratio_change(log_ratio)
    return f"{change * 100:+.2f}%{interval_text(change, half if half is not None else None)}"


def _short(c: str) -> str:
    return c[:12]


def _range(r: Range, info: dict[str, dict[str, str]], figure: dict[str, Any],
           tolerance: float) -> dict[str, Any]:  # fmt: skip
    """One culprit or range as the report holds it."""
    meta = info.get(r.last, {})
    out: dict[str, Any] = {
        "commit": r.last,
        "subject": meta.get("subject", ""),
        "author": meta.get("author", ""),
        "date": meta.get("date", ""),
        "after": r.first_before,
        "candidates": list(r.candidates),
        "change": ratio_change(r.change) if math.isfinite(r.change) else None,
        "interval": _pct(r.change, r.half) if math.isfinite(r.change) else None,
        "why": r.why,
    }
    if math.isfinite(r.change) and math.isfinite(r.half):
        v = status_of(r.change, r.half, higher_is_better=bool(figure.get("higher", True)),
                      tolerance=tolerance, stage="gpuperf bisect")  # fmt: skip
        out["verdict"] = str(v.status)
    return out


def build(outcome: Outcome, info: dict[str, dict[str, str]],
          meta: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The report: {"culprits", "probes", "undecided", "open", "skipped", ...}. `info`:
    commit -> subject, author, date; `meta`: the run's good, bad, figure, tests, rounds,
    tolerance."""
    tol, fig = meta["tolerance"], meta.get("figure") or {}
    culprits = [_range(r, info, fig, tol) for r in outcome.culprits]
    tests = " ".join(shlex.quote(t) for t in meta.get("tests", []))
    for c in culprits:
        c["reproduce"] = (f"git checkout {_short(c['commit'])} && gpuperf ab --base "
                          f"{_short(c['after'])} --rounds {meta['rounds']} -- {tests}")  # fmt: skip
    probes = []
    for p in outcome.probes:
        row = {"commit": p["commit"], "subject": info.get(p["commit"], {}).get("subject", "")}
        for side in ("vs_good", "vs_bad"):
            if side in p:
                row[side] = {**p[side], "interval": _pct(p[side]["change"], p[side]["half"]),
                             "change": ratio_change(p[side]["change"])}  # fmt: skip
        if "skipped" in p:
            row["skipped"] = p["skipped"]
        probes.append(row)
    total = outcome.total
    return {
        "schema": "pytest-gpuperf/bisect-1",
        **meta,
        "verdict": outcome.verdict,
        "said": SAID[outcome.verdict],
        "total": None if total is None else {"change": ratio_change(total.mean),
                                             "interval": _pct(total.mean, total.half)},
        "culprits": culprits,
        "probes": probes,
        "undecided": [_range(r, info, fig, tol) for r in outcome.undecided],
        "open": [_range(r, info, fig, tol) for r in outcome.open],
        "skipped": outcome.skipped,
        "measurements": outcome.calls,
        "measuring_s": outcome.spent_s,
    }  # fmt: skip


def _probe_rows(report: dict[str, Any]) -> list[list[str]]:
    rows = []
    for p in report["probes"]:
        g, b = p.get("vs_good") or {}, p.get("vs_bad") or {}
        if "skipped" in p:
            rows.append([_short(p["commit"]), p["subject"][:40], "-", "skipped (below)", "-",
                         "-"])  # fmt: skip
            continue
        rows.append([_short(p["commit"]), p["subject"][:40], str(g.get("rounds", "-")),
                     g.get("interval", "-"), str(b.get("rounds", "-")), b.get("interval", "-")])
    return rows


def _culprit_line(c: dict[str, Any]) -> str:
    what = (f"{_short(c['commit'])} {c['subject']!r} ({c['author']}, {c['date']}): "
            f"{c['interval']}")  # fmt: skip
    if c.get("verdict"):
        what += f" {c['verdict'].upper()}"
    if len(c["candidates"]) > 1:
        what += (f"; one of {', '.join(_short(x) for x in c['candidates'])} ({c['why']})")
    return what


def text_lines(report: dict[str, Any]) -> list[str]:
    """The report for the terminal."""
    fig = report.get("figure") or {}
    total = report.get("total") or {}
    lines = [f"gpuperf bisect: {_short(report['good'])}..{_short(report['bad'])}, "
             f"{report['commits']} commits; figure {fig.get('key', '?')} {fig.get('metric', '')}"
             f"; good -> bad {total.get('interval', '-')}",
             SAID[report["verdict"]]]  # fmt: skip
    for c in report["culprits"]:
        lines.append(f"culprit: {_culprit_line(c)}")
    for c in report["undecided"]:
        lines.append(f"undecided: after {_short(c['after'])} up to {_short(c['commit'])}: "
                     f"{c['interval'] or '-'}: {c['why']}")  # fmt: skip
    for c in report["open"]:
        lines.append(f"not reached: after {_short(c['after'])} up to {_short(c['commit'])} "
                     f"({len(c['candidates'])} commits)")  # fmt: skip
    if not report["culprits"] and report["verdict"] == "walked":
        lines.append("no culprit: no single commit changed the figure by half the tolerance")
    lines += table(PROBES_HEADER, _probe_rows(report))
    lines += [f"skipped {_short(c)}: {why}" for c, why in report["skipped"].items()]
    started = report.get("processes")
    lines.append(f"{report['measurements']} measurement(s) in this run"
                 + (f", {started} pytest process(es) started" if started is not None else "")
                 + f"; {report['measuring_s']:.0f} s of measuring in all")  # fmt: skip
    lines += [f"reproduce: {c['reproduce']}" for c in report["culprits"]]
    return [plain(x) for x in lines]


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown, for a pull-request comment or an issue."""
    fig = report.get("figure") or {}
    out = [f"## gpuperf bisect: {md_cell(_short(report['good']))}.."
           f"{md_cell(_short(report['bad']))}",
           f"{md_cell(fig.get('key', ''))} {md_cell(fig.get('metric', ''))}: good -> bad "
           f"{md_cell((report.get('total') or {}).get('interval', '-'))}; "
           f"{md_cell(report['said'])}", ""]  # fmt: skip
    if report["culprits"]:
        out += ["| culprit | subject | author | date | change |", "| --- | --- | --- | --- | --- |"]
        out += [f"| `{md_cell(_short(c['commit']))}` | {md_cell(c['subject'])} | "
                f"{md_cell(c['author'])} | {md_cell(c['date'])} | {md_cell(c['interval'])} |"
                for c in report["culprits"]]  # fmt: skip
        out += [""] + [f"    {c['reproduce']}" for c in report["culprits"]] + [""]
    for c in report["undecided"]:
        out.append(f"- undecided after `{md_cell(_short(c['after']))}` up to "
                   f"`{md_cell(_short(c['commit']))}`: {md_cell(c['why'])}")  # fmt: skip
    out += ["", "| " + " | ".join(PROBES_HEADER) + " |",
            "| " + " | ".join("---" for _ in PROBES_HEADER) + " |"]  # fmt: skip
    out += ["| " + " | ".join(md_cell(x) for x in row) + " |" for row in _probe_rows(report)]
    skipped = report["skipped"].items()
    out += [""] * bool(skipped) + [f"- skipped `{md_cell(_short(c))}`: {md_cell(why)}"
                                   for c, why in skipped]  # fmt: skip
    return "\n".join(out) + "\n"

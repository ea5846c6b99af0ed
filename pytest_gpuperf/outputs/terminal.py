"""The terminal summary of a run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from ..core.results import Result, format_figure
from .summary import RunSummary
from .text import RESULT_HEADER, VERDICT_HEADER, plain, result_rows, run_verdict_rows, table


def terminal_lines(summary: RunSummary, verbosity: int = 0) -> list[str]:
    """Lines for the terminal; a line starting with '--- ' is a section separator.

    One table by default: the verdicts when a baseline was found, else the results;
    notes only for results with a flag. With -v: both tables, every note and the advice
    for inconclusive verdicts. With -q: the table alone (recorded figures counted, not
    listed)."""
    describe = summary.describe
    if verbosity <= 0:
        from ..hardware.device import DeviceSnapshot

        with contextlib.suppress(TypeError, ValueError):  # a device dict of another version
            describe = DeviceSnapshot.from_dict(summary.device).describe(short=True)
    out = [f"device: {plain(describe)}; profile: {summary.profile or 'unknown'}"]
    if summary.emulated is not None:
        name, gib = summary.emulated
        cap = f"{gib:g} GiB" if gib else "the emulated card's memory"
        out.append(
            f"EMULATING {name}: GPU memory capped to {cap}; memory fits and batch "
            "limits are the emulated card's, speed figures this GPU's"
        )
    verdicts = summary.comparing and summary.baseline_found
    measured = [r for r in summary.results if r.kind == "measured"]
    if verbosity > 0 or not verdicts:
        if measured:  # a run of recorded figures alone: no empty table header
            out += table(RESULT_HEADER, result_rows(measured))
        recorded = [
            (r, r.value) for r in summary.results if r.kind == "recorded" and r.value is not None
        ]
        if verbosity < 0 and recorded:  # -q: the table alone, and how to see the rest
            out.append(f"{len(recorded)} recorded figure(s): -v lists them")
        for r, value in recorded if verbosity >= 0 else []:
            note = f" ({'; '.join(r.notes)})" if r.notes else ""
            out.append(plain(f"{r.key}: {format_figure(value, r.unit)}{note}"))
    if verbosity >= 0:
        for r in measured:
            if verbosity > 0 or r.flags() or r.stop_reason == "noise-limited":
                for note in r.notes:
                    out.append(f"  {plain(r.key)}: {plain(note)}")
    if summary.baseline_note:
        out.append(f"baseline: {plain(summary.baseline_note)}")
    if summary.comparing:
        rows = run_verdict_rows(summary)
        if verdicts:
            out.append(f"--- gpuperf verdicts against baseline {summary.baseline_path}")
            out += table(VERDICT_HEADER, rows)
            out.extend(summary.shifts)
            out.append(verdict_count_line(rows, summary.confidence, verbosity))
        else:
            out.append(f"no baseline at {summary.baseline_path}: every result is new")
        if verbosity > 0:
            for r in summary.results:
                for name, v in r.verdicts.items():
                    if v.advice:
                        out.append(f"  {plain(r.key)} {name}: inconclusive; to settle: {v.advice}")
            out += trail_lines(summary.results)
        if summary.warn_only and any(row[0] == "REGRESSED" for row in rows):
            out.append("regressions reported only (--gpuperf-warn-only): not failing")
    return out


def trail_lines(results: Iterable[Result]) -> list[str]:
    """-v: how each verdict was reached, one line a rule (the verdict's trail), worst
    first."""
    from ..judging.verdict import SEVERITY

    judged = [(r, name, v) for r in results for name, v in r.verdicts.items()]
    judged.sort(key=lambda t: SEVERITY.get(t[2].status, 99))
    out = ["--- how each verdict was reached (its rules in order)"] if judged else []
    for r, name, v in judged:
        out.append(f"{v.status.upper()} {plain(r.key)} {plain(name)}")
        out += [f"  {i}. {plain(step.text())}" for i, step in enumerate(v.trail, 1)]
    return out


def confidence_text(confidence: float) -> str:
    """A confidence as a percentage with the digits it needs: below 100%, and its distance
    from 100% (the chance of a false alarm each figure is allowed) right to within half
    (a run of 20,000 figures is judged at 99.99995% each: "100.000%" claimed certainty)."""
    miss = 1 - confidence
    for digits in range(3, 16):
        text = f"{confidence:.{digits}%}"
        if abs(1 - float(text[:-1]) / 100 - miss) <= miss / 2:
            return text
    return f"{confidence:.15%}"


def verdict_count_line(rows: list[list[str]], confidence: float | None, verbosity: int) -> str:
    """One line under the verdict table: how many of each verdict, and at what confidence
    each metric was judged; where some are inconclusive, where to read what would settle
    them."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[0].lower()] = counts.get(row[0].lower(), 0) + 1
    line = "verdicts: " + ", ".join(f"{n} {status}" for status, n in counts.items())
    if confidence is not None:
        line += f"; each metric judged at {confidence_text(confidence)} confidence"
    if counts.get("inconclusive") and verbosity <= 0:
        line += "; -v shows what would settle each inconclusive one"
    return line

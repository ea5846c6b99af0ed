"""Reports of results: terminal table lines and JSON. Pure formatting, no pytest."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable
from typing import Any

from .results import Result, _fmt
from .units import format_size


def result_rows(results: Iterable[Result]) -> list[list[str]]:
    rows = []
    for r in results:
        if r.outcome != "ok" or r.throughput is None or r.time is None:
            rows.append([r.key, r.outcome.upper(), "", "", "", "", (r.error or "")[:60]])
            continue
        flags = r.flags()
        if r.busy_fraction is not None:  # the busy fraction beside (or as) the verdict on it
            busy = f"GPU busy {r.busy_fraction * 100:.0f}%"
            if r.launch_bound:
                flags[0] = f"launch-bound ({busy})"
            else:
                flags.insert(0, busy)
        if r.stop_reason != "converged":
            flags.append(r.stop_reason)
        rows.append(
            [
                r.key,
                f"{_fmt(r.throughput.median)} {r.throughput.unit}",
                interval_text(r),
                f"{r.time.median * 1e3:.4g} ms",
                str(r.time.n),
                format_size(r.peak_reserved) if r.peak_reserved is not None else "-",
                ", ".join(flags),
            ]
        )
    return rows


def interval_text(r: Result) -> str:
    """The throughput's 95% interval as a relative half-width, or why there is none."""
    assert r.time is not None and r.throughput is not None
    if not r.time.ci_exact:
        return f"none (n={r.time.n})"  # too few samples for an interval of the median
    half = r.throughput.rel_ci_halfwidth
    if not math.isfinite(half) or half > 1:
        return "unusable noise"
    return f"±{half * 100:.2f}%"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    rows = [[plain(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return out


RESULT_HEADER = ["benchmark", "throughput", "95% CI", "median/call", "n", "peak mem", "notes"]


def json_safe(obj: Any) -> Any:
    """Replace NaN/inf (invalid JSON) by None, recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


# ------------------------------------------------------------------------- verdicts

VERDICT_HEADER = ["verdict", "benchmark", "metric", "now", "change (CI)", "detects (tol.)", "flags"]


def verdict_rows(results: Iterable[Result], missing: Iterable[str] = ()) -> list[list[str]]:
    """Rows of the session's verdict table, worst first."""
    from .gate import describe_value, metrics_of
    from .verdict import FAILED, INCONCLUSIVE_POWER, SEVERITY

    rows: list[tuple[int, list[str]]] = []

    def add(key: str, metrics: dict[str, Any], verdicts: dict[str, Any], flags: str) -> None:
        for name, m in metrics.items():
            v = verdicts.get(name)
            if v is None:
                continue
            change = "-"
            if v.get("change") is not None:
                unc = v.get("uncertainty")
                change = f"{v['change'] * 100:+.2f}%" + (
                    f" ±{unc * 100:.2f}%" if unc is not None else ""
                )
            tol = f"{v['tolerance'] * 100:.1f}%" if v.get("tolerance") else "-"
            mde = v.get("mde")
            detects = f"{mde * 100:.1f}% ({tol})" if mde is not None else f"- ({tol})"
            notes = flags
            if v["status"] in (INCONCLUSIVE_POWER, FAILED):  # the reason is the finding
                notes = ", ".join(x for x in (flags, v.get("reason") or "") if x)
            rows.append(
                (
                    SEVERITY.get(v["status"], 99),
                    [
                        v["status"].upper(),
                        key,
                        name,
                        describe_value(m["median"], m["unit"]),
                        change,
                        detects,
                        notes,
                    ],
                )
            )

    for r in results:
        flags = r.flags()
        metrics = metrics_of(r)
        if not metrics and r.verdicts:  # failed where a baseline exists
            metrics = {k: {"median": math.nan, "unit": ""} for k in r.verdicts}
        add(r.key, metrics, r.verdicts, ", ".join(flags))
    for key in missing:
        rows.append((SEVERITY["missing"], ["MISSING", key, "-", "-", "-", "-", "not measured"]))
    rows.sort(key=lambda t: t[0])
    return [r for _, r in rows]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------- escaping

_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}


def plain(text: object) -> str:
    """Text from a test id, metric name or unit, safe for a terminal: control characters
    (ANSI escapes, newlines) are shown as \\xNN rather than acted on."""
    return str(text).translate(_CONTROL)


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_{}[]()#!|~"})


def md_cell(text: object) -> str:
    """Text for a markdown table cell (GitHub step summary): it cannot end the table, start
    a heading, an image, a link, a code span or HTML."""
    import html

    return html.escape(plain(text).translate(_MD_SPECIAL), quote=False)


# ------------------------------------------------------------------------ run summary


class RunSummary:
    """Everything the outputs of one run show, built once at the end of the run: the
    terminal summary, the JSON file, the GitHub step summary and pytest-benchmark's JSON
    are each made from it."""

    def __init__(
        self,
        *,
        device: dict[str, Any],
        describe: str,
        profile: str | None,
        baseline_path: str | None,
        baseline_found: bool,
        baseline_mode: str,
        baseline_note: str | None,
        comparing: bool,
        warn_only: bool,
        emulated: tuple[str, float | None] | None,
        results: list[Result],
        missing: list[str],
        confidence: float | None = None,
    ) -> None:
        self.device = device
        self.describe = describe
        self.profile = profile
        self.baseline_path = baseline_path
        self.baseline_found = baseline_found
        self.baseline_mode = baseline_mode
        self.baseline_note = baseline_note
        self.comparing = comparing
        self.warn_only = warn_only
        self.emulated = emulated
        self.results = results
        self.missing = missing
        self.confidence = confidence  # of each metric's verdict (the run's false-alarm budget)

    def verdict_rows(self) -> list[list[str]]:
        return verdict_rows(self.results, self.missing) if self.comparing else []

    def payload(self) -> dict[str, Any]:
        return {
            "schema": "pytest-gpuperf/results-1",
            "device": self.device,
            "describe": self.describe,
            "profile": self.profile,
            "baseline": self.baseline_path,
            "baseline_mode": self.baseline_mode,
            "confidence": self.confidence,
            "results": [r.to_dict() for r in self.results],
            "missing": list(self.missing),
        }

    def terminal_lines(self, verbosity: int = 0) -> list[str]:
        """Lines for the terminal; a line starting with '--- ' is a section separator.

        One table by default: the verdicts when a baseline was found, else the results;
        notes only for results with a flag. With -v: both tables, every note and the advice
        for inconclusive verdicts. With -q: the table alone."""
        describe = self.describe
        if verbosity <= 0:
            from .device import DeviceSnapshot

            with contextlib.suppress(TypeError, ValueError):  # a device dict of another version
                describe = DeviceSnapshot.from_dict(self.device).describe(short=True)
        out = [f"device: {plain(describe)}; profile: {self.profile or 'unknown'}"]
        if self.emulated is not None:
            name, gib = self.emulated
            out.append(
                f"EMULATING {name}: GPU memory capped to {gib:g} GiB; memory fits and batch "
                "limits are the emulated card's, speed figures this GPU's"
            )
        verdicts = self.comparing and self.baseline_found
        measured = [r for r in self.results if r.kind == "measured"]
        if verbosity > 0 or not verdicts:
            out += table(RESULT_HEADER, result_rows(measured))
            for r in self.results:
                if r.kind == "recorded" and r.value is not None:
                    note = f" ({'; '.join(r.notes)})" if r.notes else ""
                    out.append(plain(f"{r.key}: {r.value:g} {r.unit}{note}"))
        if verbosity >= 0:
            for r in measured:
                if verbosity > 0 or r.flags() or r.stop_reason == "noise-limited":
                    for note in r.notes:
                        out.append(f"  {plain(r.key)}: {plain(note)}")
        if self.baseline_note:
            out.append(f"baseline: {plain(self.baseline_note)}")
        if self.comparing:
            rows = self.verdict_rows()
            if verdicts:
                out.append(f"--- gpuperf verdicts against baseline {self.baseline_path}")
                out += table(VERDICT_HEADER, rows)
            else:
                out.append(f"no baseline at {self.baseline_path}: every result is new")
            if verbosity > 0:
                for r in self.results:
                    for name, v in r.verdicts.items():
                        if v.get("advice"):
                            out.append(
                                f"  {plain(r.key)} {name}: inconclusive; to settle: {v['advice']}"
                            )
            if self.warn_only and any(row[0] == "REGRESSED" for row in rows):
                out.append("regressions reported only (--gpuperf-warn-only): not failing")
        return out

    def markdown(self) -> str:
        rows = self.verdict_rows()
        text = [
            f"## gpuperf: {md_cell(self.describe)}",
            f"profile **{md_cell(self.profile or 'unknown')}**, baseline "
            f"{md_cell(self.baseline_path or 'none')}",
            "",
        ]
        if rows:
            text.append(markdown_table(VERDICT_HEADER, rows))
        else:
            text.append(markdown_table(RESULT_HEADER, result_rows(self.results)))
        return "\n".join(text)

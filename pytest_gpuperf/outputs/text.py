"""Text building blocks of every output: table rows of results and verdicts, plain and
markdown cells, JSON-safe values. Pure formatting, no pytest."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.results import Result, fmt_number, format_figure, format_value
from ..core.units import format_size
from ..core.verdict import Verdict

if TYPE_CHECKING:
    from .summary import RunSummary


def result_rows(results: Iterable[Result]) -> list[list[str]]:
    rows = []
    for r in results:
        if r.kind == "recorded" and r.outcome == "ok" and r.throughput is not None:
            note = "; ".join(r.notes)[:60]  # a figure obtained by other means: no timing
            value = format_figure(r.throughput.median, r.throughput.unit)
            rows.append([r.key, value, "recorded", "-", "-", "-", note])
            continue
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
        if r.kernel_time is not None:  # the GPU's own time beside the wall time's median/call
            flags.insert(1 if r.launch_bound else 0,
                         f"GPU kernels {r.kernel_time.median * 1e3:.4g} ms/call")  # fmt: skip
        if r.stop_reason != "converged":
            flags.append(r.stop_reason)
        rows.append(
            [
                r.key,
                f"{fmt_number(r.throughput.median)} {r.throughput.unit}",
                interval_text(r),
                f"{r.time.median * 1e3:.4g} ms",
                str(r.time.n),
                format_size(r.peak_allocated) if r.peak_allocated is not None else "-",
                ", ".join(flags),
            ]
        )
    return rows


def interval_text(r: Result) -> str:
    """The figure's 95% interval as a relative half-width, or why there is none."""
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


# "figure": a throughput, a latency (ms, lower is better) or a recorded value, by its unit
RESULT_HEADER = ["benchmark", "figure", "95% CI", "median/call", "n", "peak mem", "notes"]


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


def run_verdict_rows(summary: RunSummary) -> list[list[str]]:
    """The verdict table's rows of a run: none where it was not compared."""
    if not summary.comparing:
        return []
    return verdict_rows(summary.results, summary.missing, summary.since)


def verdict_rows(results: Iterable[Result], missing: Iterable[str] = (),
                 since: dict[tuple[str, str], str] | None = None) -> list[list[str]]:  # fmt: skip
    """Rows of the session's verdict table, worst first; a regressed figure's notes say
    since when it stands where the nightly history said (`since`)."""
    from ..core.figures import metrics_of
    from ..judging.explain import borne_out
    from ..judging.verdict import FAILED, INCONCLUSIVE, INCONCLUSIVE_POWER, SEVERITY

    rows: list[tuple[int, list[str]]] = []

    def add(key: str, metrics: dict[str, Any], verdicts: dict[str, Verdict], flags: str) -> None:
        for name, m in metrics.items():
            v = verdicts.get(name)
            if v is None:
                continue
            change = change_text(name, v, m.get("direction"))
            tol = f"{v.tolerance * 100:.1f}%" if v.tolerance else "-"
            mde = v.mde  # no interval (one session): nothing it can be said to detect
            known = mde is not None and v.uncertainty is not None
            detects = f"{mde * 100:.1f}% ({tol})" if mde is not None and known else f"- ({tol})"
            notes = flags
            said = v.confirmed is not None or borne_out(v)  # a check's reason: shown
            # an undecided or failed line says why; a checked one, how it was checked
            if v.status in (INCONCLUSIVE, INCONCLUSIVE_POWER, FAILED) or said:
                notes = ", ".join(x for x in (flags, v.reason or "") if x)
            if v.restarted:  # the history was restarted from an accepted run
                notes = ", ".join(x for x in (notes, str(v.restarted)) if x)
            if since and (key, name) in since:
                notes = ", ".join(x for x in (notes, since[(key, name)]) if x)
            rows.append(
                (
                    SEVERITY.get(v.status, 99),
                    [
                        v.status.upper(),
                        key,
                        name,
                        format_value(m["median"], m["unit"]),
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


def change_text(name: str, v: Verdict, direction: str | None = None) -> str:
    """A verdict's change cell: the figure's own relative change, signed as the figure
    moved (a throughput +3% is higher, a latency +3% longer), its interval, and what that
    means in a word: `faster` or `slower` for a figure of speed (a throughput, a latency
    and their twins), `better` or `worse` for any other (memory, a recorded figure); no
    word for a change that rounds to zero. "-": no change (a new figure, a failure)."""
    from ..core.figures import SPEED
    from ..judging.verdict import interval_text

    change, unc = v.change, v.uncertainty
    if change is None:
        return "-"
    text = f"{change * 100:+.2f}%" + interval_text(change, unc)
    worse = v.worse
    if worse is None and direction in ("higher", "lower"):  # a file without it: the sign
        worse = -change if direction == "higher" else change
    if worse is None or round(change * 100, 2) == 0:
        return text
    words = ("slower", "faster") if name in SPEED else ("worse", "better")
    return f"{text} {words[0] if worse > 0 else words[1]}"


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


def plan_lines(
    entries: dict[str, Any],
    nodeids: list[str],
    where: str | None,
    skipped: dict[str, str] | None = None,
) -> list[str]:
    """--gpuperf-plan: the selected tests with the time each took when the baseline was
    saved, and the total. Tests this machine would skip (`skipped`: id -> the plugin's
    reason, e.g. too few GPUs) say so and count for nothing."""
    from ..baseline.schema import expected_durations

    skipped = skipped or {}
    run = [n for n in nodeids if n not in skipped]
    known = expected_durations(entries, run)
    rows = [
        [n, f"skipped here: {skipped[n]}"]
        if n in skipped
        else [n, f"{known[n]:.1f} s" if n in known else "unknown"]
        for n in nodeids
    ]
    unknown = len(run) - len(known)
    total = f"total: {sum(known.values()):.0f} s"
    if unknown:
        total += f" + {unknown} test(s) of unknown duration"
    if skipped:
        total += f"; {len(skipped)} test(s) skipped here"
    return [
        f"gpuperf plan: {len(nodeids)} test(s), durations from {where or 'no baseline'}",
        *table(["test", "expected"], rows),
        total,
    ]

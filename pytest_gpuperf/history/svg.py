"""The history dashboard's charts as inline SVG (history/site.py): text in the page, nothing
fetched, no script, drawn by the browser as the page loads. Measured against 500 figures x
365 nights (tools/measure_history.py --site; docs/history.md, "The dashboard"): a sparkline
keeps at most two points per pixel column (the lowest and highest of the runs it covers, so
a night far off still shows), and a figure's page draws every run.

A chart's x is the run's index in the history (runs of every profile share it), its y the
figure's value, upward whatever its direction; `Chart` holds what to draw."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

from ..core.results import fmt_number
from ..core.units import format_size

BAND, LINE, LEFT, SAVED, RESTART = "#c6dbef", "#08519c", "#999999", "#31a354", "#756bb1"
WORSE, BETTER = "#d62728", "#2ca02c"
Scale = Callable[[float], float]


@dataclass
class Mark:
    """A change drawn on a chart: a step's range shaded from its last good run to its first
    bad one, with the levels either side; a creep's span, with its line."""

    kind: str  # "step" | "creep"
    worse: bool
    last_good: int  # run indexes
    first_bad: int
    before: float  # the level (a step), or the value where the creep starts
    after: float
    label: str
    start: int = 0  # a step's levels: from this run to last_good, first_bad to `end`
    end: int = 0


@dataclass
class Chart:
    """One figure of one profile: its points (run index, median, interval or nan) and
    what the history knows of them."""

    x: list[int]
    y: list[float]
    low: list[float]
    high: list[float]
    unit: str
    runs: int  # the x axis spans every run of the history
    left: dict[int, str] = field(default_factory=dict)  # point index -> why left out
    saved: list[int] = field(default_factory=list)  # point indexes of saved sessions
    restarts: dict[int, str] = field(default_factory=dict)  # point index -> the accept's note
    marks: list[Mark] = field(default_factory=list)
    dates: tuple[str, str] = ("", "")  # the first and last run's date


def _scale(lo: float, hi: float, a: float, b: float) -> Scale:
    span = hi - lo or abs(hi) * 0.01 or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def thinned(xs: list[float], ys: list[float]) -> list[tuple[float, float]]:
    """At most two points per pixel column (x already in pixels): the column's lowest and
    highest, in the order they came, so a spike survives and a line of 365 runs in 140
    pixels stays a few KB."""
    out: list[tuple[float, float]] = []
    col: list[tuple[float, float]] = []
    for x, y in zip(xs, ys, strict=True):
        if col and int(x) != int(col[0][0]):
            out += _ends(col)
            col = []
        col.append((x, y))
    return out + (_ends(col) if col else [])


def _ends(col: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(col) <= 2:
        return col
    lo = min(range(len(col)), key=lambda i: col[i][1])
    hi = max(range(len(col)), key=lambda i: col[i][1])
    return [col[min(lo, hi)], col[max(lo, hi)]] if lo != hi else [col[lo]]


def _path(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def sparkline(chart: Chart, width: int = 150, height: int = 36) -> str:
    """The index's small chart: the figure's line (left-out runs skipped) and a dot at
    each change's first bad run, red for worse and green for better."""
    keep = [i for i in range(len(chart.y)) if i not in chart.left]
    if not keep:
        return f'<svg width="{width}" height="{height}" role="img"></svg>'
    ys = [chart.y[i] for i in keep]
    sx = _scale(0, max(chart.runs - 1, 1), 1, width - 1)
    sy = _scale(min(ys), max(ys), height - 3, 3)
    pts = thinned([sx(chart.x[i]) for i in keep], [sy(v) for v in ys])
    dots = "".join(f'<circle cx="{sx(m.first_bad):.1f}" cy="{sy(m.after):.1f}" r="2.5" '
                   f'fill="{WORSE if m.worse else BETTER}"/>' for m in chart.marks)  # fmt: skip
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
            f'<polyline fill="none" stroke="{LINE}" stroke-width="1" points="{_path(pts)}"/>'
            f"{dots}</svg>")  # fmt: skip


def chart_svg(chart: Chart, width: int = 760, height: int = 220) -> str:
    """A figure's page chart: the 95% interval band, the median line, runs left out as
    grey rings, saved sessions as green ticks under the axis, each step's range shaded with
    its levels either side, each creep's span with its line; a title on each mark."""
    left_px, right_px, top, bottom = 70, width - 10, 10, height - 30
    keep = [i for i in range(len(chart.y)) if i not in chart.left]
    vals = [chart.y[i] for i in range(len(chart.y))]
    vals += [v for v in chart.low + chart.high if math.isfinite(v)]
    lo, hi = min(vals), max(vals)
    sx = _scale(0, max(chart.runs - 1, 1), left_px, right_px)
    sy = _scale(lo, hi, bottom, top)
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'role="img" class="chart">']  # fmt: skip
    out += _axes(chart, sx, sy, lo, hi, (left_px, right_px, top, bottom))
    out += [_mark(m, sx, sy, top, bottom) for m in chart.marks]
    out.append(_band(chart, keep, sx, sy))
    pts = [(sx(chart.x[i]), sy(chart.y[i])) for i in keep]
    out.append(f'<polyline fill="none" stroke="{LINE}" stroke-width="1.2" '
               f'points="{_path(pts)}"/>')  # fmt: skip
    for i, why in chart.left.items():
        out.append(f'<circle cx="{sx(chart.x[i]):.1f}" cy="{sy(chart.y[i]):.1f}" r="3" '
                   f'fill="none" stroke="{LEFT}"><title>left out: {escape(why)}</title>'
                   "</circle>")  # fmt: skip
    for i, note in chart.restarts.items():
        x = sx(chart.x[i])
        out.append(f'<path d="M{x:.1f} {top}V{bottom}" stroke="{RESTART}" stroke-width="1.5" '
                   f'stroke-dasharray="2 2"><title>{escape(note)}</title></path>')  # fmt: skip
    for i in chart.saved:
        x = sx(chart.x[i])
        out.append(f'<path d="M{x:.1f} {bottom + 2}v6" stroke="{SAVED}" stroke-width="2">'
                   "<title>a saved baseline session</title></path>")  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _axes(chart: Chart, sx: Scale, sy: Scale, lo: float, hi: float,
          box: tuple[int, int, int, int]) -> list[str]:  # fmt: skip
    """The frame, three values on y (lowest, middle, highest) and the first and last dates."""
    left, right, top, bottom = box
    out = [f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
           'fill="none" stroke="#ccc"/>']  # fmt: skip
    for v in (lo, (lo + hi) / 2, hi):
        y = sy(v)
        text = format_size(v) if chart.unit == "bytes" else fmt_number(v)  # the unit: above
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}'
                   "</text>")  # fmt: skip
    first, last = chart.dates
    out.append(f'<text x="{left}" y="{bottom + 22}">{escape(first)}</text>')
    out.append(f'<text x="{right}" y="{bottom + 22}" text-anchor="end">{escape(last)}</text>')
    return out


def _band(chart: Chart, keep: list[int], sx: Scale, sy: Scale) -> str:
    """The interval band, one polygon per stretch of runs that recorded an interval."""
    out, run = [], []
    for i in [*keep, None]:
        if i is not None and math.isfinite(chart.low[i]) and math.isfinite(chart.high[i]):
            run.append(i)
            continue
        if len(run) > 1:
            up = [(sx(chart.x[j]), sy(chart.high[j])) for j in run]
            down = [(sx(chart.x[j]), sy(chart.low[j])) for j in reversed(run)]
            out.append(f'<polygon fill="{BAND}" fill-opacity="0.7" points="{_path(up + down)}"/>')
        run = []
    return "".join(out)


def _mark(m: Mark, sx: Scale, sy: Scale, top: int, bottom: int) -> str:
    colour = WORSE if m.worse else BETTER
    a, b = sx(m.last_good), sx(m.first_bad)
    title = f"<title>{escape(m.label)}</title>"
    shade = (f'<rect x="{a:.1f}" y="{top}" width="{max(b - a, 1):.1f}" height="{bottom - top}" '
             f'fill="{colour}" fill-opacity="0.15">{title}</rect>')  # fmt: skip
    if m.kind == "creep":
        return shade + (f'<line x1="{a:.1f}" y1="{sy(m.before):.1f}" x2="{b:.1f}" '
                        f'y2="{sy(m.after):.1f}" stroke="{colour}" stroke-width="2" '
                        f'stroke-dasharray="5 3">{title}</line>')  # fmt: skip
    return shade + (f'<path d="M{sx(m.start):.1f} {sy(m.before):.1f}H{a:.1f}M{b:.1f} '
                    f'{sy(m.after):.1f}H{sx(m.end):.1f}" stroke="{colour}" stroke-width="2" '
                    f'fill="none" stroke-opacity="0.8">{title}</path>')  # fmt: skip

"""Which charts a report has, from what each benchmark declares: its parameters (recorded
with each result: `Result.params`), its metrics and their units. Nothing here looks at the
text of a test id beyond splitting off the test function's name; nothing draws (plot.py
does).

- A numeric parameter that takes two values or more in a test's results (batch, tokens,
  sequence length, bytes) is an axis: a line chart with one panel per metric (throughput in
  its unit, each recorded figure) plus peak memory, one line per GPU run and per value of
  the test's other varying parameters. A result that ran out of memory is a point of its
  own (marked "OOM"). A value a test sweeps itself (`gpu_benchmark.params["batch"] = b`
  before each call, each call its own metric) is an axis the same way: its points share a
  line, named by their unit.
- The results on no line (a test without a numeric parameter, a figure each GPU run has at
  one value only) get a bar chart: one bar per GPU run for each combination of parameter
  values, one panel per metric, memory and figures such as the largest batch each their own.
- A panel with nothing to compare (every line a single point, a single bar) is left out.

Sizes are bounded whatever the input (drawing is what takes time: about 0.5 ms a point and
0.2 s a chart): at most MAX_CHARTS charts, MAX_PANELS panels a chart, MAX_SERIES lines a
panel, MAX_POINTS points a line, MAX_CATEGORIES groups of bars, CHART_POINTS points a
chart and REPORT_POINTS in all; labels are cut to LABEL_CHARS characters. What is left out
is said in the chart's caption or the report's notes; every figure stays in the tables."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.results import UNITS, Result

if TYPE_CHECKING:
    from ..summary import RunSummary

GIB = 2**30
MAX_CHARTS = 24
MAX_PANELS = 9
MAX_SERIES = 12
MAX_CATEGORIES = 24
MAX_POINTS = 64  # per line
CHART_POINTS = 400  # points (or bars) drawn in one chart: about 0.3 s of matplotlib
REPORT_POINTS = 3000  # in the whole report
LABEL_CHARS = 60
MEMORY = ("peak memory", "GiB")


@dataclass
class Run:
    """One input run, with the label its series carry in every chart."""

    summary: RunSummary
    label: str
    gpu: str
    memory_gib: float | None
    emulated: str | None
    emulated_gib: float | None
    price: float | None = None
    price_source: str | None = None


@dataclass
class Point:
    x: float | str  # the axis value (line) or the category (bar)
    y: float | None  # None: out of memory at this point
    err: tuple[float, float] | None = None  # (below, above) the value: its 95% interval


@dataclass
class Series:
    label: str
    points: list[Point] = field(default_factory=list)


@dataclass
class Panel:
    title: str
    unit: str
    series: list[Series] = field(default_factory=list)
    capacities: list[tuple[str, float]] = field(default_factory=list)  # (label, GiB) lines


@dataclass
class ChartSpec:
    kind: str  # "line" or "bar"
    test: str  # the test function's id
    axis: str  # the numeric parameter (line); the varying categorical ones (bar)
    panels: list[Panel]
    categories: list[str] = field(default_factory=list)  # bar charts: in the order met
    left_out: list[str] = field(default_factory=list)  # panels and values the limits cut
    lines_cut: dict[str, int] = field(default_factory=dict)  # panel title -> lines cut
    points_cut: int = 0  # points beyond MAX_POINTS of their line

    @property
    def title(self) -> str:
        by = f"by {self.axis}" if self.kind == "line" else f"per {self.axis or 'GPU run'}"
        return cut(f"{short_test(self.test)}: {by}", 2 * LABEL_CHARS)

    @property
    def caption(self) -> str:
        if self.kind == "line":
            text = (f"x: the test's parameter {self.axis!r}. One line per GPU run and per "
                    "value of its other varying parameters. Error bars: the 95% interval of "
                    "the median where the point has one. OOM: out of memory at that value. "
                    "Dashed: memory capacity (real, and emulated caps).")  # fmt: skip
        else:
            text = ("One bar per GPU run for each value of the test's parameters. Error "
                    "bars: the 95% interval of the median where the figure has one.")  # fmt: skip
        cut = [*self.left_out, *(f"{n} more line(s) of {title}"
                                 for title, n in self.lines_cut.items())]  # fmt: skip
        if self.points_cut:
            cut.append(f"{self.points_cut} point(s) beyond {MAX_POINTS} a line")
        if cut:
            text += " Not shown (see the tables): " + "; ".join(cut) + "."
        return text


@dataclass
class _Row:
    run: Run
    result: Result


def cut(text: str, limit: int = LABEL_CHARS) -> str:
    """A label: at most `limit` characters, control characters shown as \\xNN."""
    from ..text import plain

    text = plain(text[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def test_of(nodeid: str) -> str:
    """The test function's id: the node id without its parameter ids ("[...]")."""
    start = nodeid.find("::")
    bracket = nodeid.find("[", max(start, 0))
    return nodeid[:bracket] if bracket > 0 and nodeid.endswith("]") else nodeid


def short_test(test: str) -> str:
    """'benchmarks/test_finetune.py::test_qlora_step' -> 'test_finetune.py::test_qlora_step'."""
    path, sep, name = test.partition("::")
    return path.rsplit("/", 1)[-1] + sep + name


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def plan(runs: Iterable[Run]) -> tuple[list[ChartSpec], list[str]]:
    """The charts of these runs' results, and notes on what the limits left out."""
    tests: dict[str, list[_Row]] = {}
    for run in runs:
        for r in run.summary.results:
            if r.params:
                tests.setdefault(test_of(r.nodeid), []).append(_Row(run, r))
    charts: list[ChartSpec] = []
    for test, rows in tests.items():
        axes = _axes(rows)
        numeric = [n for n, (num, varies) in axes.items() if num and varies]
        drawn: set[int] = set()  # the rows on a line
        for axis in numeric:
            chart = _line_chart(test, rows, axis, axes, drawn)
            if chart is not None:
                charts.append(chart)
        rest = [row for row in rows if id(row) not in drawn]  # on no line: as bars
        bars = _bar_chart(test, rest, _axes(rest)) if rest else None
        if bars is not None:
            charts.append(bars)
    kept: list[ChartSpec] = []
    total = 0
    for chart in charts[:MAX_CHARTS]:
        total += _trim(chart)
        if total > REPORT_POINTS:
            break
        kept.append(chart)
    notes = []
    if len(kept) < len(charts):
        notes.append(f"{len(charts) - len(kept)} more chart(s) left out (at most "
                     f"{MAX_CHARTS}, {REPORT_POINTS:,} points in all); their figures are in "
                     "the tables")  # fmt: skip
    return kept, notes


def _trim(chart: ChartSpec) -> int:
    """Cut a chart's panels to CHART_POINTS points; returns the points kept."""
    total = 0
    for i, panel in enumerate(chart.panels):
        points = sum(len(s.points) for s in panel.series)
        if total + points > CHART_POINTS and i > 0:
            chart.left_out.append(", ".join(p.title for p in chart.panels[i:]))
            chart.panels = chart.panels[:i]
            break
        while points > CHART_POINTS and len(panel.series) > 1:  # the first panel: fewer lines
            points -= len(panel.series.pop().points)
            chart.lines_cut[panel.title] = chart.lines_cut.get(panel.title, 0) + 1
        total += points
    return total


def _axes(rows: list[_Row]) -> dict[str, tuple[bool, bool]]:
    """Each parameter: (numeric, takes two values or more)."""
    values: dict[str, set[Any]] = {}
    for row in rows:
        for name, v in row.result.params.items():
            values.setdefault(name, set()).add((type(v) is bool, v))
    return {
        name: (all(not b and is_number(v) for b, v in vs), len(vs) > 1)
        for name, vs in values.items()
    }


def _value(r: Result) -> float | None:
    if r.outcome != "ok" or r.throughput is None or not is_number(r.throughput.median):
        return None
    return float(r.throughput.median)


def _err(r: Result) -> tuple[float, float] | None:
    t = r.throughput
    if r.kind != "measured" or t is None or r.time is None or not r.time.ci_exact:
        return None
    if not all(is_number(v) for v in (t.median, t.ci_low, t.ci_high)):
        return None
    return max(0.0, t.median - t.ci_low), max(0.0, t.ci_high - t.median)


def _unit(r: Result) -> str:
    if r.throughput is not None:
        return r.throughput.unit
    return UNITS[r.unit][0] if r.unit in UNITS else r.unit


def _panel_key(r: Result, swept: bool) -> tuple[int, str, str]:
    """(order, title, unit): measured metrics first, memory, then recorded figures. Points a
    test sweeps itself are one metric each: they share the panel of their unit."""
    if r.kind == "recorded":
        return (2, _unit(r) if swept else r.metric or "value", _unit(r))
    return (0, r.figure_name if swept or not r.metric else r.metric, _unit(r))


def _label(params: dict[str, Any], names: Iterable[str], run: Run) -> str:
    parts = [f"{n}={params[n]}" for n in names if n in params]
    return cut(" ".join(parts) + " · " + run.label if parts else run.label)


def _line_chart(
    test: str, rows: list[_Row], axis: str, axes: dict[str, tuple[bool, bool]], drawn: set[int]
) -> ChartSpec | None:
    rows = [row for row in rows if axis in row.result.params]
    per_node: dict[tuple[int, str], set[Any]] = {}
    for row in rows:
        per_node.setdefault((id(row.run), row.result.nodeid), set()).add(row.result.params[axis])
    swept = {key for key, xs in per_node.items() if len(xs) > 1}
    others = [n for n, (_, varies) in axes.items() if varies and n != axis]
    panels: dict[tuple[int, str, str], dict[tuple[Any, ...], list[tuple[_Row, Point]]]] = {}
    for row in rows:
        r = row.result
        x = float(r.params[axis])
        key = _panel_key(r, (id(row.run), r.nodeid) in swept)
        ident = (id(row.run), *(r.params.get(n) for n in others))
        y = _value(r)
        if y is None and r.outcome != "oom":
            continue
        panels.setdefault(key, {}).setdefault(ident, []).append((row, Point(x, y, _err(r))))
        peak = _peak(r)
        if r.kind == "measured" and (r.outcome == "oom" or peak):
            gib = peak / GIB if r.outcome == "ok" and peak else None
            memory = panels.setdefault((1, *MEMORY), {}).setdefault(ident, [])
            memory.append((row, Point(x, gib)))
    return _spec("line", test, axis, panels, others, drawn)


def _peak(r: Any) -> int | None:
    """The step's own peak (allocated, the gated figure); results files written before it
    was recorded have only the reserved peak."""
    return r.peak_allocated if r.peak_allocated is not None else r.peak_reserved


def _bar_chart(
    test: str, rows: list[_Row], axes: dict[str, tuple[bool, bool]]
) -> ChartSpec | None:
    varying = [n for n, (_, varies) in axes.items() if varies]
    names = varying or list(axes)
    panels: dict[tuple[int, str, str], dict[tuple[Any, ...], list[tuple[_Row, Point]]]] = {}
    for row in rows:
        r = row.result
        category = cut(" ".join(f"{n}={r.params[n]}" for n in names if n in r.params))
        key = _panel_key(r, False)
        y = _value(r)
        if y is None and r.outcome != "oom":
            continue
        ident = (id(row.run),)
        panels.setdefault(key, {}).setdefault(ident, []).append((row, Point(category, y, _err(r))))
        peak = _peak(r)
        if r.kind == "measured" and r.outcome == "ok" and peak:
            memory = panels.setdefault((1, *MEMORY), {}).setdefault(ident, [])
            memory.append((row, Point(category, peak / GIB)))
    return _spec("bar", test, ", ".join(varying), panels, [], set())


def _spec(
    kind: str,
    test: str,
    axis: str,
    found: dict[tuple[int, str, str], dict[tuple[Any, ...], list[tuple[_Row, Point]]]],
    others: list[str],
    drawn: set[int],
) -> ChartSpec | None:
    panels: list[Panel] = []
    spec = ChartSpec(kind, test, axis, panels)
    categories: dict[str, None] = {}
    for (_, title, unit), by_series in sorted(found.items(), key=lambda kv: kv[0][0]):
        if kind == "line":  # a line needs two points; the other parameters shown if they vary
            by_series = {k: v for k, v in by_series.items() if len({p.x for _, p in v}) > 1}
        elif sum(len(v) for v in by_series.values()) < 2:
            by_series = {}  # a single bar compares nothing
        if not by_series:
            continue
        shown = [n for i, n in enumerate(others) if len({k[i + 1] for k in by_series}) > 1]
        panel = Panel(cut(title), cut(unit, 30))
        for pts in by_series.values():
            drawn.update(id(row) for row, _ in pts)
            row = pts[0][0]
            label = _label(row.result.params, shown, row.run)
            points = sorted((p for _, p in pts), key=_order)
            if len(points) > MAX_POINTS:
                spec.points_cut += len(points) - MAX_POINTS
            panel.series.append(Series(label, points[:MAX_POINTS]))
            for _, p in pts:
                categories.setdefault(str(p.x), None)
        panel.series.sort(key=lambda s: s.label)
        if len(panel.series) > MAX_SERIES:
            spec.lines_cut[panel.title] = len(panel.series) - MAX_SERIES
            panel.series = panel.series[:MAX_SERIES]
        if (title, unit) == MEMORY:
            panel.capacities = _capacities([pts[0][0].run for pts in by_series.values()])
        panels.append(panel)
    if not panels:
        return None
    if len(panels) > MAX_PANELS:
        spec.left_out.append(", ".join(p.title for p in panels[MAX_PANELS:]))
        spec.panels = panels[:MAX_PANELS]
    if kind == "bar":
        spec.categories = list(categories)[:MAX_CATEGORIES]
        if len(categories) > MAX_CATEGORIES:
            spec.left_out.append(f"{len(categories) - MAX_CATEGORIES} more parameter value(s)")
            kept = set(spec.categories)
            for panel in spec.panels:
                for series in panel.series:
                    series.points = [p for p in series.points if p.x in kept]
    return spec


def _order(p: Point) -> tuple[int, float, str]:
    return (0, p.x, "") if isinstance(p.x, float) else (1, 0.0, p.x)


def _capacities(runs: list[Run]) -> list[tuple[str, float]]:
    """Memory lines of the runs in a memory panel: each GPU's memory and emulated caps."""
    out: dict[str, float] = {}
    for run in runs:
        if run.memory_gib and run.gpu != "CPU":  # the host's memory is no GPU's limit
            out[cut(f"{run.gpu.removeprefix('NVIDIA ')} {run.memory_gib:.0f} GiB")] = run.memory_gib
        if run.emulated and run.emulated_gib:
            out[cut(f"{run.emulated} cap {run.emulated_gib:g} GiB (emulated)")] = run.emulated_gib
    return sorted(out.items(), key=lambda t: t[1])

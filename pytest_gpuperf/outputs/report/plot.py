"""Drawing the report's charts with matplotlib, as inline SVG: no script, no font download;
text stays text (searchable, sharp at any zoom).

Every text in a chart comes from a results file (test ids, parameter values, GPU names)
and is drawn as plain text: matplotlib's math parser is off, so `$\\frac{a}{b}$` or
`$HOME_$USER` is shown as written instead of failing the report; tick labels are set as
plain numbers (matplotlib's default log-axis labels are math text). Figures are made with
matplotlib's object API (no pyplot, no global state), under one rc_context."""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .charts import ChartSpec, Panel, cut

STYLE: Any = {
    "svg.fonttype": "none",  # text as text: small, searchable
    "svg.hashsalt": "gpuperf",  # the same input gives the same SVG ids
    "text.parse_math": False,  # a `$` in a label is a dollar sign
    "text.usetex": False,
    "axes.formatter.use_mathtext": False,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
}


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(STYLE), warnings.catch_warnings():
        # a character no font has is drawn as a box: the text is in the SVG all the same
        warnings.filterwarnings("ignore", "Glyph .* missing from font", UserWarning)
        yield


def _figure(rows: int, cols: int, width: float, height: float) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: inline SVG


def chart_svg(spec: ChartSpec) -> str:
    """One chart: its panels side by side (three a row), one legend under them."""
    with _style():
        n = len(spec.panels)
        cols = min(3, n)
        rows = math.ceil(n / cols)
        fig, axes = _figure(rows, cols, 3.8, 2.9)
        for ax in axes.flat[n:]:
            ax.set_axis_off()
        labels = sorted({s.label for p in spec.panels for s in p.series})
        colors = {label: f"C{i % 10}" for i, label in enumerate(labels)}
        styles = {label: ("-", "--", ":", "-.")[(i // 10) % 4] for i, label in enumerate(labels)}
        handles: dict[str, Any] = {}
        for ax, panel in zip(axes.flat, spec.panels, strict=False):
            if spec.kind == "line":
                _line_panel(ax, panel, colors, styles, handles)
            else:
                _bar_panel(ax, panel, spec.categories, colors, handles)
            ax.set_title(panel.title, fontsize=8)
            ax.set_ylabel(panel.unit, fontsize=8)
            ax.tick_params(labelsize=7)
        if handles:
            fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                       ncol=min(3, len(handles)), fontsize=7, frameon=False)  # fmt: skip
        return _svg(fig)


def _line_panel(ax: Any, panel: Panel, colors: dict[str, str], styles: dict[str, str],
                handles: dict[str, Any]) -> None:  # fmt: skip
    xs_all: set[float] = set()
    top = 0.0
    for i, s in enumerate(panel.series):
        ok = [p for p in s.points if p.y is not None and isinstance(p.x, float)]
        color = colors[s.label]
        if ok:
            line = ax.errorbar([p.x for p in ok], [p.y for p in ok],
                               yerr=_yerr([p.err for p in ok]), marker="o", ms=4, capsize=2,
                               color=color, ls=styles[s.label])  # fmt: skip
            handles.setdefault(s.label, line)
            top = max(top, *(p.y for p in ok if p.y is not None))
        for p in s.points:
            if isinstance(p.x, float):
                xs_all.add(p.x)
            if p.y is None and isinstance(p.x, float):  # out of memory here
                ax.axvline(p.x, color=color, ls=":", lw=1)
                ax.annotate("OOM", (p.x, 0.02 + 0.06 * (i % 8)), xycoords=("data", "axes fraction"),
                            color=color, fontsize=7, ha="right")  # fmt: skip
    for text, gib in panel.capacities:
        if gib <= max(top * 1.6, 1):  # a 141 GiB line would flatten a 40 GiB sweep
            ax.axhline(gib, color="grey", ls="--", lw=1)
            ax.annotate(text, (0.01, gib), xycoords=("axes fraction", "data"), fontsize=6,
                        va="bottom", color="dimgray")  # fmt: skip
    _x_ticks(ax, sorted(xs_all))
    if top >= 0:
        ax.set_ylim(bottom=0)


def _x_ticks(ax: Any, xs: list[float]) -> None:
    """Ticks at the values measured, as plain numbers, none crowding the one before it;
    base-2 logarithmic when the values span 32x or more (bytes, tokens)."""
    from matplotlib.ticker import NullFormatter, NullLocator

    if not xs:
        return
    log = xs[0] > 0 and xs[-1] / xs[0] >= 32
    if log:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
    pos = [math.log2(x) for x in xs] if log else list(xs)
    gap = (pos[-1] - pos[0]) / 14
    ticks = [xs[0]]
    last = pos[0]
    for x, at in zip(xs[1:], pos[1:], strict=True):
        if at - last >= gap:
            ticks.append(x)
            last = at
    ax.set_xticks(ticks, [_number(x) for x in ticks])


def _number(x: float) -> str:
    """1,048,576 (a whole number, in full); 0.5; 1.5e+20."""
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:.6g}"


def _yerr(errs: list[tuple[float, float] | None]) -> list[list[float]] | None:
    """Error bars as matplotlib takes them; None when no point has an interval."""
    if all(e is None for e in errs):
        return None
    return [[(e or (0.0, 0.0))[0] for e in errs], [(e or (0.0, 0.0))[1] for e in errs]]


def _bar_panel(ax: Any, panel: Panel, categories: list[str], colors: dict[str, str],
               handles: dict[str, Any]) -> None:  # fmt: skip
    width = 0.8 / max(1, len(panel.series))
    index = {c: j for j, c in enumerate(categories)}
    for i, s in enumerate(panel.series):
        xs, ys, errs = [], [], []
        for p in s.points:
            j = index.get(str(p.x))
            if j is None:
                continue
            if p.y is None:  # out of memory
                ax.annotate("OOM", (j + i * width, 0), fontsize=7, ha="center", va="bottom",
                            color=colors[s.label])  # fmt: skip
                continue
            xs.append(j + i * width)
            ys.append(p.y)
            errs.append(p.err)
        if xs:
            bars = ax.bar(xs, ys, width, yerr=_yerr(errs), capsize=2, color=colors[s.label])
            handles.setdefault(s.label, bars)
    ax.set_xticks([j + width * (len(panel.series) - 1) / 2 for j in range(len(categories))],
                  [cut(c, 32) for c in categories], rotation=20, ha="right",
                  fontsize=7)  # fmt: skip


def history_svg(picks: list[tuple[str, str, str, list[dict[str, Any]], dict[str, Any]]]) -> str:
    """Per judged metric (title, status, unit, saved sessions, now): the baseline's saved
    session medians with their intervals, and this run's, coloured by its verdict."""
    with _style():
        cols = 3
        rows = math.ceil(len(picks) / cols)
        fig, axes = _figure(rows, cols, 3.67, 2.6)
        for ax in axes.flat[len(picks) :]:
            ax.set_axis_off()
        handles: dict[str, Any] = {}  # one legend under the panels: inside one, it hid data
        for ax, (title, status, unit, hist, now) in zip(axes.flat, picks, strict=False):
            xs = list(range(len(hist)))
            (saved,) = ax.plot(xs, [h["median"] for h in hist], "o-", color="tab:blue", ms=4)
            handles.setdefault("saved sessions", saved)
            for x, h in zip(xs, hist, strict=True):  # each saved session's interval, if saved
                span = _span(h["median"], h.get("ci_low"), h.get("ci_high"))
                if span is not None:
                    ax.errorbar([x], [h["median"]], yerr=[[span[0]], [span[1]]],
                                color="tab:blue", capsize=2)  # fmt: skip
            x = len(hist)
            span = _span(now["median"], now.get("ci_low"), now.get("ci_high"))
            yerr = [[span[0]], [span[1]]] if span is not None else None
            color = {"regressed": "tab:red", "improved": "tab:green"}.get(status, "black")
            mark = ax.errorbar([x], [now["median"]], yerr=yerr, fmt="s", color=color, capsize=2)
            handles.setdefault(f"this run: {status}", mark)
            ax.set_xticks([*xs, x], [*(str(i + 1) for i in xs), "now"], fontsize=7)
            ax.set_title(cut(title, 56), fontsize=7)
            ax.set_ylabel(cut(unit, 30), fontsize=7)
            ax.tick_params(labelsize=7)
        if handles:
            fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                       ncol=min(4, len(handles)), fontsize=7, frameon=False)  # fmt: skip
        return _svg(fig)


def _span(median: Any, lo: Any, hi: Any) -> tuple[float, float] | None:
    """An interval as (below, above) its median, for an error bar; None without one."""
    ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (median, lo, hi))
    if not ok:
        return None
    below, above = max(0.0, median - lo), max(0.0, hi - median)
    return (below, above) if math.isfinite(below) and math.isfinite(above) else None

"""The HTML report: one self-contained file, built from the summaries of one or more runs
(different GPUs, emulated memory caps, dates), that opens offline from a CI artifact.

The page is a jinja2 template (templates/report.html.j2) rendered with autoescaping: every
text from a results file (test ids, parameters, GPU names, notes, verdicts) is escaped
wherever it lands, in an element or an attribute. Charts come from what each benchmark
declares (charts.py: its parameters and units), never from its test id, and are drawn by
matplotlib as inline SVG (plot.py). The only script is a few lines that filter the verdict
table. Renderers receive data: reading and checking files is runfile.py's job.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from ...core.results import Result, format_figure
from ...judging.verdict import SEVERITY
from ..summary import RunSummary
from ..text import verdict_rows
from .charts import Run

GIB = 2**30
HISTORY_LIMIT = 12  # history panels: the worst verdicts first


@dataclass
class Report:
    runs: list[Run]
    problems: list[str] = field(default_factory=list)  # inputs skipped or doubtful, and why
    baselines: dict[str, Any] = field(default_factory=dict)  # file name -> BaselineFile


def _gpu_of(s: RunSummary) -> tuple[str, float | None]:
    gpus = s.device.get("gpus") or []
    if gpus and isinstance(gpus[0], dict):
        g = gpus[0]
        mem = g.get("memory_total")
        return str(g.get("name") or "GPU"), (mem / GIB if _number(mem) else None)
    mem = s.device.get("host_memory")
    return "CPU", (mem / GIB if _number(mem) else None)


def _number(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def prepare(
    summaries: list[RunSummary],
    profiles: Callable[[str], Any] | None = None,
    baselines: dict[str, Any] | None = None,
) -> Report:
    """Label the runs and find their prices; note what is doubtful (two GPUs under one
    profile name, a profile without a price) without dropping anything valid."""
    from ...hardware.profiles import PRICE_SOURCE, ProfileError

    def profile(name: str | None) -> Any:
        """The named profile, or None (no registry, no name, or a name it does not know)."""
        if profiles is None or not name:
            return None
        try:
            return profiles(name)
        except ProfileError:
            return None

    runs: list[Run] = []
    problems: list[str] = []
    gpus_of_profile: dict[str, set[str]] = {}
    for s in summaries:
        gpu, mem = _gpu_of(s)
        emu = s.emulated[0] if s.emulated else None
        emu_gib = s.emulated[1] if s.emulated else None
        label = gpu.removeprefix("NVIDIA ") + (f" as {emu}" if emu else "")
        run = Run(s, label, gpu, mem, emu, emu_gib)
        if s.profile:
            gpus_of_profile.setdefault(s.profile, set()).add(gpu)
        prof, emu_prof = profile(s.profile), profile(emu)
        if emu_gib is None and emu_prof is not None and emu_prof.memory_gib:
            run.emulated_gib = float(emu_prof.memory_gib)
        if prof is not None and prof.price_per_hour is not None:
            run.price = float(prof.price_per_hour)
            run.price_source = PRICE_SOURCE if prof.source == "built-in" else prof.source
        elif s.profile != "cpu":
            problems.append(
                f"no price per hour for profile {s.profile or 'unknown'} ({run.label}): its "
                "cost is not shown; set price_per_hour in [tool.gpuperf.profiles."
                f"{s.profile or 'NAME'}] of pyproject.toml"
            )
        runs.append(run)
    for prof_name, gpus in sorted(gpus_of_profile.items()):
        if len(gpus) > 1:
            problems.append(
                f"profile {prof_name!r} names runs of different GPUs ({', '.join(sorted(gpus))}): "
                "they are shown as separate series, labelled by GPU, and not compared"
            )
    seen = Counter(run.label for run in runs)
    count: Counter[str] = Counter()
    for run in runs:  # the same card twice (two dates, two runners): number them
        if seen[run.label] > 1:
            count[run.label] += 1
            src = run.summary.source or ""
            run.label = f"{run.label} #{count[run.label]}" + (f" ({_short(src)})" if src else "")
    return Report(runs, problems, dict(baselines or {}))


def baseline_name(summary: RunSummary) -> str:
    """The file name of the baseline a run was judged against: the one it recorded, else
    its profile's (an emulated run's baseline is `<profile>@<card>.json`, never the card's
    own). A plain file name, never a path: it is looked up in --baseline-dir."""
    if summary.baseline_path:
        name = _short(summary.baseline_path)
    else:
        name = _short(f"{summary.profile}.json") if summary.profile else ""
    return "" if name in (".", "..") else name


def _short(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _short_key(r: Result) -> str:
    key = r.key
    if "::" in key and key.startswith(("benchmarks/", "tests/")):
        return key.split("::", 1)[1]
    return key


# ------------------------------------------------------------------------------ charts


@dataclass
class Chart:
    title: str
    svg: Any  # markupsafe.Markup: the drawn SVG, inserted as it is
    caption: str


def charts(report: Report) -> list[Chart]:
    """History first (from the baselines), then each benchmark's charts by its parameters.
    A chart that cannot be drawn is named in the report's notes; the others are drawn."""
    from markupsafe import Markup

    from . import charts as planner
    from . import plot

    out: list[Chart] = []
    picks = history_picks(report)
    if picks:
        _draw(report, out, "History: the baseline's saved sessions and this run",
              lambda: plot.history_svg(picks),
              "Blue: the median of each saved session with its interval (sessions saved "
              "before intervals were kept: the last only); square: this run with its "
              "interval, red when regressed, green when improved. Worst first.")  # fmt: skip
    specs, notes = planner.plan(report.runs)
    report.problems += notes
    for spec in specs:
        _draw(report, out, spec.title, functools.partial(plot.chart_svg, spec), spec.caption)
    for chart in out:
        chart.svg = Markup(chart.svg)  # matplotlib escapes the text it writes
    return out


def _draw(report: Report, out: list[Chart], title: str, draw: Callable[[], str],
          caption: str) -> None:  # fmt: skip
    try:
        svg = draw()
    except ImportError:
        raise  # matplotlib missing: the report is not written (the caller says so)
    except Exception as exc:  # one chart's failure must not cost the report
        report.problems.append(f"chart {title!r} could not be drawn: {type(exc).__name__}: "
                               f"{str(exc)[:200]}")  # fmt: skip
        return
    out.append(Chart(title, svg, caption))


def history_picks(report: Report, limit: int = HISTORY_LIMIT) -> list[Any]:
    """Per judged metric with a saved history: (title, status, unit, sessions, now), the
    worst verdicts first, at most `limit`."""
    from ...core.figures import metrics_of

    picks = []
    for run in report.runs:
        base = report.baselines.get(baseline_name(run.summary))
        if base is None:
            continue
        for r in run.summary.results:
            entry = base.entries.get(r.key)
            if entry is None:
                continue
            now_metrics = metrics_of(r)
            for name, v in r.verdicts.items():
                m = entry.get("metrics", {}).get(name)
                now = now_metrics.get(name)
                if m is None or now is None:
                    continue
                hist = [dict(h) for h in m.get("history", []) if _number(h.get("median"))]
                if hist and "ci_low" not in hist[-1] and m.get("ci_low") is not None:
                    hist[-1].update(ci_low=m["ci_low"], ci_high=m.get("ci_high"))
                title = f"{_short_key(r)} {name}"
                pick = (title, str(v.status), now.get("unit", ""), hist, now)
                picks.append((SEVERITY.get(v.status, 99), r.key, pick))
    picks.sort(key=lambda p: (p[0], p[1]))
    return [p[2] for p in picks[:limit]]


# ------------------------------------------------------------------------------ tables


@dataclass
class Row:
    cells: list[str]
    verdict: str | None = None  # the verdict table's rows: the filter's key


@dataclass
class Table:
    header: list[str]
    rows: list[Row]


def _baseline_cell(s: RunSummary) -> str:
    """The baseline a run names, and whether it judged anything against it."""
    if not s.baseline_path:
        return "-"
    statuses = {str(v.status) for r in s.results for v in r.verdicts.values()}
    if statuses == {"new"}:  # none at all: a save, or a run not judged
        return f"{s.baseline_path} (nothing of this run in it: every result new)"
    return s.baseline_path


def runs_table(report: Report) -> Table:
    rows = []
    for run in report.runs:
        s = run.summary
        emulated = run.emulated or "-"
        if run.emulated and run.emulated_gib:
            emulated = f"{run.emulated} ({run.emulated_gib:g} GiB)"
        rows.append(Row([run.label, s.describe, s.profile or "unknown", emulated,
                         str(len(s.results)), _baseline_cell(s),
                         _short(s.source) if s.source else "this run"]))  # fmt: skip
    return Table(["run", "device", "profile", "emulated", "results", "baseline", "source"], rows)


def verdict_table(report: Report) -> tuple[Table, list[tuple[str, int]]]:
    """The verdicts of every run, worst first, and how many of each (for the filter)."""
    rows = []
    for run in report.runs:
        for row in verdict_rows(run.summary.results, run.summary.missing):
            rows.append([row[0], run.label, *row[1:]])
    rows.sort(key=lambda r: SEVERITY.get(r[0].lower(), 99))  # worst first, as the terminal
    counts = list(Counter(r[0] for r in rows).items())  # in the rows' order: worst first
    header = ["verdict", "run", "benchmark", "metric", "now", "change ± interval",
              "detects (tolerance)", "flags"]  # fmt: skip
    return Table(header, [Row(r, verdict=r[0]) for r in rows]), counts


def results_table(report: Report) -> Table:
    rows = []
    for run in report.runs:
        for r in run.summary.results:
            if r.value is None and r.outcome == "ok":
                continue
            if r.outcome != "ok":
                rows.append([run.label, _short_key(r), r.outcome.upper(), "", "", ""])
                continue
            t = r.throughput
            assert t is not None
            flags = r.flags()
            if r.kind == "recorded":
                median, interval = format_figure(t.median, t.unit), "recorded"
                flags += r.notes
            else:
                median = f"{t.median:,.4g} {t.unit}"
                if r.time is not None and r.time.ci_exact:
                    interval = f"{t.ci_low:,.4g} – {t.ci_high:,.4g}"
                else:
                    interval = f"none (n={r.time.n if r.time else 0})"
            energy = ""
            if r.energy_per_unit_j is not None:
                energy = f"{r.energy_per_unit_j:.3g} J/{r.unit.rstrip('s') or r.unit}"
            rows.append([run.label, _short_key(r), median, interval, "; ".join(flags), energy])
    header = ["run", "benchmark", "median", "95% interval", "flags, notes", "energy"]
    return Table(header, [Row(r) for r in rows])


def cost_table(report: Report) -> tuple[Table, str]:
    """Dollars per million tokens and joules per token of every token throughput, and the
    prices used."""
    rows = []
    for run in report.runs:
        for r in run.summary.results:
            t = r.throughput
            if t is None or t.unit != "tokens/s" or r.outcome != "ok" or not t.median:
                continue
            if run.price is not None:
                usd = run.price / (t.median * 3600) * 1e6
                lo = run.price / (t.ci_high * 3600) * 1e6 if t.ci_high else None
                hi = run.price / (t.ci_low * 3600) * 1e6 if t.ci_low else None
                cost = f"${usd:,.3g}"
                if r.time is not None and r.time.ci_exact and lo is not None and hi is not None:
                    cost += f" (${lo:,.3g}–{hi:,.3g})"
            else:
                cost = "no price"
            energy = f"{r.energy_per_unit_j:.3g}" if r.energy_per_unit_j is not None else "-"
            note = "speed of the real card, memory of the emulated one" if run.emulated else ""
            rows.append([run.label, _short_key(r), f"{t.median:,.4g}", cost, energy, note])
    prices = "; ".join(
        dict.fromkeys(  # each price once, in the runs' order
            f"${run.price:g}/h ({run.summary.profile}, {run.price_source})"
            for run in report.runs
            if run.price is not None
        )
    )
    header = ["run", "benchmark", "tokens/s", "$ per million tokens", "joules per token", ""]
    return Table(header, [Row(r) for r in rows]), prices


# ------------------------------------------------------------------------------ page

@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    """The templates' jinja2 environment, made on the first report (jinja2 loads then)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=True,  # every value escaped, in text and in attributes
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _template() -> Any:
    return _environment().get_template("report.html.j2")


def build_html(
    summaries: list[RunSummary],
    *,
    profiles: Callable[[str], Any] | None = None,
    baselines: dict[str, Any] | None = None,
    problems: Iterable[str] = (),
    title: str = "gpuperf report",
) -> str:
    """The report of these runs as one HTML document (no external resource). Raises
    MissingExtra (an ImportError) naming the report extra when its packages are missing,
    also for a report that would draw no chart."""
    from ...core.extras import needs

    with needs("report"):
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    template = _template()
    report = prepare(summaries, profiles, baselines)
    report.problems = [*problems, *report.problems]
    drawn = charts(report)
    verdicts, counts = verdict_table(report)
    cost, prices = cost_table(report)
    bare = sum(1 for run in report.runs if not any(r.params for r in run.summary.results))
    return str(
        template.render(
            title=title,
            generated=f"{datetime.now(UTC):%Y-%m-%d %H:%M}",
            problems=report.problems,
            runs=runs_table(report),
            verdicts=verdicts,
            verdict_counts=counts,
            charts=drawn,
            unparametrized=bare,
            cost=cost,
            prices=prices,
            results=results_table(report),
        )
    )

"""The HTML report: one self-contained file, built from the summaries of one or more runs
(different GPUs, emulated memory caps, dates), that opens offline from a CI artifact.

Charts are drawn by matplotlib as inline SVG: no script, no CDN, no font download; text
stays text (searchable, sharp at any zoom) and a chart weighs tens of kilobytes. The only
script is a few lines that filter the verdict table. Layout follows the reports users asked
for: fine-tuning tokens/s per batch size per GPU with the out-of-memory point and the memory
capacity lines; generation tokens/s as new tokens grow and time to first token; matmul and
cast throughput per dtype against the copy bandwidth; the hidden-cast comparison; cost and
energy per token. Every figure carries its interval (or says it has none) and its GPU.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..results import Result
from ..verdict import SEVERITY
from .summary import RunSummary
from .text import verdict_rows

GIB = 2**30


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
class Report:
    runs: list[Run]
    problems: list[str] = field(default_factory=list)  # inputs skipped or doubtful, and why
    baselines: dict[str, Any] = field(default_factory=dict)  # profile -> BaselineFile


def _gpu_of(s: RunSummary) -> tuple[str, float | None]:
    gpus = s.device.get("gpus") or []
    if gpus and isinstance(gpus[0], dict):
        g = gpus[0]
        mem = g.get("memory_total")
        return str(g.get("name") or "GPU"), (mem / GIB if isinstance(mem, int | float) else None)
    mem = s.device.get("host_memory")
    return "CPU", (mem / GIB if isinstance(mem, int | float) else None)


def prepare(
    summaries: list[RunSummary],
    profiles: Callable[[str], Any] | None = None,
    baselines: dict[str, Any] | None = None,
) -> Report:
    """Label the runs and find their prices; note what is doubtful (two GPUs under one
    profile name, a profile without a price) without dropping anything valid."""
    from ..profiles import PRICE_SOURCE, ProfileError

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
    its profile's (an emulated run's baseline is `<profile>@<card>.json`, never the card's own)."""
    if summary.baseline_path:
        return _short(summary.baseline_path)
    return f"{summary.profile}.json" if summary.profile else ""


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------ charts


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",  # text as text: small, searchable
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "figure.dpi": 100,
        }
    )
    return plt


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    _plt().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: inline SVG


def _span(median: Any, lo: Any, hi: Any) -> tuple[float, float] | None:
    """An interval as (below, above) its median, for an error bar; None without one."""
    if not all(isinstance(v, int | float) for v in (median, lo, hi)):
        return None
    below, above = max(0.0, median - lo), max(0.0, hi - median)
    return (below, above) if math.isfinite(below) and math.isfinite(above) else None


def _err(r: Result) -> tuple[float, float] | None:
    """The throughput's interval as (below, above) the median, or None without one."""
    t = r.throughput
    if t is None or r.time is None or not r.time.ci_exact:
        return None
    return _span(t.median, t.ci_low, t.ci_high)


SWEEP = re.compile(r"test_qlora_batch_sweep\[(?P<preset>[^\]]+)\]::batch(?P<batch>\d+)$")
FIRST_OOM = re.compile(r"test_qlora_batch_sweep\[(?P<preset>[^\]]+)\]::first_oom_batch$")
MAX_BATCH = re.compile(r"test_qlora_max_batch\[(?P<preset>[^\]]+)\]::max_batch$")
COMPILED_KINDS = ("compiled", "autotuned")  # the decoder's step through torch.compile
_COMPILED = rf"(?P<compiled>-(?:{'|'.join(COMPILED_KINDS)}))?\]"
GEN = re.compile(
    r"test_generate_(?P<kind>static|eager)\[(?P<preset>.+)-b(?P<batch>\d+)-(?P<n>\d+)tok"
    + _COMPILED
    + r"(::(?P<metric>\w+))?$"
)
_SCALE = (
    r"test_generate_scale\[(?P<preset>.+)-(?P<weights>bf16|nf4)-b(?P<batch>\d+)" + _COMPILED
)
SCALE_GEN = re.compile(_SCALE + r"::tokens(?P<n>\d+)$")
SCALE_TTFT = re.compile(_SCALE + r"::time_to_first_token_ms$")
MATMUL = re.compile(r"test_matmul\[(?P<dtype>\w+)\]$")
CAST = re.compile(r"test_cast_bandwidth\[(?P<cast>[^\]]+)\]$")
COPY = re.compile(r"test_copy_bandwidth$")
ADAPTERS = ("fp32", "bf16")
_HIDDEN = rf"test_hidden_casts\[(?P<preset>.+)-(?P<adapters>{'|'.join(ADAPTERS)})-adapters\]"
HIDDEN = re.compile(_HIDDEN + "$")
HIDDEN_CASTS = re.compile(_HIDDEN + "::casts_per_step$")


def _short_key(r: Result) -> str:
    key = r.key
    if "::" in key and key.startswith(("benchmarks/", "tests/")):
        return key.split("::", 1)[1]
    return key


def _matches(run: Run, pattern: re.Pattern[str]) -> list[tuple[re.Match[str], Result]]:
    out = []
    for r in run.summary.results:
        m = pattern.search(_short_key(r))
        if m:
            out.append((m, r))
    return out


@dataclass
class Chart:
    title: str
    svg: str
    caption: str


def finetune_charts(report: Report) -> list[Chart]:
    plt = _plt()
    series = []  # (run, preset, [(batch, result)], oom batch)
    for run in report.runs:
        by_preset: dict[str, list[tuple[int, Result]]] = {}
        for m, r in _matches(run, SWEEP):
            by_preset.setdefault(m["preset"], []).append((int(m["batch"]), r))
        ooms = {m["preset"]: r.value for m, r in _matches(run, FIRST_OOM)}
        for preset, points in sorted(by_preset.items()):
            series.append((run, preset, sorted(points, key=lambda p: p[0]), ooms.get(preset)))
    if not series:
        return []
    fig, (ax, mx) = plt.subplots(1, 2, figsize=(11, 4))
    capacities: dict[str, float] = {}
    for run, preset, points, oom in series:
        ok = [(b, r) for b, r in points if r.outcome == "ok" and r.throughput is not None]
        name = f"{preset} · {run.label}"
        if ok:
            xs = [b for b, _ in ok]
            ys = [r.throughput.median for _, r in ok if r.throughput is not None]
            errs = [_err(r) or (0.0, 0.0) for _, r in ok]
            line = ax.errorbar(
                xs, ys, yerr=list(zip(*errs, strict=True)), marker="o", ms=4, capsize=2,
                label=name,
            )  # fmt: skip
            color = line[0].get_color()
            mems = [(b, r.peak_reserved / GIB) for b, r in ok if r.peak_reserved]
            if mems:
                mx.plot([b for b, _ in mems], [g for _, g in mems], marker="o", ms=4,
                        color=color, label=name)  # fmt: skip
            if oom is not None:
                ax.scatter([oom], [0], marker="x", s=60, color=color, zorder=5)
                ax.annotate(f"OOM {oom:g}", (oom, 0), textcoords="offset points",
                            xytext=(0, 6), ha="center", color=color, fontsize=8)  # fmt: skip
                mx.axvline(oom, color=color, ls=":", lw=1)
        if run.memory_gib and run.gpu != "CPU":  # the CPU's sweep has no GPU memory
            name = f"{run.gpu.removeprefix('NVIDIA ')} {run.memory_gib:.0f} GiB"
            capacities[name] = run.memory_gib
        if run.emulated and run.emulated_gib:
            capacities[f"{run.emulated} cap {run.emulated_gib:g} GiB (emulated)"] = run.emulated_gib
    top = max([float(y) for line in mx.get_lines() for y in line.get_ydata()] or [0.0])
    for text, gib in sorted(capacities.items(), key=lambda t: t[1]):
        if gib <= max(top * 1.6, 1):  # a 141 GiB line would flatten a 40 GiB sweep
            mx.axhline(gib, color="grey", ls="--", lw=1)
            mx.annotate(text, (0.01, gib), xycoords=("axes fraction", "data"), fontsize=7,
                        va="bottom", color="dimgray")  # fmt: skip
    ax.set(xlabel="batch size (sequences)", ylabel="tokens/s", title="QLoRA step throughput")
    mx.set(xlabel="batch size (sequences)", ylabel="peak reserved GiB", title="Memory")
    ax.set_ylim(bottom=0)
    _legend_below(ax)
    return [
        Chart(
            "Fine-tuning: tokens/s and memory per batch size",
            _svg(fig),
            "Error bars: 95% interval of the median where the point has one (a sweep point is "
            "3 timed steps: its range, no interval). x: the first batch that ran out of "
            "memory. Dashed lines: memory capacity (real, and emulated caps). Emulated runs "
            "show the big card's speed with the emulated card's memory.",
        )
    ]


def max_batch_section(report: Report) -> str:
    """The largest batch that fits, per preset and run (the max-batch search)."""
    rows = []
    for run in report.runs:
        for m, r in _matches(run, MAX_BATCH):
            if r.value is not None:
                note = "; ".join(r.notes)
                rows.append([m["preset"], run.label, f"{r.value:g}", note])
    if not rows:
        return ""
    rows.sort()
    return "<h3>Largest batch that fits</h3>" + _table(
        ["preset", "run", "max batch", "note"], rows
    )


def generation_charts(report: Report) -> list[Chart]:
    plt = _plt()
    rows = []  # (run, kind, preset, batch, n, tokens/s, err, ttft ms)
    for run in report.runs:
        found: dict[tuple[str, str, int, int], dict[str, Result]] = {}
        for m, r in _matches(run, GEN):
            kind = m["compiled"][1:] if m["compiled"] else m["kind"]
            key = (kind, m["preset"], int(m["batch"]), int(m["n"]))
            found.setdefault(key, {})[m["metric"] or "main"] = r
        for (kind, preset, batch, n), ms in found.items():
            main = ms.get("decode_tokens_per_s") or ms.get("generate") or ms.get("main")
            if main is None or main.value is None:
                continue
            first = ms.get("time_to_first_token_ms")
            err = _err(main) if main.kind == "measured" else None
            rows.append((run, kind, preset, batch, n, main.value, err,
                         first.value if first else None))  # fmt: skip
        # the scale tier: one decoder per model, weights and batch, timed at each length
        ttft_of = {
            (m["preset"], m["weights"], m["batch"], m["compiled"]): r.value
            for m, r in _matches(run, SCALE_TTFT)
        }
        for m, r in _matches(run, SCALE_GEN):
            if r.value is None:
                continue
            first_ms = ttft_of.get((m["preset"], m["weights"], m["batch"], m["compiled"]))
            kind = m["compiled"][1:] if m["compiled"] else "static"
            rows.append((run, kind, f"{m['preset']} {m['weights']}", int(m["batch"]),
                         int(m["n"]), r.value, _err(r), first_ms))  # fmt: skip
    if not rows:
        return []
    fig, (ax, tx) = plt.subplots(1, 2, figsize=(11, 4))
    groups: dict[tuple[str, str, str, int], list[tuple[int, float, Any]]] = {}
    ttfts: dict[str, float] = {}
    for run, kind, preset, batch, n, tps, err, ttft in rows:
        groups.setdefault((run.label, kind, preset, batch), []).append((n, tps, err))
        if ttft is not None:  # the graph-only and the compiled decoder each have a bar
            how = f" {kind}" if kind in COMPILED_KINDS else ""
            ttfts[f"{preset} b{batch}{how} · {run.label}"] = ttft
    for (label, kind, preset, batch), pts in sorted(groups.items()):
        pts.sort()
        errs = [e or (0.0, 0.0) for _, _, e in pts]
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                    yerr=list(zip(*errs, strict=True)), ms=4, capsize=2,
                    ls="--" if kind == "eager" else "-",
                    marker="D" if kind in COMPILED_KINDS else "o",
                    label=f"{preset} b{batch} {kind} · {label}")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set(xlabel="new tokens (fixed output length, greedy)", ylabel="tokens/s",
           title="Generation throughput")  # fmt: skip
    ax.set_ylim(bottom=0)
    _legend_below(ax)
    if ttfts:
        names = list(ttfts)
        tx.barh(names, [ttfts[n] for n in names], color="tab:orange")
        tx.set(xlabel="ms", title="Time to first token (prefill)")
        tx.tick_params(axis="y", labelsize=7)
    else:
        tx.set_axis_off()
        tx.text(0.5, 0.5, "no time-to-first-token figures", ha="center")
    return [
        Chart(
            "Generation: tokens/s as new tokens grow, and time to first token",
            _svg(fig),
            "Solid: the GPU-bound decoder (static KV cache, CUDA graph; decode tokens/s; "
            "diamonds: its step compiled with torch.compile, \"compiled\" in inductor's "
            "default mode, \"autotuned\" in max-autotune); "
            "dashed: transformers' eager generate() (launch-bound reference, whole-sequence "
            "tokens/s). Error bars: 95% intervals where measured.",
        )
    ]


def dtype_charts(report: Report) -> list[Chart]:
    plt = _plt()
    mm: dict[str, dict[str, Result]] = {}
    casts: dict[str, dict[str, Result]] = {}
    copies: dict[str, Result] = {}
    for run in report.runs:
        for m, r in _matches(run, MATMUL):
            mm.setdefault(run.label, {})[m["dtype"]] = r
        for m, r in _matches(run, CAST):
            casts.setdefault(run.label, {})[m["cast"]] = r
        for _, r in _matches(run, COPY):
            copies[run.label] = r
    if not mm and not casts:
        return []
    fig, (ax, cx) = plt.subplots(1, 2, figsize=(11, 4))
    _bars(ax, mm, "TFLOP/s", "Matmul throughput per dtype")
    _bars(cx, casts, "GB/s", "Cast throughput (bytes read + written)")
    for i, (label, r) in enumerate(sorted(copies.items())):
        if r.value is not None:
            cx.axhline(r.value, ls="--", lw=1, color=f"C{i}")
            cx.annotate(f"copy {r.value:,.0f} GB/s · {label}", (0.01, r.value),
                        xycoords=("axes fraction", "data"), fontsize=7, va="bottom")  # fmt: skip
    return [
        Chart(
            "Dtypes: matmul and cast throughput against the copy bandwidth",
            _svg(fig),
            "Dashed: the same GPU's device-to-device copy bandwidth, the ceiling for casts. "
            "Error bars: 95% intervals.",
        )
    ]


def _legend_below(ax: Any) -> None:
    """A legend under the axes: many series (GPUs x presets) must not hide the data."""
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)


def _bars(ax: Any, data: dict[str, dict[str, Result]], unit: str, title: str) -> None:
    cats = sorted({c for d in data.values() for c in d})
    if not cats:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no {title.lower()}", ha="center")
        return
    width = 0.8 / max(1, len(data))
    for i, (label, d) in enumerate(sorted(data.items())):
        xs, ys, errs = [], [], []
        for j, c in enumerate(cats):
            r = d.get(c)
            if r is not None and r.value is not None:
                xs.append(j + i * width)
                ys.append(r.value)
                errs.append(_err(r) or (0.0, 0.0))
        if xs:
            ax.bar(xs, ys, width, yerr=list(zip(*errs, strict=True)), capsize=2, label=label)
    ax.set_xticks([j + width * (len(data) - 1) / 2 for j in range(len(cats))], cats,
                  rotation=20, fontsize=8)  # fmt: skip
    ax.set(ylabel=unit, title=title)
    ax.legend(fontsize=7)


def hidden_cast_charts(report: Report) -> list[Chart]:
    plt = _plt()
    speed: dict[str, dict[str, Result]] = {}
    casts: dict[str, dict[str, Result]] = {}
    for run in report.runs:
        for m, r in _matches(run, HIDDEN):
            speed.setdefault(f"{m['preset']} · {run.label}", {})[m["adapters"]] = r
        for m, r in _matches(run, HIDDEN_CASTS):
            casts.setdefault(f"{m['preset']} · {run.label}", {})[m["adapters"]] = r
    if not speed:
        return []
    fig, (ax, cx) = plt.subplots(1, 2, figsize=(11, 3.5))

    def by_adapters(d: dict[str, dict[str, Result]]) -> dict[str, dict[str, Result]]:
        return {f"{a} adapters": {k: v[a] for k, v in d.items() if a in v} for a in ADAPTERS}

    _bars(ax, by_adapters(speed), "tokens/s", "LoRA step: fp32 vs bf16 adapters")
    _bars(cx, by_adapters(casts), "casts per step", "Dtype conversions per step")
    return [
        Chart(
            "Hidden dtype conversions",
            _svg(fig),
            "peft keeps LoRA weights in float32 on a bfloat16 model by default: each adapted "
            "projection casts its input up and its output back. Left: the step's speed with "
            "and without; right: the conversions counted in one step.",
        )
    ]


def history_charts(report: Report, limit: int = 12) -> list[Chart]:
    """Per judged benchmark: the baseline's saved sessions and this run (median and
    interval), so a drift is visible. The worst verdicts first, at most `limit`."""
    plt = _plt()
    from ..baseline.store import metrics_of

    picks = []
    for run in report.runs:
        base = report.baselines.get(baseline_name(run.summary))
        if base is None:
            continue
        for r in run.summary.results:
            for name, v in r.verdicts.items():
                entry = base.entries.get(r.key)
                if entry is None or name not in entry.get("metrics", {}):
                    continue
                now = metrics_of(r).get(name)
                if now is None:
                    continue
                picks.append((SEVERITY.get(v["status"], 99), run, r, name, v, entry, now))
    if not picks:
        return []
    picks.sort(key=lambda p: (p[0], p[2].key))
    picks = picks[:limit]
    cols = 3
    rows = math.ceil(len(picks) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(11, 2.6 * rows), squeeze=False)
    for ax in axes.flat[len(picks) :]:
        ax.set_axis_off()
    for ax, (_, _run, r, name, v, entry, now) in zip(axes.flat, picks, strict=False):
        m = entry["metrics"][name]
        hist = [h for h in m.get("history", []) if isinstance(h.get("median"), int | float)]
        xs = list(range(len(hist)))
        ax.plot(xs, [h["median"] for h in hist], "o-", color="tab:blue", ms=4, label="saved")
        if hist and "ci_low" not in hist[-1] and m.get("ci_low") is not None:
            hist[-1] = {**hist[-1], "ci_low": m["ci_low"], "ci_high": m.get("ci_high")}
        for x, h in zip(xs, hist, strict=True):  # each saved session's interval, if saved
            span = _span(h["median"], h.get("ci_low"), h.get("ci_high"))
            if span is not None:
                ax.errorbar([x], [h["median"]], yerr=[[span[0]], [span[1]]], color="tab:blue",
                            capsize=2)  # fmt: skip
        x = len(hist)
        span = _span(now["median"], now.get("ci_low"), now.get("ci_high"))
        yerr = [[span[0]], [span[1]]] if span is not None else None
        color = {"regressed": "tab:red", "improved": "tab:green"}.get(v["status"], "black")
        ax.errorbar([x], [now["median"]], yerr=yerr, fmt="s", color=color, capsize=2,
                    label=f"this run: {v['status']}")  # fmt: skip
        ax.set_xticks([*xs, x], [*(str(i + 1) for i in xs), "now"], fontsize=7)
        ax.set_title(f"{_short_key(r)[:48]} {name}", fontsize=7)
        ax.set_ylabel(now.get("unit", ""), fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    return [
        Chart(
            "History: the baseline's saved sessions and this run",
            _svg(fig),
            "Blue: the median of each saved session with its interval (sessions saved before "
            "intervals were kept: the last only); square: this "
            "run with its interval, red when regressed, green when improved. Worst first.",
        )
    ]


# ------------------------------------------------------------------------------ tables


def _table(header: list[str], rows: Iterable[list[str]], attrs: Callable[[list[str]], str] = lambda r: "") -> str:  # noqa: E501
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        f"<tr{attrs(r)}>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def verdict_section(report: Report) -> str:
    rows = []
    for run in report.runs:
        for row in verdict_rows(run.summary.results, run.summary.missing):
            rows.append([row[0], run.label, *row[1:]])
    if not rows:
        return "<p>No verdicts: these runs were not compared with a baseline.</p>"
    rows.sort(key=lambda r: SEVERITY.get(r[0].lower(), 99))  # worst first, as the terminal
    counts = Counter(r[0] for r in rows)  # in the rows' order: worst first
    buttons = "".join(
        f'<label><input type="checkbox" class="vf" value="{v}" checked> {v.lower()} '
        f"({n})</label> "
        for v, n in counts.items()
    )
    header = ["verdict", "run", "benchmark", "metric", "now", "change ± interval",
              "detects (tolerance)", "flags"]  # fmt: skip
    table = _table(header, rows, lambda r: f' class="v-{r[0].lower()}" data-verdict="{r[0]}"')
    return f'<div class="filters">Show: {buttons}</div>{table}'


def results_section(report: Report) -> str:
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
            if r.kind == "recorded":
                interval = "recorded"
            elif r.time is not None and r.time.ci_exact:
                interval = f"{t.ci_low:,.4g} – {t.ci_high:,.4g}"
            else:
                interval = f"none (n={r.time.n if r.time else 0})"
            energy = (
                f"{r.energy_per_unit_j:.3g} J/{r.unit.rstrip('s') or r.unit}"
                if r.energy_per_unit_j is not None
                else ""
            )
            rows.append([run.label, _short_key(r), f"{t.median:,.4g} {t.unit}", interval,
                         ", ".join(r.flags()), energy])  # fmt: skip
    header = ["run", "benchmark", "median", "95% interval", "flags", "energy"]
    return _table(header, rows)


def cost_section(report: Report) -> str:
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
    if not rows:
        return "<p>No token-throughput results.</p>"
    prices = "; ".join(
        dict.fromkeys(  # each price once, in the runs' order
            f"${run.price:g}/h ({run.summary.profile}, {run.price_source})"
            for run in report.runs
            if run.price is not None
        )
    )
    header = ["run", "benchmark", "tokens/s", "$ per million tokens", "joules per token", ""]
    return (
        f"<p class='small'>Prices per GPU-hour: {html.escape(prices or 'none known')}. "
        "Dollars per million tokens = price per hour / (tokens/s x 3600) x 10<sup>6</sup>, "
        "with the interval of the throughput. Joules per token from the GPU's total-energy "
        "counter over the timed samples.</p>" + _table(header, rows)
    )


# ------------------------------------------------------------------------------ page

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;
max-width:1180px;padding:0 16px;color:#1d1d1f}
h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;font-size:12px;margin:8px 0}
th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f6f6f6;position:sticky;top:0}
tr.v-regressed td:first-child,tr.v-failed td:first-child{color:#b00020;font-weight:600}
tr.v-improved td:first-child{color:#1b7f3b;font-weight:600}
tr.v-inconclusive td:first-child,tr.v-power-state td:first-child{color:#8a6d00}
tr.v-missing td:first-child{color:#b00020}
.filters label{margin-right:10px;font-size:13px}
.chart svg{max-width:100%;height:auto}
.small,.caption{color:#555;font-size:12px}
.problems{background:#fff4e5;border-left:4px solid #e69500;padding:6px 10px}
"""

SCRIPT = """
document.querySelectorAll('input.vf').forEach(function (box) {
  box.addEventListener('change', function () {
    var on = {};
    document.querySelectorAll('input.vf').forEach(function (b) { on[b.value] = b.checked; });
    document.querySelectorAll('tr[data-verdict]').forEach(function (row) {
      row.style.display = on[row.getAttribute('data-verdict')] ? '' : 'none';
    });
  });
});
"""


def build_html(
    summaries: list[RunSummary],
    *,
    profiles: Callable[[str], Any] | None = None,
    baselines: dict[str, Any] | None = None,
    problems: Iterable[str] = (),
    title: str = "gpuperf report",
) -> str:
    """The report of these runs as one HTML document (no external resource)."""
    report = prepare(summaries, profiles, baselines)
    report.problems = [*problems, *report.problems]
    charts: list[Chart] = []
    for make in (history_charts, finetune_charts, generation_charts, dtype_charts,
                 hidden_cast_charts):  # fmt: skip
        charts += make(report)
    runs_rows = [
        [
            run.label,
            run.summary.describe,
            run.summary.profile or "unknown",
            f"{run.emulated} ({run.emulated_gib:g} GiB)" if run.emulated and run.emulated_gib
            else (run.emulated or "-"),
            str(len(run.summary.results)),
            run.summary.baseline_path or "-",
            _short(run.summary.source) if run.summary.source else "this run",
        ]
        for run in report.runs
    ]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='small'>Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by pytest-gpuperf "
        f"from {len(report.runs)} run(s). Every figure is the median with its 95% interval "
        "(or says it has none) on the GPU its run names.</p>",
    ]
    if report.problems:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in report.problems)
        parts.append(f"<div class='problems'><b>Notes on the inputs</b><ul>{items}</ul></div>")
    parts.append("<h2>Runs</h2>")
    parts.append(_table(["run", "device", "profile", "emulated", "results", "baseline",
                         "source"], runs_rows))  # fmt: skip
    parts.append("<h2 id='verdicts'>Verdicts, worst first</h2>")
    parts.append(verdict_section(report))
    for chart in charts:
        parts.append(f"<h2>{html.escape(chart.title)}</h2>")
        parts.append(f"<div class='chart'>{chart.svg}</div>")
        parts.append(f"<p class='caption'>{html.escape(chart.caption)}</p>")
    fits = max_batch_section(report)
    if fits:
        parts.append(fits)
    parts.append("<h2>Cost and energy</h2>")
    parts.append(cost_section(report))
    parts.append("<h2>All results</h2>")
    parts.append(results_section(report))
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"

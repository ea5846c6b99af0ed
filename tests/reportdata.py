"""Results files made in tests (runs of several GPUs with parametrized benchmarks, as the
plugin writes them) and a parser that reads a report back as a browser would: its headings,
each chart's SVG (texts and drawn lines), table cells, script elements and attributes.
Also baseline entries and files, and hypothesis strategies for hostile JSON (arbitrary
documents, and valid baseline and results files with one value replaced).
Shared by the tests of the baseline files, results files and outputs."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pytest_gpuperf.core.results import Result, Throughput, throughput_of
from pytest_gpuperf.core.stats import summarize
from pytest_gpuperf.outputs import RunSummary

GIB = 2**30


def measured(nodeid, tps, params, metric=None, peak_gib=None, unit="tokens", work=64.0):
    """A measured result of `tps` units per second, with a 95% interval (10 samples)."""
    r = Result(nodeid=nodeid, metric=metric, unit=unit, work_per_call=work, params=dict(params))
    t = work / tps
    r.samples = [t * (1 + d / 1000) for d in (-5, -3, -1, 0, 0, 1, 2, 3, 4, 5)]
    r.time = summarize(r.samples, 0.95)
    r.throughput = throughput_of(r.time, work, unit)
    r.calls_total, r.stop_reason = 10, "converged"
    r.peak_allocated = r.peak_reserved = int(peak_gib * GIB) if peak_gib else None
    r.config = {"tolerance": 0.03}
    return r


def oom(nodeid, params, metric=None):
    return Result(nodeid=nodeid, metric=metric, unit="tokens", work_per_call=64.0,
                  outcome="oom", params=dict(params), error="CUDA out of memory")  # fmt: skip


def recorded(nodeid, metric, value, unit, params, note=None):
    r = Result(nodeid=nodeid, metric=metric, unit=unit, work_per_call=1.0, kind="recorded",
               params=dict(params))  # fmt: skip
    r.throughput = Throughput(unit, float(value), float(value), float(value))
    r.stop_reason = "recorded"
    r.notes = [note] if note else []
    return r


def device(gpu="NVIDIA H200", memory_gib=140.4):
    gpus = [{"index": 0, "name": gpu, "memory_total": int(memory_gib * GIB)}] if gpu else []
    return {"kind": "cuda" if gpu else "cpu", "gpus": gpus, "cpu_model": "X", "packages": {},
            "host_memory": 64 * GIB}  # fmt: skip


def payload(results, *, gpu="NVIDIA H200", memory_gib=140.4, profile="h200", emulated=None):
    s = RunSummary(
        device=device(gpu, memory_gib), describe=f"{gpu or 'CPU'}, test run", profile=profile,
        baseline_path=None, baseline_found=False, baseline_mode="off", baseline_note=None,
        comparing=False, warn_only=False, emulated=emulated, results=results, missing=[],
    )  # fmt: skip
    return json.loads(json.dumps(s.payload()))


def write(path: Path, doc) -> Path:
    path.write_text(json.dumps(doc))
    return path


SWEEP = "benchmarks/test_finetune.py::test_qlora_batch_sweep"


def sweep_run(preset="llama2-7b", batches=(1, 8, 16, 20), oom_at=24, gib_per_sample=1.2):
    """A QLoRA batch sweep as the shipped benchmark records it: one test per preset, each
    batch its own metric with the batch in its params, the out-of-memory point last."""
    node = f"{SWEEP}[{preset}]"
    out = [measured(node, 1000.0 * b / (1 + b / 40), {"qlora": preset, "batch": b},
                    metric=f"batch{b}", peak_gib=6 + gib_per_sample * b)
           for b in batches]  # fmt: skip
    if oom_at:
        out.append(oom(node, {"qlora": preset, "batch": oom_at}, metric=f"batch{oom_at}"))
        out.append(recorded(node, "first_oom_batch", oom_at, "samples", {"qlora": preset}))
    return out


# ------------------------------------------------------------------ reading a report back


@dataclass
class Chart:
    title: str
    texts: list[str] = field(default_factory=list)  # every <text> in its SVG
    lines: list[int] = field(default_factory=list)  # points of each drawn line (line2d)
    bars: int = 0  # rectangles drawn as bars (patch groups)


@dataclass
class Page(HTMLParser):
    """The parts of a report a test asserts on, parsed as HTML (not grepped)."""

    headings: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    scripts: int = 0
    handlers: list[str] = field(default_factory=list)  # on* attributes, javascript: URLs
    cells: list[str] = field(default_factory=list)
    _tag_stack: list[str] = field(default_factory=list)
    _text: list[str] = field(default_factory=list)
    _in_svg: int = 0
    _group: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        HTMLParser.__init__(self, convert_charrefs=True)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name, value in attrs.items():
            if name.startswith("on") or "javascript:" in (value or "").lower():
                self.handlers.append(f"{tag} {name}={value}")
        if tag == "script":
            self.scripts += 1
        if tag == "svg":
            self._in_svg += 1
        if tag == "g":
            self._group.append(attrs.get("id") or "")
        if tag == "path" and self._in_svg and self.charts and self._group:
            if self._group[-1].startswith("line2d"):
                d = attrs.get("d") or ""
                self.charts[-1].lines.append(d.count("L") + d.count("M"))
            if self._group[-1].startswith("patch"):
                self.charts[-1].bars += 1
        if tag in ("h2", "td", "text", "tspan"):
            self._text = []
        self._tag_stack.append(tag)

    def handle_endtag(self, tag):
        text = "".join(self._text).strip()
        if tag == "h2":
            self.headings.append(text)
            self.charts.append(Chart(text))
        elif tag == "td":
            self.cells.append(text)
        elif tag == "text" and self._in_svg and self.charts:
            self.charts[-1].texts.append(text)
        elif tag == "svg":
            self._in_svg -= 1
        elif tag == "g" and self._group:
            self._group.pop()
        if self._tag_stack:
            self._tag_stack.pop()

    def handle_data(self, data):
        self._text.append(data)

    def chart(self, title: str) -> Chart:
        found = [c for c in self.charts if c.title == title]
        assert found, f"no chart {title!r}; headings: {self.headings}"
        return found[0]


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


def entry(gpu="G", median=100.0):
    return {
        "environment": {"gpu": gpu, "mig_profile": None, "emulated": None},
        "date": "2026-11-30",
        "commit": None,
        "flags": {},
        "metrics": {
            "throughput": {
                "unit": "tokens/s",
                "direction": "higher",
                "median": median,
                "ci_low": median * 0.99,
                "ci_high": median * 1.01,
                "n": 10,
            }
        },
    }


def baseline_json(profile="cpu", entries=None, **extra):
    data = {"schema": "pytest-gpuperf/baseline", "version": 1, "profile": profile}
    data.update(extra)
    data["entries"] = {
        k: {**e, "metrics": {m: {**v, "history": [{"median": v["median"]}]} for m, v in e["metrics"].items()}}
        for k, e in (entries or {}).items()
    }
    return data


def metric(median, unit="tokens/s", direction="higher"):
    return {
        "unit": unit,
        "direction": direction,
        "median": median,
        "ci_low": median * 0.99,
        "ci_high": median * 1.01,
        "n": 10,
    }


def update(key, median):
    return {
        key: {
            "environment": {"gpu": "G"},
            "date": "d",
            "commit": None,
            "flags": {},
            "metrics": {"throughput": metric(median)},
        }
    }


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


VALID_BASELINE = {
    "schema": "pytest-gpuperf/baseline",
    "version": 1,
    "profile": "cpu",
    "updated": "2026-11-30",
    "entries": {
        "t.py::a": {
            "environment": {"gpu": "cpu: X", "mig_profile": None, "emulated": None},
            "date": "2026-11-30",
            "commit": None,
            "flags": {"launch_bound": None},
            "metrics": {
                "throughput": {
                    "unit": "tokens/s",
                    "direction": "higher",
                    "median": 100.0,
                    "ci_low": 99.0,
                    "ci_high": 101.0,
                    "n": 10,
                    "history": [{"median": 100.0, "date": "d", "commit": None}, {"median": 100.01, "date": "e", "commit": None}, {"median": 99.99, "date": "f", "commit": None}],
                }
            },
        }
    },
}


VALID_RESULTS = {
    "schema": "pytest-gpuperf/results-1",
    "device": {"gpus": [], "cpu_model": "X", "packages": {}},
    "describe": "cpu",
    "profile": "cpu",
    "baseline": None,
    "results": [
        {
            "nodeid": "t.py::a",
            "metric": None,
            "unit": "tokens",
            "work_per_call": 64.0,
            "kind": "measured",
            "config": {"tolerance": 0.03},
            "time": {
                "n": 10, "median": 0.64, "ci_low": 0.63, "ci_high": 0.65, "confidence": 0.95,
                "ci_exact": True, "q1": 0.63, "q3": 0.65, "mean": 0.64, "stdev": 0.01,
                "min": 0.62, "max": 0.66,
            },
            "throughput": {"unit": "tokens/s", "median": 100.0, "ci_low": 98.5, "ci_high": 101.6},
        }
    ],
}


def paths(doc, prefix=()):
    """Every place in a JSON document where a value sits."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, (*prefix, i))


def replaced(doc, path, value):
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def mutants(valid):
    places = list(paths(valid))
    return st.tuples(st.sampled_from(places), JSON).map(lambda pv: replaced(valid, *pv))


def as_bytes(doc):
    return json.dumps(doc, allow_nan=True).encode()


SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])


GOOD = {
    "schema": "pytest-gpuperf/baseline",
    "version": 1,
    "profile": "h200",
    "entries": {"k": {"metrics": {"throughput": {**metric(5.0), "history": [{"median": 5.0}]}}}},
}


def history(values, unit="ms", direction="lower", metric="lat"):
    return {f"t.py::test_x::{metric}": {"environment": {}, "metrics": {"value": {
        "unit": unit, "direction": direction, "median": values[-1],
        "history": [{"median": v, "date": f"d{i}"} for i, v in enumerate(values)]}}}}  # fmt: skip

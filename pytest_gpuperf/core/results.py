"""The result of one measurement: throughput in the user's unit with its interval, time
statistics, raw samples, memory, telemetry and the flags a reader needs (launch-bound,
throttled, emulated). Plain data: it travels in test reports (also across pytest-xdist),
into pytest-benchmark's JSON, and into baselines.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from .stats import Summary
from .units import format_size
from .verdict import Verdict, from_json, to_json

# unit of work -> (throughput unit, divisor from work/s to that unit)
UNITS: dict[str, tuple[str, float]] = {
    "tokens": ("tokens/s", 1.0),
    "samples": ("samples/s", 1.0),
    "items": ("items/s", 1.0),
    "steps": ("steps/s", 1.0),
    "calls": ("calls/s", 1.0),
    "images": ("images/s", 1.0),
    "bytes": ("GB/s", 1e9),
    "flop": ("TFLOP/s", 1e12),
}
UNIT_ALIASES = {
    "token": "tokens",
    "sample": "samples",
    "item": "items",
    "step": "steps",
    "call": "calls",
    "image": "images",
    "byte": "bytes",
    "flops": "flop",
}

FOREIGN_FLAG_BYTES = 64 * 2**20  # another test's memory this large flags an OOM point


def resolve_unit(unit: object) -> str:
    """The unit of work: one of UNITS (or an alias), or any other countable thing named by a
    plain word ('adds', 'queries', 'frames'), reported as '<unit>/s'."""
    if not isinstance(unit, str):
        raise ValueError(f"unit must be a string such as 'tokens', got {unit!r}")
    key = unit.strip().lower()
    key = UNIT_ALIASES.get(key, key)
    if key not in UNITS and not (key.isascii() and key.isalpha()):
        raise ValueError(
            f"unknown unit {unit!r}: a unit is a plain word (letters only, e.g. 'queries', "
            f"reported as queries/s) or one of {', '.join(UNITS)} "
            "(throughput is reported per second: tokens/s, GB/s for bytes, TFLOP/s for flop)"
        )
    return key


def unit_rate(unit: str) -> tuple[str, float]:
    """(throughput unit, divisor from work/s to it): GB/s for bytes, TFLOP/s for flop,
    '<unit>/s' with divisor 1 for any other unit of work."""
    return UNITS.get(unit, (f"{unit}/s", 1.0))


def check_work(work: object) -> float:
    if isinstance(work, bool) or not isinstance(work, int | float):
        raise ValueError(f"work per call must be a positive number, got {work!r}")
    if not math.isfinite(work) or work <= 0:
        raise ValueError(f"work per call must be a positive finite number, got {work!r}")
    return float(work)


@dataclass(frozen=True)
class Throughput:
    unit: str  # e.g. "tokens/s"
    median: float
    ci_low: float
    ci_high: float

    @property
    def rel_ci_halfwidth(self) -> float:
        if not self.median:
            return math.inf
        return max(self.median - self.ci_low, self.ci_high - self.median) / self.median

    def format(self, exact: bool = True, n: int | None = None) -> str:
        """'6,570 tokens/s (95% CI 6,517-6,600, ±0.6%)'; with too few samples for an
        interval of the median (`exact` False), the range of the `n` samples instead."""
        if not exact:
            if n == 1:
                return f"{fmt_number(self.median)} {self.unit} (1 sample)"
            return (
                f"{fmt_number(self.median)} {self.unit} "
                f"(range of {n} samples {fmt_number(self.ci_low)}-{fmt_number(self.ci_high)})"
            )
        return (
            f"{fmt_number(self.median)} {self.unit} "
            f"(95% CI {fmt_number(self.ci_low)}-{fmt_number(self.ci_high)}, "
            f"±{self.rel_ci_halfwidth * 100:.2f}%)"
        )


def format_value(value: float, unit: str) -> str:
    """A measured figure with its unit, for people: bytes as a binary size (8.3 MiB), any
    other unit at fmt_number's precision (3.10 fraction, 1,234 tokens/s)."""
    if unit == "bytes" and math.isfinite(value):
        return format_size(value)
    return f"{fmt_number(value)} {unit}".rstrip()


def format_figure(value: float, unit: str) -> str:
    """A recorded figure with its unit: as format_value, but a whole number stays whole
    (31 samples, not 31.0)."""
    if unit != "bytes" and math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{value:,.0f} {unit}".rstrip()
    return format_value(value, unit)


def fmt_number(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    mag = abs(x)
    if mag >= 100:
        return f"{x:,.0f}"
    if mag >= 10:
        return f"{x:.1f}"
    if mag >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def throughput_of(time: Summary, work: float, unit: str) -> Throughput:
    label, divisor = unit_rate(unit)

    def rate(t: float) -> float:
        return work / t / divisor if t > 0 else math.inf

    return Throughput(label, rate(time.median), rate(time.ci_high), rate(time.ci_low))


@dataclass
class Result:
    """One benchmark's measurement. `key` identifies it in baselines: node id[::metric]."""

    nodeid: str
    metric: str | None
    unit: str  # unit of work: tokens, bytes, ...
    work_per_call: float
    outcome: str = "ok"  # ok | oom
    backend: str = "cpu"  # cuda | cpu
    timer: str = "perf_counter"  # cuda-event | cuda-graph | perf_counter
    time: Summary | None = None  # seconds per call
    throughput: Throughput | None = None
    samples: list[float] = field(default_factory=list)  # seconds per call, one per sample
    calls_per_sample: int = 1
    calls_total: int = 0
    warmup_calls: int = 0
    warmup_s: float = 0.0
    measure_s: float = 0.0
    stop_reason: str = ""
    # bytes: the timed calls' own peak above what was live when they began (memory.py), the
    # same whatever ran before: peak_allocated (requested bytes) is the baseline's gated
    # memory figure; peak_reserved depends on the allocator's cache and is informational
    peak_allocated: int | None = None
    peak_reserved: int | None = None
    # bytes allocated when the timed calls began (the test's fixtures, state the work keeps,
    # anything another test left): informational, it depends on what ran before
    resident_allocated: int | None = None
    # bytes of another test's memory resident during this test (held by none of its
    # fixtures), at most; an OOM point or a recorded figure is flagged when it is large
    foreign_allocated: int | None = None
    telemetry: dict[str, Any] | None = None
    energy_per_unit_j: float | None = None  # joules per unit of work
    busy_fraction: float | None = None
    busy_source: str | None = None  # "profiler" (kernel time / wall) or "nvml-utilization"
    launch_bound: bool | None = None
    throttled: bool | None = None
    emulated: str | None = None  # profile whose memory cap was emulated
    gpu: str | None = None  # which GPU of the host: "GPU 1 (00000000:1B:00.0)"
    gpus_used: int = 1  # GPUs the benchmark uses (its test's gpu_requires_gpus count)
    device: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # metric -> verdict
    # the noise class the benchmark declared (marker noise_class=, record(noise_class=)):
    # None lets the gate assign one from the unit and flags (baseline/noise.py)
    noise_class: str | None = None
    gate: bool = True  # False: an informational figure (compile time), never judged
    derived_from: str | None = None  # the metric it was computed from ("": the unnamed one)
    gpu_uuid: str | None = None  # the GPU's UUID: a baseline session is one run on one GPU
    # "measured" by gpu_benchmark(fn, ...), or "recorded" by gpu_benchmark.record(...): a
    # figure obtained by other means, held as a throughput whose interval is the value itself
    kind: str = "measured"
    higher_is_better: bool = True  # direction of a recorded figure (measured: throughput)
    bound: str | None = None  # "compute": judged in time and per SM clock cycle; "memory"
    cycles: Summary | None = None  # giga SM cycles per call (time x clock, per sample)
    # launch-bound work on CUDA: the GPU's own seconds per call (the kernels, copies and
    # sets traced in a chunk of calls, their intervals' union over the chunk's calls), from
    # a second pass of kernel_time.n chunks shaped like the samples (measure/kernels.py)
    kernel_time: Summary | None = None
    kernel_s: float = 0.0  # seconds the kernel-time pass took (its chunks and their reading)
    # the test's parameters (pytest.mark.parametrize, indirect ones included) as plain JSON:
    # str, int, float and bool values as they are, others as their id; the report's charts
    # come from them (a numeric one is an axis, a categorical one a set of bars)
    params: dict[str, Any] = field(default_factory=dict)
    # the host's load while measuring (hostload.py): load1, cores, steal, busy (and, on the
    # CPU, how many samples were preempted or waited: preempted, samples, waited)
    host: dict[str, Any] | None = None
    # on the CPU (hostload.undisturbed): {"samples": all timed samples, "preempted": those
    # left out, "enough": whether min_samples remained, and so are the ones summarised,
    # "waited": those whose run-queue wait was taken out of their time}; None: unchecked
    preemption: dict[str, Any] | None = None
    # other processes on the GPU while measuring (gpushare.py): {"processes": [{"pid",
    # "used_memory"}]}; None: none seen, or NVML could not tell
    gpu_shared: dict[str, Any] | None = None

    @property
    def clock_mhz(self) -> float | None:
        """Median SM clock while measuring (NVML telemetry), or None."""
        v = (self.telemetry or {}).get("sm_clock_median_mhz")
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return float(v)
        return None

    @property
    def session_flags(self) -> list[str]:
        """What made this session's figure less trustworthy than a clean one: recorded with
        it in the baseline history, where it is left out of the reference."""
        out = []
        if self.kind == "measured" and self.stop_reason == "noise-limited":
            out.append("noise-limited")
        if self.launch_bound:
            out.append("launch-bound")
        if self.throttled and self.bound != "compute":  # clock-normalised when compute-bound
            out.append("throttled")
        if self.gpu_shared:  # saved only with --gpuperf-save-gpu-shared
            out.append("gpu-shared")
        return out

    @property
    def key(self) -> str:
        return f"{self.nodeid}::{self.metric}" if self.metric else self.nodeid

    @property
    def figure_name(self) -> str:
        """The name of this result's figure in its results JSON, its baseline entry and
        every output: `latency` for gpu_benchmark.latency (a time per call, lower is
        better), `throughput` for any other measurement, `value` for a recorded figure.
        The field holding it here is `throughput` whatever its name."""
        if self.kind == "recorded":
            return "value"
        return THROUGHPUT if self.higher_is_better else LATENCY

    def flags(self) -> list[str]:
        """What a reader must know about how this number was obtained."""
        out = []
        if self.launch_bound:
            out.append("launch-bound")
        if self.throttled:
            out.append("throttled")
        if self.emulated:
            out.append(f"emulated {self.emulated}")
        if self.host and self.host.get("busy"):
            out.append("busy-host")
        if self.gpu_shared:
            out.append("gpu-shared")
        if self.foreign_resident:
            out.append(f"foreign memory {format_size(self.foreign_allocated)}")
        return out

    @property
    def foreign_resident(self) -> bool:
        """Whether another test's memory was resident when this out-of-memory point or
        recorded figure (a largest batch, say) was found: it then answers "does it fit"
        for less memory than the card has (results.FOREIGN_FLAG_BYTES and over)."""

        return (
            self.foreign_allocated is not None
            and self.foreign_allocated >= FOREIGN_FLAG_BYTES
            and (self.outcome == "oom" or self.kind == "recorded")
        )

    @property
    def value(self) -> float | None:
        return self.throughput.median if self.throughput is not None else None

    def headline(self) -> str:
        """One line: what was measured, how sure, on what."""
        if self.kind == "recorded" and self.throughput is not None:
            note = f" ({'; '.join(self.notes)})" if self.notes else ""
            figure = format_figure(self.throughput.median, self.throughput.unit)
            return f"{figure}{note} on {self.device}"
        if self.outcome != "ok" or self.throughput is None or self.time is None:
            return f"{self.key}: {self.outcome.upper()} {self.error or ''} on {self.device}"
        flags = [f.upper() for f in self.flags()]
        return (
            f"{self.throughput.format(self.time.ci_exact, self.time.n)}; "
            f"{self.time.median * 1e3:.4g} ms/call "
            f"(IQR {self.time.iqr * 1e3:.3g} ms, n={self.time.n}, {self.stop_reason})"
            + (f" [{', '.join(flags)}]" if flags else "")
            + f" on {self.device}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data; a latency's figure under `latency`, not `throughput`."""
        d = asdict(replace(self, verdicts={}))
        d["verdicts"] = {name: to_json(v) for name, v in self.verdicts.items()}
        d["key"] = self.key
        if self.figure_name == LATENCY:
            d[LATENCY] = d.pop("throughput")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        """A Result from to_dict()'s output. Raises ValueError saying what is wrong with
        data that did not come from there (a results file of another schema, edited)."""
        if not isinstance(d, dict):
            raise ValueError(f"a result must be an object, got {type(d).__name__}")
        d = dict(d)
        d.pop("key", None)
        d.pop("remeasured", None)  # in-process re-measurement (before 0.2): never gates now
        _latency_from_dict(d)
        for name in ("nodeid", "unit"):
            if not isinstance(d.get(name), str):
                raise ValueError(f"result has no {name!r} string (got {d.get(name)!r})")
        where = f"result {d['nodeid']!r}"
        try:
            if d.get("time") is not None:
                _check_fields(Summary, d["time"], f"{where} time")
                d["time"] = Summary(**d["time"])
            if d.get("throughput") is not None:
                _check_fields(Throughput, d["throughput"], f"{where} throughput")
                d["throughput"] = Throughput(**d["throughput"])
            for name in ("cycles", "kernel_time"):
                if d.get(name) is not None:
                    _check_fields(Summary, d[name], f"{where} {name}")
                    d[name] = Summary(**d[name])
            if not isinstance(d.get("verdicts", {}), dict):
                raise ValueError(f"{where}: verdicts must be an object")
            d["verdicts"] = _verdicts(d.get("verdicts") or {}, where)
            _check_fields(cls, d, where)
            r = cls(**d)
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if r.outcome not in ("ok", "oom") or r.kind not in ("measured", "recorded"):
            raise ValueError(f"{where}: unknown outcome {r.outcome!r} or kind {r.kind!r}")
        for name, value in r.params.items():
            if not isinstance(name, str) or not _plain_param(value):
                raise ValueError(f"{where}: params {name!r} must be a string, number or bool")
        for name in ("tolerance", "memory_tolerance"):
            tol = r.config.get(name, 0.5)
            if _not_number(tol) or not 0 < tol < 1:
                raise ValueError(f"{where}: config {name} must be a fraction, got {tol!r}")
        return r


def _verdicts(raw: dict[str, Any], where: str) -> dict[str, Verdict]:
    out = {}
    for name, v in raw.items():
        try:
            out[name] = from_json(v)
        except ValueError as exc:
            raise ValueError(f"{where} verdicts[{name!r}]: {exc}") from None
    return out


THROUGHPUT = "throughput"
LATENCY = "latency"  # gpu_benchmark.latency's figure (before 2026-12-02: named "throughput")


def _latency_from_dict(d: dict[str, Any]) -> None:
    """A latency's figure back into the `throughput` field, and the names of an older
    file's verdicts (a latency's were `throughput`, `throughput_kernels`) as this version
    names them; a result holding both names of its figure is refused."""
    if LATENCY in d:
        if d.get("throughput") is not None:
            raise ValueError(
                f"result {d.get('nodeid')!r} holds both 'latency' and 'throughput': a "
                "result has one figure"
            )
        d["throughput"] = d.pop(LATENCY)
    verdicts = d.get("verdicts")
    if d.get("kind", "measured") != "measured" or d.get("higher_is_better", True) is not False:
        return
    if isinstance(verdicts, dict) and any(k.startswith(THROUGHPUT) for k in verdicts):
        d["verdicts"] = {
            k if latency_name(k) in verdicts else latency_name(k): v for k, v in verdicts.items()
        }


def latency_name(name: str) -> str:
    """A latency's figure name from the one an older version gave it: `throughput` ->
    `latency`, `throughput_kernels` -> `latency_kernels` (any other name as it is)."""
    return LATENCY + name[len(THROUGHPUT) :] if name.startswith(THROUGHPUT) else name


def _plain_param(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int)  # bool is an int


def plain_params(params: dict[str, Any], indices: dict[str, int] | None = None) -> dict[str, Any]:
    """A test's parameters (`item.callspec.params`) as plain JSON for its results: strings,
    whole numbers, finite floats and bools as they are; anything else by its id, as pytest
    would name it: an object's `name` (the dtype marker's spec, an enum member) or
    `__name__` (a class, a function), "None", else the argument's name and index."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if _plain_param(value):
            out[name] = value
        elif value is None:
            out[name] = "None"
        elif isinstance(getattr(value, "name", None), str):
            out[name] = value.name
        elif isinstance(getattr(value, "__name__", None), str):
            out[name] = value.__name__
        else:
            out[name] = f"{name}{(indices or {}).get(name, 0)}"
    return out


def _not_number(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, int | float)


_SIMPLE: dict[str, Any] = {"str": str, "bool": bool, "None": type(None)}


def _accepts(hint: str, value: Any) -> bool:
    """Whether `value` fits a field annotation written as text (from __future__ import
    annotations): str, int, float, bool, None, unions of them, list[...], dict[...], Any,
    and the dataclasses already converted."""
    for part in _parts(hint):
        if part == "Any":
            return True
        if part == "float" and not _not_number(value):
            return True
        if part == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if part in _SIMPLE and isinstance(value, _SIMPLE[part]):
            return True
        if part.startswith("list[") and isinstance(value, list):
            inner = part[5:-1]
            if inner == "float":  # samples: up to 100,000 of them, checked without a call each
                return all(type(v) is float or type(v) is int for v in value)
            return all(_accepts(inner, v) for v in value)
        if part.startswith("dict[") and isinstance(value, dict):
            return True
        if part in ("Summary", "Throughput") and type(value).__name__ == part:
            return True
    return False


@functools.cache
def _parts(hint: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in hint.split("|"))


def _check_fields(cls: Any, data: Any, where: str) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    for name, value in data.items():
        f = known.get(name)
        if f is None:
            raise ValueError(f"{where}: unknown field {name!r}")
        if not _accepts(str(f.type), value):
            raise ValueError(f"{where}: {name} must be {f.type}, got {value!r}"[:300])


# Units of time: a figure in one of these is a duration, for which lower is better.
_TIME_WORDS = (
    "s sec secs second seconds ms msec millisecond milliseconds us µs usec microsecond "
    "microseconds ns nanosecond nanoseconds min mins minute minutes h hour hours latency"
)
TIME_UNITS = frozenset(_TIME_WORDS.split())


def lower_is_better_unit(unit: str) -> bool:
    """True for a duration: 's', 'ms', 'us', 'ns', 'seconds', 'latency', and per-thing
    times such as 'ms/token' or 's/step'."""
    head = unit.strip().lower().split("/")[0].strip()
    return head in TIME_UNITS

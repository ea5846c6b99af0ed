"""Measurement and verdict settings, resolved in layers with errors that name the source.

Precedence, highest first: a keyword given to the `gpu_benchmark(...)` call, the test's
`@pytest.mark.gpuperf(...)` marker, the command line (`--gpuperf-max-time=...`), the ini
file (`gpuperf_max_time = ...`), then the default for the backend (CUDA or CPU). A bad
value raises SettingError naming the setting, the value and where it came from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any


class SettingError(ValueError):
    pass


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int | float):
        out = float(value)
    elif isinstance(value, str):
        text = value.strip()
        scale = 1.0
        if text.endswith("%"):
            text, scale = text[:-1], 0.01
        elif text.endswith("ms"):
            text, scale = text[:-2], 0.001
        elif text.endswith("s"):
            text = text[:-1]
        try:
            out = float(text) * scale
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    else:
        raise ValueError(f"expected a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(out):
        raise ValueError(f"expected a finite number, got {value!r}")
    return out


def positive(value: Any) -> float:
    out = _number(value)
    if out <= 0:
        raise ValueError(f"must be > 0, got {value!r}")
    return out


def non_negative(value: Any) -> float:
    out = _number(value)
    if out < 0:
        raise ValueError(f"must be >= 0, got {value!r}")
    return out


def fraction(value: Any) -> float:
    """A fraction in (0, 1): 0.05 or '5%'."""
    out = _number(value)
    if not 0 < out < 1:
        raise ValueError(f"must be a fraction between 0 and 1 (e.g. 0.05 or '5%'), got {value!r}")
    return out


MIN_FALSE_ALARM = 1e-9  # below it 1 - rate / metrics is 1.0 in floating point: no interval


def false_alarm_rate(value: Any) -> float:
    """A run-wide false-alarm rate: a fraction from MIN_FALSE_ALARM up to (not including) 1."""
    out = fraction(value)
    if out < MIN_FALSE_ALARM:
        raise ValueError(
            f"must be at least {MIN_FALSE_ALARM:g} (a smaller rate cannot be told from 0 in "
            f"the confidence of a verdict), got {value!r}"
        )
    return out


def _whole(value: Any, minimum: int) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"must be a whole number >= {minimum}, got {value!r}")
    return value


def thread_count(value: Any) -> int:
    return _whole(value, 0)


MAX_SAMPLES = 100_000  # the engine's own cap on samples per benchmark
FALSE_ALARM = 0.01  # the default run-wide false-alarm rate (--gpuperf-false-alarm)
MAX_PAIRED_ROUNDS = 50  # the most rounds --gpuperf-paired-rounds asks of the paired stage


def sample_count(value: Any) -> int:
    out = _whole(value, 1)
    if out > MAX_SAMPLES:
        raise ValueError(f"must be at most {MAX_SAMPLES:,} samples, got {value!r}")
    return out


BOUNDS = ("auto", "compute", "memory")


def bound(value: Any) -> str:
    """What limits the work: 'compute' (judged in time and per SM clock cycle), 'memory'
    (judged in time), or 'auto' (compute for TFLOP/s work, else memory)."""
    if isinstance(value, str) and value.strip().lower() in BOUNDS:
        return value.strip().lower()
    raise ValueError(f"use one of {', '.join(BOUNDS)}, got {value!r}")


NOISE_CLASSES = (
    "auto", "bandwidth", "compute", "model", "launch-bound", "memory", "recorded", "per-clock"
)


def noise_class(value: Any) -> str:
    """The noise class a benchmark's throughput is judged with (baseline/noise.py), or
    'auto': assigned from its unit and flags."""
    if isinstance(value, str) and value.strip().lower() in NOISE_CLASSES:
        return value.strip().lower()
    raise ValueError(f"use one of {', '.join(NOISE_CLASSES)} (in any case), got {value!r}")


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[Any], Any]
    cuda: Any
    cpu: Any
    help: str
    cli: bool = True  # also a command-line option and an ini key


SETTINGS: tuple[Setting, ...] = (
    Setting("min_samples", sample_count, 10, 5, "minimum number of samples"),
    Setting(
        "max_samples",
        sample_count,
        MAX_SAMPLES,
        MAX_SAMPLES,
        "at most this many timed samples (a sweep point needs a few, not a tight interval)",
    ),
    Setting("min_time", non_negative, 0.5, 0.1, "minimum seconds of sampling"),
    Setting("max_time", positive, 10.0, 2.0, "hard budget: seconds of sampling per benchmark"),
    Setting(
        "target",
        fraction,
        0.005,
        0.02,
        "stop when the confidence interval of the median is within this relative half-width",
    ),
    Setting("confidence", fraction, 0.95, 0.95, "confidence level of intervals"),
    Setting("warmup_time", non_negative, 0.2, 0.05, "minimum seconds of warm-up"),
    Setting("warmup_max_time", positive, 10.0, 2.0, "at most this many seconds of warm-up"),
    Setting(
        "min_sample_time",
        positive,
        0.001,
        0.002,
        "calls are batched so that one timed sample lasts at least this long",
    ),
    Setting("flush_l2", boolean, False, False, "flush the L2 cache between samples", cli=False),
    Setting("cuda_graph", boolean, False, False, "capture the calls in a CUDA graph", cli=False),
    Setting(
        "launch_bound_threshold",
        fraction,
        0.8,
        0.8,
        "flag results whose GPU busy fraction is below this as launch-bound",
    ),
    Setting("busy_check", boolean, True, True, "measure the GPU busy fraction (CUDA only)"),
    Setting(
        "cpu_threads",
        thread_count,
        0,
        1,
        "torch's intra-op threads while a CPU benchmark is measured (0: torch's own choice); "
        "one by default, so that other work on the host preempts whole samples, which are "
        "left out, instead of stalling a team of threads in every sample",
    ),
    Setting("telemetry_interval", positive, 0.05, 0.05, "seconds between NVML samples"),
    Setting("tolerance", fraction, 0.03, 0.03, "throughput change tolerated before a regression"),
    Setting(
        "memory_tolerance", fraction, 0.05, 0.05, "peak-memory growth tolerated before a regression"
    ),
    Setting(
        "bound",
        bound,
        "auto",
        "auto",
        "compute (judged in time and per SM clock cycle), memory (in time), or auto "
        "(compute for flop work)",
        cli=False,
    ),
    Setting(
        "noise_class",
        noise_class,
        "auto",
        "auto",
        "the noise class the gate judges the throughput with: bandwidth, compute, model, "
        "launch-bound, memory, recorded, or auto (from its unit and flags)",
        cli=False,
    ),
)
BY_NAME = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class MeasureConfig:
    min_samples: int
    max_samples: int
    min_time: float
    max_time: float
    target: float
    confidence: float
    warmup_time: float
    warmup_max_time: float
    min_sample_time: float
    flush_l2: bool
    cuda_graph: bool
    launch_bound_threshold: float
    busy_check: bool
    cpu_threads: int
    telemetry_interval: float
    tolerance: float
    memory_tolerance: float
    bound: str
    noise_class: str

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Layer(dict[str, Any]):
    """Parsed settings of one layer, knowing where they came from (`source`, or per
    setting in `sources`: an ini file's value and a `-o` one share the ini layer)."""

    source = ""
    sources: Mapping[str, str] = {}

    def source_of(self, key: str) -> str:
        return self.sources.get(key) or self.source


def parse_layer(
    raw: Mapping[str, Any], source: str, sources: Mapping[str, str] | None = None
) -> Layer:
    """Validate one layer of settings; `source` names where they came from, `sources`
    where one setting came from when not there."""
    out = Layer()
    out.source, out.sources = source, dict(sources or {})
    for key, value in raw.items():
        where = out.source_of(key)
        setting = BY_NAME.get(key)
        if setting is None:
            raise SettingError(f"{where}: unknown setting {key!r}; known: {', '.join(BY_NAME)}")
        try:
            out[key] = setting.parse(value)
        except ValueError as exc:
            raise SettingError(f"{where}: {key}={value!r}: {exc}") from None
    return out


# (lower, upper, what goes wrong): pairs of settings whose values must keep this order
ORDERED = (
    ("min_samples", "max_samples", "the minimum number of samples is above the maximum"),
    ("min_time", "max_time", "the minimum sampling time is above the hard budget"),
    ("warmup_time", "warmup_max_time", "the minimum warm-up is above its budget"),
    ("min_sample_time", "max_time", "one sample would last longer than the whole budget"),
)


def check_order(layer: Layer) -> None:
    """Contradictions inside one layer (e.g. a marker's min_time=5, max_time=1)."""
    for low, high, why in ORDERED:
        if low in layer and high in layer and layer[low] > layer[high]:
            raise SettingError(
                f"{layer.source}: {low}={layer[low]:g} is above {high}={layer[high]:g}: {why}"
            )


def resolve(backend: str, *layers: Mapping[str, Any]) -> MeasureConfig:
    """Defaults for `backend` ("cuda" or "cpu"), overridden by each parsed layer in turn.
    Values that contradict each other raise one SettingError naming where each came from."""
    values = {s.name: (s.cuda if backend == "cuda" else s.cpu) for s in SETTINGS}
    where = dict.fromkeys(values, f"the {'CUDA' if backend == 'cuda' else 'CPU'} default")
    for layer in layers:
        values.update(layer)
        if isinstance(layer, Layer):
            where.update({k: layer.source_of(k) or "a setting" for k in layer})
        else:
            where.update(dict.fromkeys(layer, "a setting"))
    for low, high, why in ORDERED:
        if values[low] > values[high]:
            raise SettingError(
                f"{low}={values[low]:g} ({where[low]}) is above {high}={values[high]:g} "
                f"({where[high]}): {why}"
            )
    return MeasureConfig(**values)

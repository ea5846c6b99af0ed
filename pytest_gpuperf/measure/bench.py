"""The object behind the `gpu_benchmark` fixture: one per test."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..core.results import Result, Throughput, lower_is_better_unit
from ..core.settings import MeasureConfig, SettingError, parse_layer, resolve
from ..core.settings import noise_class as parse_noise_class
from .timing import OutOfMemory, measure

if TYPE_CHECKING:
    from ..hardware.device import DeviceSnapshot
    from .gpushare import ProcessWatch


class GpuBenchmark:
    """Call it with the work to time: `gpu_benchmark(fn, work=tokens, unit="tokens")`.

    Returns a Result (throughput with its interval, time statistics, memory, telemetry,
    flags). Several calls in one test need distinct `metric` names. Keyword settings
    (max_time=..., target=..., flush_l2=True, cuda_graph=True, ...) override the test's
    @pytest.mark.gpuperf(...), the command line and the ini file.
    """

    def __init__(
        self,
        nodeid: str,
        snapshot: DeviceSnapshot,
        layers: list[dict[str, Any]],
        telemetry: Callable[[float], Any] | None,
        emulated: str | None = None,
        progress: Callable[[str, bool], None] | None = None,
        gpus_used: int = 1,
        params: dict[str, Any] | None = None,
        disabled: bool = False,
        foreign: Callable[[], int | None] | None = None,
        processes: ProcessWatch | None = None,
        test_settings: Mapping[str, Any] | None = None,
        vram_asked: int | None = None,
    ) -> None:
        self.nodeid = nodeid
        # the settings the test's own marker sets: with a call's keywords they outrank the
        # command line, a paired round's cap included (paired/plan.round_cap_of); its
        # sampling times, which the fixture checks against the command line before a call's
        # keywords apply (paired/plan.own_minimum)
        self._test_settings = dict(test_settings or {})
        self.vram_asked = vram_asked  # its gpu_requires_vram's bytes (paired/plan.held_twice)
        # the other processes on the GPU, read around each measurement (gpushare.py)
        self._processes = processes
        # bytes of another test's memory resident now (memory.foreign_now), None without CUDA
        self._foreign = foreign
        # pytest-benchmark's --benchmark-disable: each call runs its work once, unmeasured,
        # and nothing is recorded (benchflags.py)
        self.disabled = disabled
        # the test's parameters, stamped on each result (the report charts by them); a test
        # that sweeps a value itself sets it here before each call: params["batch"] = 8
        self.params: dict[str, Any] = dict(params or {})
        self.gpus_used = gpus_used  # the test's requires_gpus count: its baseline's GPU count
        self.snapshot = snapshot
        self.backend = "cuda" if snapshot.kind == "cuda" else "cpu"
        self._layers = layers
        self._telemetry = telemetry
        self.emulated = emulated
        self._progress = progress  # (line, verbose only) -> shown on the terminal
        self._started = time.monotonic()
        self.results: list[Result] = []  # measured and recorded, in call order

    @property
    def device(self) -> Any:
        """The torch.device benchmarks should use: cuda when this run has a GPU, else cpu."""
        import torch

        return torch.device("cuda" if self.backend == "cuda" else "cpu")

    def config(self, **overrides: Any) -> MeasureConfig:
        layers = list(self._layers)
        if overrides:
            layers.append(parse_layer(overrides, f"{self.nodeid}: gpu_benchmark(...) keyword"))
        return resolve(self.backend, *layers)

    def __call__(
        self,
        fn: Callable[[], Any],
        *,
        work: float = 1,
        unit: str = "calls",
        metric: str | None = None,
        on_oom: str = "raise",
        **settings: Any,
    ) -> Result:
        return self._measure(fn, work, unit, metric, on_oom, settings, None)

    def latency(
        self,
        fn: Callable[[], Any],
        *,
        unit: str = "ms",
        metric: str | None = None,
        on_oom: str = "raise",
        **settings: Any,
    ) -> Result:
        """Time per call of `fn`, lower is better: measured by the same engine as
        `gpu_benchmark(fn, ...)` (warm-up, stopping rule, interval, telemetry, busy fraction)
        and judged against the baseline the same way, in `unit` ('s', 'ms', 'us' or 'ns',
        fixed so that the baseline's figures stay comparable)."""
        from .latency import check_unit

        return self._measure(fn, 1, "calls", metric, on_oom, settings, check_unit(unit))

    def _measure(
        self,
        fn: Callable[[], Any],
        work: float,
        unit: str,
        metric: str | None,
        on_oom: str,
        settings: dict[str, Any],
        latency_unit: str | None,
    ) -> Result:
        if on_oom not in ("raise", "record"):
            raise ValueError(f"on_oom must be 'raise' or 'record', got {on_oom!r}")
        if metric is not None:
            check_metric_name(metric)
        self._check_new_key(metric, "measured")
        try:
            cfg = self.config(**settings)
        except SettingError as exc:
            raise ValueError(str(exc)) from None
        device = self.snapshot.describe()
        if self.disabled:  # --benchmark-disable: once, unmeasured
            return disabled_result(fn, self.nodeid, metric, unit, work, self.backend, device)

        def run() -> Result:
            try:
                return measure(
                    fn,
                    work=work,
                    unit=unit,
                    cfg=cfg,
                    backend=self.backend,
                    nodeid=self.nodeid,
                    metric=metric,
                    device=device,
                    telemetry=self._telemetry if self.backend == "cuda" else None,
                )
            except OutOfMemory as exc:
                if on_oom == "raise":
                    raise
                oom = Result(nodeid=self.nodeid, metric=metric, unit=unit, work_per_call=work)
                oom.outcome, oom.error = "oom", str(exc)
                oom.backend, oom.device, oom.config = self.backend, device, cfg.to_dict()
                return oom

        from . import hostload

        watch = self._processes if self.backend == "cuda" else None
        before = hostload.read_host()
        procs = watch.read() if watch is not None else None
        result = run()
        self._settings_of(result, settings)
        hostload.stamp(result, before, hostload.read_host())
        if watch is not None:
            watch.stamp(result, procs, watch.read())
        if latency_unit is not None:
            from .latency import as_latency

            as_latency(result, latency_unit)
        self._stamp(result)
        self._check_figures(result)
        if self.emulated:
            result.notes.append(
                f"memory capped to emulate {self.emulated}; speed figures are this GPU's, "
                "not the emulated card's"
            )
        self.results.append(result)
        self._report(result)
        return result

    def from_samples(
        self,
        samples: list[float],
        *,
        work: float,
        unit: str,
        metric: str | None = None,
        timer: str = "external",
        note: str | None = None,
    ) -> Result:
        """A measurement timed elsewhere (e.g. in the ranks of a multi-GPU benchmark, which
        time their own collectives): `samples` are seconds per call. It becomes a Result
        like any other, judged against the baseline the same way."""
        from ..core.results import check_work, resolve_unit, throughput_of
        from ..core.stats import summarize

        if metric is not None:
            check_metric_name(metric)
        self._check_new_key(metric, "measured")
        if not samples or any(finite_number(x) is None or x <= 0 for x in samples):
            raise ValueError(
                f"samples must be positive finite seconds per call, got {samples!r}"[:300]
            )
        cfg = self.config()
        unit_key = resolve_unit(unit)
        result = Result(
            nodeid=self.nodeid, metric=metric, unit=unit_key, work_per_call=check_work(work)
        )
        result.backend, result.device, result.timer = self.backend, self.snapshot.describe(), timer
        result.config = cfg.to_dict()
        result.samples = [float(x) for x in samples]
        result.calls_total = len(samples)
        result.time = summarize(result.samples, cfg.confidence)
        result.throughput = throughput_of(result.time, result.work_per_call, unit_key)
        result.stop_reason = "external"
        self._settings_of(result, {})
        result.bound = cfg.bound if cfg.bound != "auto" else "memory"
        self._stamp(result)
        if note:
            result.notes.append(note)
        self._check_figures(result)
        if not self.disabled:
            self.results.append(result)
        self._report(result)
        return result

    def _settings_of(self, result: Result, keywords: Mapping[str, Any]) -> None:
        """Which of `result`'s settings its test set (its marker and the call's `keywords`),
        the sampling times its marker set and the GPU memory it asks, in its config."""
        result.config["set_by_test"] = sorted({*self._test_settings, *keywords})
        result.config["marker_sampling"] = {
            k: v for k, v in self._test_settings.items()
            if k in ("min_time", "min_sample_time", "max_time")
        }  # fmt: skip
        if self.vram_asked is not None:
            result.config["vram_asked"] = self.vram_asked

    def _stamp(self, result: Result) -> None:
        """What the result ran on beyond the device line: the emulated card, which GPU of
        the host (its index and PCI bus; one per pytest-xdist worker), and the parameters
        it was measured at."""
        from ..core.results import plain_params

        result.emulated = self.emulated
        result.gpus_used = self.gpus_used
        result.params = plain_params(self.params)
        gpu = self.snapshot.primary
        if self.backend == "cuda" and gpu is not None:
            result.gpu_uuid = gpu.uuid
        if self.backend == "cuda" and self._foreign is not None:
            result.foreign_allocated = self._foreign()
            if result.foreign_resident:
                from ..core.units import format_size

                what = "this out-of-memory point" if result.outcome == "oom" else "this figure"
                result.notes.append(
                    f"{format_size(result.foreign_allocated)} of another test's GPU memory "
                    f"(held by none of this test's fixtures) was resident when {what} was "
                    "found: a batch that fits or not is then judged on less memory than the "
                    "card has; run the test in a process of its own, or hold a shared model "
                    "in a fixture this test requests"
                )
        if gpu is not None:
            where = gpu.pci_bus_id or gpu.uuid
            result.gpu = f"GPU {gpu.index}" + (f" ({where})" if where else "")

    PROGRESS_AFTER_S = 3.0  # a test running longer than this shows each measurement

    def _report(self, result: Result) -> None:
        """One line per measurement while the test runs (a sweep point: "batch20: 6,570
        tokens/s, peak 34.5 GiB"), with -v, or without it once the test has run for a few
        seconds; never under -q (the callback decides)."""
        if self._progress is None:
            return
        from ..core.units import format_size

        if result.outcome != "ok" or result.throughput is None:
            line = f"{result.key}: {result.outcome.upper()}"
        else:
            mem = f", peak {format_size(result.peak_allocated)}" if result.peak_allocated else ""
            if mem and result.resident_allocated:  # the step's own, and what it began beside
                mem += f" (+{format_size(result.resident_allocated)} resident)"
            assert result.time is not None
            shown = result.throughput.format(result.time.ci_exact, result.time.n)
            line = f"{result.key}: {shown}{mem}"
        long_running = time.monotonic() - self._started > self.PROGRESS_AFTER_S
        self._progress(line, not long_running)

    def _check_new_key(self, metric: str | None, how: str) -> None:
        key = f"{self.nodeid}::{metric}" if metric else self.nodeid
        for r in self.results:
            if r.key == key:
                raise ValueError(
                    f"{key} was already {'recorded' if r.kind == 'recorded' else 'measured'} "
                    f"in this test and is now {how} again; give each gpu_benchmark(...) and "
                    "record(...) its own metric name"
                )

    @staticmethod
    def _check_figures(result: Result) -> None:
        """The loader's rules, applied now: a figure saved today must load tomorrow."""
        from ..core.figures import metric_problem, metrics_of

        for name, m in metrics_of(result).items():
            why = metric_problem(m)
            if why:
                raise ValueError(f"{result.key} {name}: {why}")

    def record(
        self,
        metric: str,
        value: float,
        unit: str,
        higher_is_better: bool | None = None,
        note: str | None = None,
        *,
        gate: bool = True,
        derived_from: str | None = None,
        noise_class: str | None = None,
    ) -> Result:
        """Record a figure measured by other means (the largest batch that fits, a latency).

        It becomes a Result like a measurement and is judged against the baseline the same
        way. Lower is better for units of time ('ms', 's', 'us', 'ms/token', 'latency', ...),
        higher otherwise; `higher_is_better` overrides. The value is checked now with the
        rules the baseline loader applies (finite, >= 0, a unit), so nothing saved is
        refused later.

        `gate=False`: an informational figure (a compile time): reported and charted, never
        judged. `derived_from`: the metric name of this test's measurement the figure was
        computed from ("" for the test's unnamed one): one measurement, so it shares that
        measurement's noise class and is not counted again in the run's false-alarm budget.
        `noise_class`: a class of the noise model (settings.NOISE_CLASSES: the values
        @pytest.mark.gpuperf(noise_class=...) takes, in any case) to override the assigned
        one; None or "auto" leaves it assigned."""
        check_metric_name(metric)
        if not isinstance(gate, bool):
            raise ValueError(f"gate must be True or False, got {gate!r}")
        noise_class = self._recorded_noise_class(metric, noise_class)
        if derived_from is not None:
            self._check_derived_from(derived_from)
        higher_is_better = _recorded_direction(metric, value, unit, higher_is_better)
        self._check_new_key(metric, "recorded")
        result = self._recorded_result(metric, float(value), unit.strip(), higher_is_better)
        result.gate, result.derived_from, result.noise_class = gate, derived_from, noise_class
        if note:
            result.notes.append(str(note))
        self._check_figures(result)
        if not self.disabled:
            self.results.append(result)
        return result

    def _recorded_noise_class(self, metric: str, noise_class: str | None) -> str | None:
        """record(noise_class=...) parsed like the marker's (any case), the error naming
        the test and the call; "auto" means the assigned class, as None does."""
        if noise_class is None:
            return None
        try:
            parsed = parse_noise_class(noise_class)
        except ValueError as exc:
            raise ValueError(
                f"{self.nodeid}: record({metric!r}, ..., noise_class={noise_class!r}): {exc}"
            ) from None
        return None if parsed == "auto" else parsed

    def _check_derived_from(self, derived_from: str) -> None:
        """A derived figure shares its measurement's class and false-alarm budget, so the
        measurement must exist in this test already: a typo must not make it a new one."""
        source = f"{self.nodeid}::{derived_from}" if derived_from else self.nodeid
        if not any(r.key == source and r.kind == "measured" for r in self.results):
            raise ValueError(
                f"derived_from={derived_from!r}: no measurement {source} in this test yet "
                "(measure it with gpu_benchmark(...) first)"
            )

    def _recorded_result(self, metric: str, v: float, unit: str, higher: bool) -> Result:
        """A recorded figure as a Result like a measurement's: the value is its own interval
        (one number, no samples), stamped with the device, the GPU, the test's parameters
        and its settings."""
        result = Result(
            nodeid=self.nodeid,
            metric=metric,
            unit=unit,
            work_per_call=1.0,
            kind="recorded",
            higher_is_better=higher,
        )
        result.throughput = Throughput(unit, v, v, v)
        result.backend, result.device = self.backend, self.snapshot.describe()
        self._stamp(result)
        result.config = self.config().to_dict()
        result.stop_reason = "recorded"
        return result


def _recorded_direction(metric: str, value: object, unit: object, higher_is_better: object) -> bool:
    """A recorded figure's value and unit checked with the baseline loader's rules (a
    finite number >= 0, a printable unit), so nothing saved is refused later; returns
    whether higher is better: `higher_is_better`, or from the unit (a time: lower)."""
    number = finite_number(value)
    if number is None:
        shown = (
            f"a whole number of {len(str(abs(value)))} digits, beyond a float's range"
            if isinstance(value, int) and not isinstance(value, bool)
            else repr(value)[:100]
        )
        raise ValueError(f"value of {metric!r} must be a finite number, got {shown}")
    if number < 0:
        raise ValueError(f"value of {metric!r} must be >= 0, got {value!r}")
    if not isinstance(unit, str) or not unit.strip() or not unit.isprintable():
        raise ValueError(f"unit of {metric!r} must be a non-empty string, got {unit!r}")
    if higher_is_better is None:
        higher_is_better = not lower_is_better_unit(unit)
    if not isinstance(higher_is_better, bool):
        raise ValueError(f"higher_is_better must be True, False or None, got {higher_is_better!r}")
    return higher_is_better


def finite_number(value: object) -> float | None:
    """`value` as a finite float, or None for a bool, a non-number, an infinity, NaN, or a
    whole number too large for a float (10**400, which math.isfinite cannot take)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        v = float(value)
    except OverflowError:
        return None
    return v if math.isfinite(v) else None


def check_metric_name(metric: object) -> None:
    """A metric name is part of a baseline key (node id::metric): printable, at most 100
    characters, without '::', '[' or ']', which would let two keys collide."""
    if not isinstance(metric, str) or not metric.strip():
        raise ValueError(f"metric must be a non-empty string, got {metric!r}")
    if (
        len(metric) > 100
        or not metric.isprintable()
        or any(c in metric for c in "[]")
        or ("::" in metric)
    ):
        raise ValueError(
            f"metric {metric!r}: use printable text of at most 100 characters, without "
            "'::', '[' or ']'"
        )


def disabled_result(
    fn: Callable[[], Any],
    nodeid: str,
    metric: str | None,
    unit: str,
    work: float,
    backend: str,
    device: str,
) -> Result:
    """`gpu_benchmark(fn)` under --benchmark-disable: the arguments checked as a measurement
    checks them, then `fn` called once, as pytest-benchmark does; nothing is measured (no
    throughput, no time), recorded or judged."""
    from ..core.results import check_work, resolve_unit
    from .timing import BenchmarkError

    if not callable(fn):
        raise BenchmarkError(f"the work to time must be callable, got {type(fn).__name__} {fn!r}")
    try:
        work, unit = check_work(work), resolve_unit(unit)
    except ValueError as exc:
        raise BenchmarkError(str(exc)) from None
    fn()
    r = Result(nodeid=nodeid, metric=metric, unit=unit, work_per_call=work)
    r.outcome, r.stop_reason, r.calls_total = "disabled", "disabled", 1
    r.backend, r.device = backend, device
    r.notes.append("--benchmark-disable: run once, not measured")
    return r

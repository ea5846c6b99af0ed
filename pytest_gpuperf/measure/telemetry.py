"""NVML telemetry sampled in a background thread while a benchmark runs.

SM clock, clock-event (throttle) reasons, power, temperature and utilisation every
`interval` seconds; energy from NVML's total-energy counter at start and stop. A sample
taken while the GPU was thermally or power throttled is flagged. Every NVML call goes
through nvml.NVML, so a GPU that cannot answer gives missing values, not errors.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..hardware.nvml import NVML

# NVML clock-event reason bits (nvml.h, nvmlClocksEventReason*); stable across versions.
REASON_BITS = {
    0x1: "gpu-idle",
    0x2: "applications-clocks-setting",
    0x4: "sw-power-cap",
    0x8: "hw-slowdown",
    0x10: "sync-boost",
    0x20: "sw-thermal",
    0x40: "hw-thermal",
    0x80: "hw-power-brake",
    0x100: "display-clock-setting",
}
THERMAL = 0x20 | 0x40
POWER = 0x4 | 0x80
HW_SLOWDOWN = 0x8
THROTTLE_MASK = THERMAL | POWER | HW_SLOWDOWN


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASON_BITS.items() if mask & bit]


@dataclass(frozen=True)
class Sample:
    t: float
    sm_clock_mhz: int | None
    reasons: int | None
    power_w: float | None
    temperature_c: int | None
    utilization: int | None  # percent of time a kernel was running (NVML's coarse view)


@dataclass(frozen=True)
class TelemetrySummary:
    samples: int
    sm_clock_median_mhz: float | None
    sm_clock_min_mhz: int | None
    power_mean_w: float | None
    power_max_w: float | None
    temperature_max_c: int | None
    utilization_mean: float | None
    throttled_fraction: float | None  # fraction of samples with a throttle reason
    thermal_fraction: float | None
    power_fraction: float | None
    reasons: tuple[str, ...]  # throttle reasons seen
    energy_j: float | None  # over the measured window
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)

    @property
    def throttled(self) -> bool:
        return bool(self.throttled_fraction)


def _med(xs: list[float]) -> float | None:
    if not xs:
        return None
    from ..core.stats import median

    return median(xs)


@dataclass
class Sampler:
    """Context manager: `with Sampler(nvml, handle) as s: ...; s.summary()`."""

    lib: NVML
    handle: Any
    interval: float = 0.05
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _energy0: int | None = None
    _energy1: int | None = None
    _t0: float = 0.0
    _t1: float = 0.0

    def _read(self) -> Sample:
        q, h = self.lib.query, self.handle
        power = q("nvmlDeviceGetPowerUsage", h)
        util = q("nvmlDeviceGetUtilizationRates", h)
        return Sample(
            t=time.perf_counter(),
            sm_clock_mhz=q("nvmlDeviceGetClockInfo", h, self.lib.constant("NVML_CLOCK_SM", 1)),
            reasons=q("nvmlDeviceGetCurrentClocksEventReasons", h)
            or q("nvmlDeviceGetCurrentClocksThrottleReasons", h),  # older bindings' name
            power_w=power / 1000.0 if power is not None else None,
            temperature_c=q("nvmlDeviceGetTemperature", h, 0),  # NVML_TEMPERATURE_GPU
            utilization=getattr(util, "gpu", None) if util is not None else None,
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self._read())

    def __enter__(self) -> Sampler:
        self.samples.clear()
        self._stop.clear()
        self._energy0 = self.lib.query("nvmlDeviceGetTotalEnergyConsumption", self.handle)
        self._t0 = time.perf_counter()
        self.samples.append(self._read())
        self._thread = threading.Thread(target=self._run, name="gpuperf-telemetry", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.samples.append(self._read())
        self._t1 = time.perf_counter()
        self._energy1 = self.lib.query("nvmlDeviceGetTotalEnergyConsumption", self.handle)

    def summary(self) -> TelemetrySummary:
        return summarize_samples(
            self.samples,
            self._energy0,
            self._energy1,
            self._t1 - self._t0,
        )


def summarize_samples(
    samples: list[Sample], energy0_mj: int | None, energy1_mj: int | None, duration: float
) -> TelemetrySummary:
    clocks = [s.sm_clock_mhz for s in samples if s.sm_clock_mhz is not None]
    powers = [s.power_w for s in samples if s.power_w is not None]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    utils = [s.utilization for s in samples if s.utilization is not None]
    reasons = [s.reasons for s in samples if s.reasons is not None]
    seen = 0
    for r in reasons:
        seen |= r & THROTTLE_MASK

    def frac(mask: int) -> float | None:
        return sum(1 for r in reasons if r & mask) / len(reasons) if reasons else None

    energy = None
    if energy0_mj is not None and energy1_mj is not None and energy1_mj >= energy0_mj:
        energy = (energy1_mj - energy0_mj) / 1000.0
    return TelemetrySummary(
        samples=len(samples),
        sm_clock_median_mhz=_med([float(c) for c in clocks]),
        sm_clock_min_mhz=min(clocks) if clocks else None,
        power_mean_w=sum(powers) / len(powers) if powers else None,
        power_max_w=max(powers) if powers else None,
        temperature_max_c=max(temps) if temps else None,
        utilization_mean=sum(utils) / len(utils) / 100.0 if utils else None,
        throttled_fraction=frac(THROTTLE_MASK),
        thermal_fraction=frac(THERMAL),
        power_fraction=frac(POWER),
        reasons=tuple(reason_names(seen)),
        energy_j=energy,
        duration_s=duration,
    )

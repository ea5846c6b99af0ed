"""The object behind the `gpu_benchmark` fixture: one per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .results import Result
from .settings import MeasureConfig, SettingError, parse_layer, resolve
from .timing import OutOfMemory, measure

if TYPE_CHECKING:
    from .device import DeviceSnapshot


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
        judge: Callable[[str, dict[str, dict[str, Any]], MeasureConfig], dict[str, Any]]
        | None = None,
    ) -> None:
        self.nodeid = nodeid
        self.snapshot = snapshot
        self.backend = "cuda" if snapshot.kind == "cuda" else "cpu"
        self._layers = layers
        self._telemetry = telemetry
        self.emulated = emulated
        self._judge = judge
        self.results: list[Result] = []
        self.extra: list[dict[str, Any]] = []  # recorded metrics (record())

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
        if on_oom not in ("raise", "record"):
            raise ValueError(f"on_oom must be 'raise' or 'record', got {on_oom!r}")
        if metric is not None and (not isinstance(metric, str) or not metric.strip()):
            raise ValueError(f"metric must be a non-empty string, got {metric!r}")
        key = f"{self.nodeid}::{metric}" if metric else self.nodeid
        if any(r.key == key for r in self.results):
            raise ValueError(
                f"{key} was already measured in this test; give each gpu_benchmark(...) call "
                "its own metric='...'"
            )
        try:
            cfg = self.config(**settings)
        except SettingError as exc:
            raise ValueError(str(exc)) from None
        device = self.snapshot.describe()

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

        result = run()
        result.emulated = self.emulated
        self._verdicts(result, cfg)
        for attempt in range(cfg.remeasure):
            if not self._regressed(result):
                break
            first = ", ".join(
                f"{m} {v['change'] * 100:+.2f}%"
                for m, v in result.verdicts.items()
                if v["status"] == "regressed"
            )
            again = run()
            again.emulated = self.emulated
            self._verdicts(again, cfg)
            again.remeasured = attempt + 1
            again.notes.append(
                f"re-measured after a regression ({first}): "
                + ("confirmed" if self._regressed(again) else "not confirmed; this result stands")
            )
            result = again
        if self.emulated:
            result.notes.append(
                f"memory capped to emulate {self.emulated}; speed figures are this GPU's, "
                "not the emulated card's"
            )
        self.results.append(result)
        return result

    def _verdicts(self, result: Result, cfg: MeasureConfig) -> None:
        if self._judge is None:
            return
        from .gate import metrics_of

        metrics = metrics_of(result) if result.outcome == "ok" else {}
        result.verdicts = self._judge(result.key, metrics, cfg)

    @staticmethod
    def _regressed(result: Result) -> bool:
        return any(v.get("status") == "regressed" for v in result.verdicts.values())

    def record(
        self,
        metric: str,
        value: float,
        unit: str,
        higher_is_better: bool = True,
        note: str | None = None,
    ) -> None:
        """Record a metric measured by other means (e.g. the largest batch that fits)."""
        import math

        if not isinstance(metric, str) or not metric:
            raise ValueError(f"metric must be a non-empty string, got {metric!r}")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError(f"value of {metric!r} must be a finite number, got {value!r}")
        extra: dict[str, Any] = {
            "key": f"{self.nodeid}::{metric}",
            "value": float(value),
            "unit": unit,
            "higher_is_better": bool(higher_is_better),
            "device": self.snapshot.describe(),
            "emulated": self.emulated,
            "verdicts": {},
            "note": note,
        }
        if self._judge is not None:
            from .gate import metrics_of_extra

            extra["verdicts"] = self._judge(extra["key"], metrics_of_extra(extra), self.config())
        self.extra.append(extra)

"""Per-run state: resolved options, the profile registry and the device snapshot.

Everything here is lazy. Nothing touches NVML or torch until a test, fixture or option
needs to know the device, so a run with no GPU tests pays nothing for the plugin.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when first needed: a run without GPU tests never loads them
    from .device import DeviceSnapshot
    from .profiles import Profile, Registry

AUTO = "auto"


@dataclass
class Options:
    profile: str = AUTO
    allow_mismatch: bool = False


@dataclass
class GpuPerfSession:
    options: Options
    pyproject: Path | None
    ini_layer: dict[str, Any] = field(default_factory=dict)
    cli_layer: dict[str, Any] = field(default_factory=dict)
    layer_error: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)  # from reports, all workers
    extra: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    _registry: Registry | None = field(default=None, repr=False)
    _snapshot: DeviceSnapshot | None = field(default=None, repr=False)

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from .profiles import ProfileError, load_registry

            try:
                self._registry = load_registry(self.pyproject)
            except ProfileError as exc:
                raise pytest.UsageError(f"gpuperf: {exc}") from None
        return self._registry

    def snapshot(self) -> DeviceSnapshot:
        if self._snapshot is None:
            from .device import detect

            self._snapshot = detect()
        return self._snapshot

    def set_snapshot(self, snap: DeviceSnapshot) -> None:
        """Replace detection (tests of the plugin, and callers that detect via torch)."""
        self._snapshot = snap

    @property
    def snapshot_taken(self) -> bool:
        return self._snapshot is not None

    def detected_profile(self) -> Profile | None:
        return self.registry.match(self.snapshot())

    def profile(self) -> Profile | None:
        """The profile results belong to: the one asked for, or the detected one."""
        if self.options.profile == AUTO:
            return self.detected_profile()
        return self.registry.get(self.options.profile)

    def check_profile(self) -> None:
        """Validate --gpu-profile: known name, and matching the device unless allowed."""
        if self.options.profile == AUTO:
            return
        from .profiles import ProfileError

        try:
            wanted = self.registry.get(self.options.profile)
        except ProfileError as exc:
            raise pytest.UsageError(f"--gpu-profile: {exc}") from None
        if self.options.allow_mismatch:
            return
        snap = self.snapshot()
        detected = self.registry.match(snap)
        if detected is None or detected.name != wanted.name:
            got = detected.name if detected else "no known profile"
            raise pytest.UsageError(
                f"--gpu-profile={wanted.name} does not match this machine: detected "
                f"{snap.describe()} (profile: {got}). Run on a {wanted.description}, use "
                f"--gpu-profile=auto, or pass --gpu-allow-mismatch to compare anyway."
            )

    # ------------------------------------------------------------ hooks (registered plugin)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for r in getattr(report, "gpuperf", None) or ():
            self.results.append(r)
        for r in getattr(report, "gpuperf_extra", None) or ():
            self.extra.append(r)

    def json_payload(self) -> dict[str, Any]:
        snap = self.snapshot()
        prof = self.profile()
        return {
            "schema": "pytest-gpuperf/results-1",
            "device": snap.to_dict(),
            "describe": snap.describe(),
            "profile": prof.name if prof else None,
            "results": list(self.results),
            "metrics": list(self.extra),
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results and not self.extra:
            return
        from .report import RESULT_HEADER, result_rows, table
        from .results import Result

        tr = terminalreporter
        prof = self.profile()
        tr.write_sep("=", "gpuperf results")
        tr.write_line(
            f"device: {self.snapshot().describe()}; profile: {prof.name if prof else 'unknown'}"
        )
        results = [Result.from_dict(r) for r in self.results]
        for line in table(RESULT_HEADER, result_rows(results)):
            tr.write_line(line)
        for m in self.extra:
            tr.write_line(f"{m['key']}: {m['value']:g} {m['unit']}")
        for r in results:
            for note in r.notes:
                tr.write_line(f"  {r.key}: {note}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.write_benchmark_json(session.config)

    def write_benchmark_json(self, config: pytest.Config) -> None:
        """Put our results into pytest-benchmark's --benchmark-json file.

        pytest-benchmark writes that file only when one of its own benchmarks ran, and our
        pytest_benchmark_update_json hook adds a "gpuperf" section then. When none of its
        benchmarks ran, we write the file in its layout, with its machine and commit info
        from its public hooks, so --benchmark-json always holds the GPU results.
        """
        option = (
            config.getoption("benchmark_json", None)
            if config.pluginmanager.hasplugin("benchmark")
            else None
        )
        if not option or not (self.results or self.extra) or hasattr(config, "workerinput"):
            return
        from .report import json_safe

        # pytest-benchmark >= 5.3 passes a path; older versions an open binary file, closed
        # once it has written to it
        if hasattr(option, "write"):
            if getattr(option, "closed", False):
                return  # it wrote the file, with our section from pytest_benchmark_update_json
            data = self._benchmark_json_skeleton(config)
            data["gpuperf"] = json_safe(self.json_payload())
            option.write(json.dumps(data, indent=2, default=str).encode())
            option.close()
            return
        from pathlib import Path as _Path

        target = _Path(option)
        if target.is_file() and target.stat().st_mtime >= self.started:
            try:
                if "gpuperf" in json.loads(target.read_text(encoding="utf-8")):
                    return
            except ValueError:
                pass
        data = self._benchmark_json_skeleton(config)
        data["gpuperf"] = json_safe(self.json_payload())
        target.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")

    @staticmethod
    def _benchmark_json_skeleton(config: pytest.Config) -> dict[str, Any]:
        """pytest-benchmark's JSON layout, with its machine and commit info (public hooks)."""
        from datetime import UTC, datetime
        from importlib.metadata import version

        hook = config.hook
        machine_info = hook.pytest_benchmark_generate_machine_info(config=config)
        hook.pytest_benchmark_update_machine_info(config=config, machine_info=machine_info)
        commit_info = hook.pytest_benchmark_generate_commit_info(config=config)
        hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
        return {
            "machine_info": machine_info,
            "commit_info": commit_info,
            "benchmarks": [],
            "datetime": datetime.now(UTC).isoformat(),
            "version": version("pytest-benchmark"),
        }

"""Per-run state: resolved options, the profile registry and the device snapshot.

Everything here is lazy. Nothing touches NVML or torch until a test, fixture or option
needs to know the device, so a run with no GPU tests pays nothing for the plugin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

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

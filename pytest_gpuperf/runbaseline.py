"""This run's baseline: the profile's file found at collection, the verdicts against it as
results arrive, the save at the end (save mode). No pytest here: a bad file raises
BaselineError, which the session turns into a usage error."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from .results import Result


class RunBaseline:
    """The baseline state of one run. `options` (session.Options, read when used: the
    plugin resolves some of them after the session exists) gives the mode (auto, compare,
    save, off), the directory, the emulated card and the run's false-alarm rate."""

    def __init__(self, options: Any) -> None:
        self.options = options
        self.file: Any = None  # baselines.BaselineFile once loaded
        self.path: Path | None = None
        self.profile: str | None = None  # the file's profile (name@emulated when emulating)
        self.note: str | None = None
        self.ready = False
        self._confidence: float | None = None

    @property
    def mode(self) -> str:
        return str(self.options.baseline_mode)

    @property
    def comparing(self) -> bool:
        return self.ready and self.mode in ("auto", "compare")

    @property
    def entries(self) -> dict[str, dict[str, Any]]:
        return self.file.entries if self.file is not None else {}

    def prepare(self, profile: str | None, describe: str) -> None:
        """Find and validate the baseline file of `profile` (None: no profile matches the
        device `describe`). Raises BaselineError naming a bad file (baselines.locate)."""
        if self.ready or self.mode == "off":
            return
        if profile is None:
            self.note = (
                f"no GPU profile matches {describe}: results are not compared or saved; "
                "add a profile in pyproject.toml ([tool.gpuperf.profiles])"
            )
        else:
            from .baselines import locate

            self.path, self.profile, self.file = locate(
                self.options.baseline_dir,
                profile,
                self.options.emulate,
                must_exist=self.mode == "compare",
            )
        self.ready = True

    def line(self) -> str | None:
        """Which baseline file this run compares with, saves to, or looked for."""
        if self.mode == "off":
            return "baselines off"
        if self.path is None:
            return self.note
        if self.mode == "save":
            return f"saving to baseline {self.path} (profile {self.profile})"
        if self.file is None:
            return f"no baseline at {self.path} (profile {self.profile}): results are new"
        n = len(self.file.entries)
        return f"comparing with baseline {self.path} (profile {self.profile}, {n} entries)"

    def plan_lines(self, nodeids: list[str], skipped: dict[str, str]) -> list[str]:
        from .outputs.text import plan_lines

        where = self.path if self.file is not None else None
        return plan_lines(self.entries, nodeids, str(where) if where else None, skipped)

    def confidence(self, collected: set[str]) -> float:
        """Each metric's confidence, from the run's false-alarm rate shared by the baseline
        metrics of the collected tests; computed once, at the first verdict (every test is
        collected by then, in each pytest-xdist worker too)."""
        if self._confidence is None:
            from .gate import judged_metrics, selected
            from .verdict import per_metric_confidence

            keys = selected(self.entries, collected) if collected else None
            m = judged_metrics(self.entries, keys)
            self._confidence = per_metric_confidence(self.options.false_alarm, m)
        return self._confidence

    def judge(
        self, result: Result, env: dict[str, Any], collected: set[str], allow_cross_gpu: bool
    ) -> dict[str, dict[str, Any]]:
        """Verdict dicts per metric of one result (the gate's, with the tolerances the
        result's test resolved: call > marker > CLI > ini); none when not comparing."""
        if not self.comparing:
            return {}
        from .gate import judge_result

        return judge_result(
            result,
            self.entries,
            env,
            allow_cross_gpu=allow_cross_gpu,
            confidence=self.confidence(collected),
        )

    def run_confidence(self, collected: set[str]) -> float | None:
        """For the run's summary: the confidence its verdicts were judged at, also where
        this process judged none itself (the pytest-xdist controller)."""
        if self.comparing and self.file is not None:
            return self.confidence(collected)
        return self._confidence

    def failure_lines(self, results: list[Result]) -> list[str]:
        from .gate import failure_lines

        return failure_lines(results, self.entries, self.profile or "?")

    def missing(self, keys: Iterable[str], collected: set[str]) -> list[str]:
        """Baseline entries of collected tests that produced no result in this run."""
        if not self.comparing or self.file is None:
            return []
        from .gate import missing

        return missing(self.entries, keys, collected)

    def save(
        self,
        *,
        stopped: bool,
        results: list[Result],
        detected: str | None,
        describe: str,
        failed_tests: Iterable[str],
        environment: dict[str, Any],
        durations: dict[str, float],
    ) -> tuple[str | None, bool]:
        """Merge this run's results into the file (save mode). Returns the line to show
        (None: nothing to say) and whether a save that was asked for did not happen."""
        if self.mode != "save" or not results or self.path is None:
            return None, False
        from .saving import refusal, save_run

        why = refusal(
            stopped=stopped,
            results=results,
            detected=detected,
            baseline_profile=self.profile,
            describe=describe,
        )
        if why:
            return f"NOT SAVED to {self.path}: {why}", True
        return save_run(
            self.path, self.profile or "?", results, failed_tests, environment, durations
        )

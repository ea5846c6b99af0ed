"""The one run summary every output is built from."""

from __future__ import annotations

from typing import Any

from ..core.results import Result
from ..judging.blind import Blindness
from ..judging.explain import Rerun

SCHEMA = "pytest-gpuperf/results-1"


class RunSummary:
    """Everything the outputs of one run show, built once at the end of the run: the
    terminal summary, the JSON file, the GitHub step summary, JUnit properties,
    pytest-benchmark's JSON and the HTML report are each made from it, by the renderers
    (`terminal.terminal_lines`, `markdown.markdown`, ...): it is data and knows none of
    them. `runfile` rebuilds it from a JSON results file, so `gpuperf report` shows saved
    runs the same way."""

    def __init__(
        self,
        *,
        device: dict[str, Any],
        describe: str,
        profile: str | None,
        baseline_path: str | None,
        baseline_found: bool,
        baseline_mode: str,
        baseline_note: str | None,
        comparing: bool,
        warn_only: bool,
        emulated: tuple[str, float | None] | None,
        results: list[Result],
        missing: list[str],
        confidence: float | None = None,
        source: str | None = None,
        shifts: list[str] | None = None,
        session_id: str | None = None,
        saved: bool = False,
        selected: list[str] | None = None,
        rerun: Rerun | None = None,
        xdist_workers: int = 0,
        blind: Blindness | None = None,
        commit: str | None = None,
        dirty: bool | None = None,
        date: str | None = None,
        since: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self.device = device
        self.describe = describe
        self.profile = profile
        self.baseline_path = baseline_path
        self.baseline_found = baseline_found
        self.baseline_mode = baseline_mode
        self.baseline_note = baseline_note
        self.comparing = comparing
        self.warn_only = warn_only
        self.emulated = emulated
        self.results = results
        self.missing = missing
        self.confidence = confidence  # of each metric's verdict (the run's false-alarm budget)
        self.source = source  # the results file it was read from, if any
        self.shifts = shifts or []  # class-wide shift lines of the run
        self.session_id = session_id  # the run's session id (history items carry it)
        self.saved = saved  # the run saved itself into its baseline file
        # the test ids the run selected (None: not recorded): a baseline entry of a test
        # outside them was not run, not missing
        self.selected = selected
        self.rerun = rerun  # what a command re-running a failing verdict names (None: unknown)
        self.xdist_workers = xdist_workers  # pytest-xdist workers started (0: none)
        # the gated figures the judgement left undecided, and why (None: not judged)
        self.blind = blind
        self.commit = commit  # git HEAD of the run's checkout (None: none, or not recorded)
        self.dirty = dirty  # its code differed from that commit (None: unknown)
        self.date = date  # when the run started, ISO 8601 UTC (None: not recorded)
        # (test key, figure) -> since when a regressed figure stands, from the nightly
        # history (--gpuperf-history); shown, not saved in the results file
        self.since = since or {}

    def payload(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "device": self.device,
            "describe": self.describe,
            "profile": self.profile,
            "baseline": self.baseline_path,
            "baseline_mode": self.baseline_mode,
            "confidence": self.confidence,
            "class_shifts": list(self.shifts),
            "session_id": self.session_id,
            "saved": self.saved,
            "emulated": list(self.emulated) if self.emulated else None,
            "results": [r.to_dict() for r in self.results],
            "missing": list(self.missing),
            "selected": list(self.selected) if self.selected is not None else None,
            "xdist_workers": self.xdist_workers,
            "blind": self.blind.to_json() if self.blind is not None else None,
            "commit": self.commit,
            "dirty": self.dirty,
            "date": self.date,
        }

"""The one run summary every output is built from."""

from __future__ import annotations

from typing import Any

from ..results import Result

SCHEMA = "pytest-gpuperf/results-1"


class SchemaError(ValueError):
    """A results file that is not ours, or not of a schema we read."""


class RunSummary:
    """Everything the outputs of one run show, built once at the end of the run: the
    terminal summary, the JSON file, the GitHub step summary, JUnit properties,
    pytest-benchmark's JSON and the HTML report are each made from it. `from_payload`
    rebuilds it from a JSON results file, so `gpuperf report` shows saved runs the same way."""

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

    def verdict_rows(self) -> list[list[str]]:
        from .text import verdict_rows

        return verdict_rows(self.results, self.missing) if self.comparing else []

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
        }

    @classmethod
    def from_payload(cls, data: Any, source: str) -> RunSummary:
        """A summary from a `--gpuperf-json` file's content. Raises SchemaError naming the
        file and what is wrong; results that cannot be read are a SchemaError too (a file
        is taken whole or not at all)."""
        if not isinstance(data, dict):
            raise SchemaError(f"{source}: not a gpuperf results file (a JSON object expected)")
        if data.get("schema") != SCHEMA:
            raise SchemaError(
                f"{source}: schema {data.get('schema')!r} is not {SCHEMA!r} "
                "(a file written by --gpuperf-json is expected)"
            )
        results = read_results(data.get("results"), source)
        results += _legacy_metrics(data.get("metrics"), source)
        device: dict[str, Any] = data["device"] if isinstance(data.get("device"), dict) else {}
        emulated = data.get("emulated")
        emu = None
        if isinstance(emulated, list) and len(emulated) == 2 and isinstance(emulated[0], str):
            emu = (emulated[0], emulated[1])
        else:  # files written before the run's emulation was recorded: from the results
            names = {r.emulated for r in results if r.emulated}
            emu = (names.pop(), None) if len(names) == 1 else None
        baseline = data.get("baseline")
        judged = any(r.verdicts for r in results)
        return cls(
            device=device,
            describe=str(data.get("describe") or "unknown device"),
            profile=data.get("profile") if isinstance(data.get("profile"), str) else None,
            baseline_path=baseline if isinstance(baseline, str) else None,
            baseline_found=judged,
            baseline_mode=str(data.get("baseline_mode") or "off"),
            baseline_note=None,
            comparing=judged,
            warn_only=False,
            emulated=emu,
            results=results,
            missing=[m for m in data.get("missing") or [] if isinstance(m, str)],
            confidence=data.get("confidence")
            if isinstance(data.get("confidence"), float)
            else None,
            source=source,
            shifts=[x for x in data.get("class_shifts") or [] if isinstance(x, str)],
            session_id=data.get("session_id") if isinstance(data.get("session_id"), str) else None,
            saved=data.get("saved") is True,
        )

    def terminal_lines(self, verbosity: int = 0) -> list[str]:
        from .terminal import terminal_lines

        return terminal_lines(self, verbosity)

    def markdown(self) -> str:
        from .markdown import markdown

        return markdown(self)


def read_results(raw: Any, where: str) -> list[Result]:
    """The results of a results file, each figure checked as a baseline's are. Raises
    SchemaError naming `where`, the result and what is wrong (`gpuperf compare` and
    `gpuperf report` both read files through here)."""
    from ..baseline.store import metric_problem, metrics_of

    if not isinstance(raw, list):
        raise SchemaError(f"{where}: 'results' must be a list")
    out = []
    for i, d in enumerate(raw):
        try:
            r = Result.from_dict(d)
        except ValueError as exc:
            raise SchemaError(f"{where}: results[{i}]: {exc}") from None
        for name, m in metrics_of(r).items():
            why = metric_problem(m)
            if why:
                raise SchemaError(f"{where}: {r.key} {name}: {why}")
        out.append(r)
    return out


def _legacy_metrics(raw: Any, source: str) -> list[Result]:
    """Recorded figures as files written before commit 7f206e0 kept them: a 'metrics' list
    of {key, value, unit, higher_is_better, ...} beside the results."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SchemaError(f"{source}: 'metrics' must be a list")
    from ..results import Throughput

    out = []
    for i, m in enumerate(raw):
        ok = isinstance(m, dict) and isinstance(m.get("key"), str) and "::" in m["key"]
        value = m.get("value") if isinstance(m, dict) else None
        if not ok or isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaError(f"{source}: metrics[{i}] is not a recorded figure")
        nodeid, metric = m["key"].rsplit("::", 1)
        unit = str(m.get("unit") or "")
        r = Result(nodeid=nodeid, metric=metric, unit=unit, work_per_call=1.0, kind="recorded",
                   higher_is_better=bool(m.get("higher_is_better", True)))  # fmt: skip
        r.throughput = Throughput(unit, float(value), float(value), float(value))
        r.device = str(m.get("device") or "")
        r.emulated = m.get("emulated") if isinstance(m.get("emulated"), str) else None
        r.stop_reason = "recorded"
        if m.get("note"):
            r.notes.append(str(m["note"]))
        out.append(r)
    return out

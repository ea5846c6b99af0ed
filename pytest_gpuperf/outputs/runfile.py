"""Reading a results file: the JSON written by `pytest --gpuperf-json=PATH`, or the `gpuperf`
section of `pytest --benchmark-json=PATH`. The one place that reads one: `gpuperf compare`
and `gpuperf report` both come here, and the outputs receive the RunSummary built from it.

Every field an output or a verdict reads is checked here, including those the plugin itself
writes (a file may have been edited, or written by someone else): a file is taken whole or
refused with one ResultsFileError that names the file and the field. The same limits as for
baselines apply (a regular file, store.MAX_BYTES, strict UTF-8 JSON)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..core.results import Result
from ..judging.blind import Blindness
from .summary import SCHEMA, RunSummary


class ResultsFileError(ValueError):
    """A results file that cannot be read, is not ours, or holds a value of the wrong kind."""


def read_run(path: Path) -> tuple[dict[str, Any], RunSummary]:
    """The file's run: its JSON object (for what compare reads from it) and its summary."""
    from ..baseline.store import parse_json, read_text

    where = f"results file {path}"
    try:
        text = read_text(path, "results file")
    except ValueError as exc:
        raise ResultsFileError(str(exc)) from None
    if text is None:
        raise ResultsFileError(f"{where}: does not exist")
    try:
        data = parse_json(text)
    except ValueError as exc:
        raise ResultsFileError(f"{where}: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("gpuperf"), dict):
        data = data["gpuperf"]  # pytest-benchmark's JSON with our section
    return data, summary_from_payload(data, where, source=str(path))


def summary_from_payload(data: Any, where: str, source: str | None = None) -> RunSummary:
    """The summary of a results file's JSON content. Raises ResultsFileError starting with
    `where` (the file) and naming the field."""
    if not isinstance(data, dict) or "results" not in data or "device" not in data:
        raise ResultsFileError(
            f"{where}: holds no gpuperf results (write them with pytest --gpuperf-json=PATH "
            "or --benchmark-json=PATH)"
        )
    if data.get("schema", SCHEMA) != SCHEMA:  # none: a file before the schema was named
        raise ResultsFileError(
            f"{where}: schema {_show(data.get('schema'))} is not {SCHEMA!r} "
            "(a file written by --gpuperf-json is expected)"
        )
    _check_device(data["device"], where)
    for name in ("describe", "profile", "baseline", "baseline_mode"):
        _check(data.get(name), (str, None), f"{where}: {name!r}", "a string")
    confidence = data.get("confidence")
    if confidence is not None and not (_number(confidence) and 0 < confidence < 1):
        raise ResultsFileError(f"{where}: 'confidence' must be a fraction, got {_show(confidence)}")
    missing = data.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
        raise ResultsFileError(f"{where}: 'missing' must be a list of test ids")
    selected = data.get("selected")
    if selected is not None and (
        not isinstance(selected, list) or not all(isinstance(t, str) for t in selected)
    ):
        raise ResultsFileError(f"{where}: 'selected' must be a list of test ids or null")
    shifts = data.get("class_shifts", [])
    if not isinstance(shifts, list) or not all(isinstance(x, str) for x in shifts):
        raise ResultsFileError(f"{where}: 'class_shifts' must be a list of lines")
    _check_run(data, where)
    workers = data.get("xdist_workers", 0)  # absent in files written before 2026-12-06
    if not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 0):
        raise ResultsFileError(f"{where}: 'xdist_workers' must be a count, got {_show(workers)}")
    results = read_results(data["results"], where)
    emulated = data.get("emulated")
    emu: tuple[str, float | None] | None = None
    if emulated is not None:
        if not (
            isinstance(emulated, list)
            and len(emulated) == 2
            and isinstance(emulated[0], str)
            and (emulated[1] is None or _number(emulated[1]))
        ):
            raise ResultsFileError(
                f"{where}: 'emulated' must be [profile, GiB or null], got {_show(emulated)}"
            )
        emu = (emulated[0], emulated[1])
    else:  # files written before the run's emulation was recorded: from the results
        names = {r.emulated for r in results if r.emulated}
        emu = (names.pop(), None) if len(names) == 1 else None
    judged = any(r.verdicts for r in results)
    return RunSummary(
        device=data["device"],
        describe=data.get("describe") or "unknown device",
        profile=data.get("profile"),
        baseline_path=data.get("baseline"),
        baseline_found=judged,
        baseline_mode=data.get("baseline_mode") or "off",
        baseline_note=None,
        comparing=judged,
        warn_only=False,
        emulated=emu,
        results=results,
        missing=missing,
        confidence=float(confidence) if confidence is not None else None,
        source=source,
        shifts=shifts,
        session_id=data.get("session_id"),
        saved=data.get("saved") is True,
        selected=selected,
        xdist_workers=workers,
        blind=Blindness.from_json(data.get("blind")),
        commit=data.get("commit"),
        dirty=data.get("dirty"),
        date=data.get("date"),
    )


def _check_run(data: dict[str, Any], where: str) -> None:
    """The run's own fields: its session id, whether it saved itself, its commit, whether
    its tree was dirty and its date (the last three absent in files before 2026-12-07)."""
    for name in ("session_id", "commit", "date"):
        _check(data.get(name), (str, None), f"{where}: {name!r}", "a string")
    if not isinstance(data.get("saved", False), bool):
        got = _show(data["saved"])
        raise ResultsFileError(f"{where}: 'saved' must be true or false, got {got}")
    if not isinstance(data.get("dirty", False), bool | None):  # 0 is no answer either
        raise ResultsFileError(f"{where}: 'dirty' must be true, false or null, got "
                               f"{_show(data['dirty'])}")  # fmt: skip


def run_count(summaries: list[RunSummary]) -> int:
    """How many runs the summaries are: one run's file in two formats (its --gpuperf-json
    and its --benchmark-json) is one run, known by its session id; a file without one
    counts on its own."""
    ids = {s.session_id for s in summaries if s.session_id}
    return len(ids) + sum(1 for s in summaries if not s.session_id)


def read_results(raw: Any, where: str) -> list[Result]:
    """The results of a results file, each figure checked as a baseline's are and each
    verdict as the gate writes it."""
    from ..core.figures import metric_problem, metrics_of

    if not isinstance(raw, list):
        raise ResultsFileError(f"{where}: 'results' must be a list")
    out = []
    for i, d in enumerate(raw):
        try:
            r = Result.from_dict(d)
        except ValueError as exc:
            raise ResultsFileError(f"{where}: results[{i}]: {exc}") from None
        for name, m in metrics_of(r).items():
            why = metric_problem(m)
            if why:
                raise ResultsFileError(f"{where}: results[{i}] {r.key} {name}: {why}")
        out.append(r)
    return out


# device fields and their kinds: what the report, the terminal and the gate read
_DEVICE_TEXTS = ("kind", "driver_version", "cuda_driver_version", "cpu_model", "hostname",
                 "python", "source", "note", "interconnect")  # fmt: skip
_GPU_TEXTS = ("name", "uuid", "mig_profile", "parent_name", "pci_bus_id")
_GPU_NUMBERS = ("memory_total", "parent_memory_total", "power_limit_w", "max_sm_clock_mhz")


def _check_device(device: Any, where: str) -> None:
    if not isinstance(device, dict):
        raise ResultsFileError(f"{where}: 'device' must be an object")
    for name in _DEVICE_TEXTS:
        _check(device.get(name), (str, None), f"{where}: device {name!r}", "a string")
    for name in ("cpu_cores", "host_memory"):
        _check(device.get(name), (float, None), f"{where}: device {name!r}", "a number")
    gpus = device.get("gpus") or []
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise ResultsFileError(f"{where}: device 'gpus' must be a list of objects")
    for i, g in enumerate(gpus):
        for name in _GPU_TEXTS:
            _check(g.get(name), (str, None), f"{where}: device gpus[{i}] {name!r}", "a string")
        for name in _GPU_NUMBERS:
            _check(g.get(name), (float, None), f"{where}: device gpus[{i}] {name!r}", "a number")
    packages = device.get("packages") or {}
    if not isinstance(packages, dict) or not all(isinstance(v, str) for v in packages.values()):
        raise ResultsFileError(f"{where}: device 'packages' must be an object of version strings")


def _check(value: Any, kinds: tuple[type | None, ...], what: str, expected: str) -> None:
    if value is None and None in kinds:
        return
    if float in kinds and _number(value):
        return
    if str in kinds and isinstance(value, str):
        return
    raise ResultsFileError(f"{what} must be {expected} or null, got {_show(value)}")


def _number(value: Any) -> bool:
    """A finite int or float, not a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _show(value: Any) -> str:
    """A value for an error message: its repr, cut short (a file may hold megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

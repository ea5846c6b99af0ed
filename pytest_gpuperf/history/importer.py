"""`gpuperf history import DIR FILES...`: a team's past runs into the history, so it counts
from day one. A results file (`--gpuperf-json`, or `--benchmark-json`'s gpuperf section)
is one run, with its verdicts; a baseline file gives one run per saved session (its values,
their flags, no verdict). A run the history already holds (the same session id, else the
same profile and date) is skipped, so importing twice adds nothing."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .record import COLUMNS, FORMAT_VERSION, SCHEMA, run_record, write_run


class HistoryImportError(ValueError):
    """A file that cannot be imported: the message names it and the field."""


def identity(record: dict[str, Any]) -> str:
    """What makes two records one run: the session id, else the profile and date."""
    from .store import utc

    sid = record.get("session_id")
    return f"session {sid}" if sid else f"{record.get('profile')} at {utc(record.get('date'))}"


def known(directory: Path) -> set[str]:
    """The identities of the runs `directory` holds (every file checked: a broken history
    is said before anything is added to it)."""
    from .store import read_history

    if not directory.exists():
        return set()
    return {identity({"session_id": r.session_id, "profile": r.profile, "date": r.date})
            for r in read_history(directory).runs}  # fmt: skip


def from_results(path: Path) -> dict[str, Any]:
    """The run of one results file."""
    from ..outputs.runfile import ResultsFileError, read_run

    try:
        _, summary = read_run(path)
    except ResultsFileError as exc:
        raise HistoryImportError(str(exc)) from None
    if not summary.date:
        raise HistoryImportError(f"results file {path}: 'date' is missing (files written "
                                 "before 2026-12-07 have none)")  # fmt: skip
    return run_record(summary, "results-file", origin=str(path))


def from_baseline(path: Path) -> list[dict[str, Any]]:
    """A run per session a baseline file saved, oldest first."""
    from ..baseline.history import session_key
    from ..baseline.schema import BaselineError
    from ..baseline.store import load

    try:
        base = load(path)
    except BaselineError as exc:
        raise HistoryImportError(str(exc)) from None
    if base is None:
        raise HistoryImportError(f"baseline file {path}: does not exist")
    runs: dict[str, dict[str, Any]] = {}
    rows: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    restarts: dict[str, list[dict[str, str]]] = defaultdict(list)
    for key, entry in base.entries.items():
        env = entry.get("environment") or {}
        for name, m in (entry.get("metrics") or {}).items():
            for item in m.get("history") or []:
                sk = session_key(item)
                if not item.get("date"):
                    where = f"baseline file {path}: {key} {name}"
                    raise HistoryImportError(f"{where}: a session has no 'date'")
                runs.setdefault(sk, _session_run(base.profile, item, env, path))
                rows[sk].append((key, None, name, item["median"], item.get("ci_low"),
                                 item.get("ci_high"), None, m["unit"], m["direction"],
                                 m.get("noise_class"), list(item.get("flags") or []),
                                 None, None, None, None, None))  # fmt: skip
                rec = item.get("restart")
                if isinstance(rec, dict):  # gpuperf baseline accept restarted it here
                    note = f"history restarted on {str(rec.get('date'))[:10]}: {rec.get('reason')}"
                    restarts[sk].append({"test": key, "figure": name, "note": note})
    out = []
    for sk, run in runs.items():
        run["figures"] = {c: [row[i] for row in rows[sk]] for i, c in enumerate(COLUMNS)}
        run["restarts"] = restarts[sk]
        out.append(run)
    return sorted(out, key=lambda r: r["date"])


def _session_run(
    profile: str, item: dict[str, Any], env: dict[str, Any], path: Path
) -> dict[str, Any]:
    """A baseline session's run, without its figures: the card is the entry's environment
    (the newest session's: a baseline keeps no older one), the session's own GPU and host."""
    sid = item.get("session") if isinstance(item.get("session"), str) else None
    return {"schema": SCHEMA, "version": FORMAT_VERSION, "date": item["date"],
            "commit": item.get("commit"), "dirty": None, "session_id": sid,
            "profile": profile, "saved": True, "source": "baseline", "origin": str(path),
            "card": {"name": env.get("gpu"), "uuid": item.get("gpu_uuid"),
                     "driver": env.get("driver"), "cuda": env.get("cuda"),
                     "torch": env.get("torch"), "host": item.get("host")}}  # fmt: skip


def read_any(path: Path) -> list[dict[str, Any]]:
    """The runs of one file: a baseline file's sessions, else a results file's run."""
    from ..baseline.store import parse_json, read_text

    try:
        text = read_text(path, "file")
        data = parse_json(text) if text is not None else None
    except ValueError as exc:
        raise HistoryImportError(f"{path}: {exc}") from None
    if data is None:
        raise HistoryImportError(f"{path}: does not exist")
    if isinstance(data, dict) and isinstance(data.get("entries"), dict) and "schema" in data:
        return from_baseline(path)
    return [from_results(path)]


def import_files(directory: Path, files: list[Path]) -> tuple[list[Path], int]:
    """Every run of `files` not yet in `directory`, written there: (the files written, the
    runs skipped as already held). Every file is read and checked before one is written."""
    records = [r for f in files for r in read_any(f)]
    held = known(directory)
    written, skipped = [], 0
    for record in records:
        ident = identity(record)
        if ident in held:
            skipped += 1
            continue
        held.add(ident)
        written.append(write_run(directory, record))
    return written, skipped

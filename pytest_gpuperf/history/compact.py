"""`gpuperf history compact DIR --before DATE`: the run files older than DATE gathered into
one archive file a month (DIR/<YYYY-MM>-archive.json, schema pytest-gpuperf/history-archive),
so a history of years is dozens of files, not thousands. Nothing is dropped: every run is
kept whole. The archive is written (never over a file), read back and compared before the
run files it holds are removed; a compaction cut short leaves runs in both, which the
reader counts once (store.read_history)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from .record import archive_text, write_new
from .store import HistoryError, read_history, utc


def compact(directory: Path, before: str) -> tuple[list[Path], int]:
    """Archive every run file dated before `before` (an ISO date or time, UTC); return the
    archives written and the run files removed."""
    cut = utc(before if "T" in before else f"{before}T00:00:00+00:00")
    if cut is None:
        raise HistoryError(f"--before {before!r}: not an ISO 8601 date (e.g. 2026-06-01)")
    hist = read_history(directory)  # every file checked before one is touched
    months: dict[str, list[str]] = defaultdict(list)
    for run in hist.runs:
        if run.date < cut and "#" not in run.name:  # "#": a run already in an archive
            months[run.date[:7]].append(run.name)
    written, removed = [], 0
    for month, names in sorted(months.items()):
        records = [_read(directory / n) for n in names]
        path = write_new(directory, f"{month}-archive", archive_text(records))
        back = json.loads(path.read_text(encoding="utf-8"))["runs"]
        if back != records:  # never remove what the archive does not hold
            path.unlink()
            raise HistoryError(f"history archive {path}: did not read back as written")
        written.append(path)
        for n in names:
            (directory / n).unlink()
            removed += 1
    return written, removed


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data

"""A run recorded into the nightly history (`--gpuperf-history=DIR`, ini gpuperf_history):
the run layer's one call into history/, made only where the option is given, so a run
without it imports nothing of the history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def history_dir(config: pytest.Config) -> Path | None:
    """The history directory asked for (the command line, else the ini file), relative to
    the rootdir; None: none asked for."""
    raw = config.getoption("gpuperf_history") or config.getini("gpuperf_history")
    if not raw or not str(raw).strip():
        return None
    path = Path(str(raw).strip())
    return path if path.is_absolute() else config.rootpath / path


def record_history(config: pytest.Config, summary: Any, notes: list[str]) -> bool:
    """Write the run's file into the history, saying where in `notes`; True where one was
    asked for and could not be written (which fails the run, as any output asked for)."""
    directory = history_dir(config)
    if directory is None:
        return False
    from ..history.record import run_record, write_run

    base = getattr(summary, "baseline_path", None)
    if base and Path(base).parent.resolve() == directory.resolve():
        notes.append(f"gpuperf: NOT WRITTEN: --gpuperf-history {directory}: is the baseline "
                     "directory; give the history a directory of its own")  # fmt: skip
        return True
    try:
        path = write_run(directory, run_record(summary))
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        notes.append(f"gpuperf: NOT WRITTEN: --gpuperf-history {directory}: {why}")
        return True
    notes.append(f"gpuperf: history: recorded this run as {path}")
    return False


def levels_since(config: pytest.Config, sess: Any) -> dict[tuple[str, str], str]:
    """Where a history is given and the run regressed: per regressed (test key, figure),
    since which run and commit it has been at its new level and how many commits are in
    that range (history/since.py); {} where the history finds no change for the worse.
    A history that cannot be read is said in the run's notes and changes no verdict."""
    directory = history_dir(config)
    if directory is None or sess.base.judgement is None or not directory.is_dir():
        return {}
    from ..history.since import regressed_points

    points = regressed_points(sess.results)
    if not points:
        return {}
    from datetime import UTC, datetime

    from ..core import gitcmd
    from ..history.cache import read_cached
    from ..history.since import new_levels, since_text
    from ..history.store import HistoryError, Run

    prof = sess.profile()
    commit, dirty = sess.base.code_state()
    date = datetime.fromtimestamp(sess.started, UTC).isoformat(timespec="seconds")
    this = Run("this run", date, commit, dirty, prof.name if prof else None, False, "run", {})
    try:
        found = new_levels(read_cached(directory), points, this.profile, this)
    except (HistoryError, OSError) as exc:
        notes = sess.finish_notes
        notes.append(f"gpuperf: history: since when each regression stands, not said: {exc}")
        return {}
    out = {}
    for key, since in found.items():
        good, bad = since.last_good.commit, since.first_bad.commit
        count = gitcmd.out(config.rootpath, "rev-list", "--count", f"{good}..{bad}") \
            if good and bad else None  # fmt: skip
        out[key] = since_text(since, int(count) if count and count.isdigit() else None)
    return out

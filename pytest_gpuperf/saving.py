"""Saving a run's results into its profile's baseline file (--gpuperf-baseline=save): what
must never be saved, and the merge itself. No pytest here: the session says what happened."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .results import Result


def refusal(
    *,
    stopped: bool,
    results: list[Result],
    detected: str | None,
    baseline_profile: str | None,
    describe: str,
) -> str | None:
    """Why this run's results must not be saved, or None."""
    from .gate import key_collisions

    if stopped:
        return "the run was interrupted or stopped early; nothing was saved"
    clashes = key_collisions(results)
    if clashes:
        return "; ".join(clashes)
    if baseline_profile and (detected is None or detected != baseline_profile.split("@")[0]):
        return (
            f"results measured on {describe} (profile {detected or 'none'}) never enter the "
            f"baseline of profile {baseline_profile!r}, whatever --gpu-allow-mismatch says"
        )
    return None


def save_run(
    path: Path,
    profile: str,
    results: list[Result],
    failed_tests: Iterable[str],
    environment: dict[str, Any],
    durations: dict[str, float],
) -> tuple[str, bool]:
    """Merge the results of passed tests into the baseline file. Returns the line to show
    and whether a save that was asked for did not happen."""
    from .baselines import BaselineError, save
    from .gate import entries_to_save

    failed = set(failed_tests)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    updates = entries_to_save(
        [r for r in results if r.nodeid not in failed],
        environment,  # one run, one device, one emulation
        date=now,
        commit=git_commit(path.parent),
        durations=durations,
    )
    skipped = sorted({r.nodeid for r in results if r.nodeid in failed})
    note = f"; not saved, their test failed: {', '.join(skipped)}" if skipped else ""
    if not updates:
        return f"nothing saved to {path}{note}", False
    try:
        save(path, profile, updates, now)
    except BaselineError as exc:
        return f"NOT SAVED: {exc}", True
    except (OSError, ValueError) as exc:  # no directory, no permission, lock timeout
        return f"NOT SAVED: baseline file {path}: {type(exc).__name__}: {exc}", True
    return f"saved {len(updates)} benchmark(s) to {path}{note}", False


def git_commit(where: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where if where.exists() else None,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None

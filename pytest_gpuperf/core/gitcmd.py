"""git, asked about the repository a baseline or a checkout lives in: the one place the
plugin's short questions go through (the A/B and paired stages' worktree builds use
fresh.abtree.git, which waits longer and lets errors through)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run(where: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """`git ARGS` in `where`'s nearest existing folder, at most 10 s; None where git is
    missing or hangs (a question it cannot answer is asked as if unanswered). Output that is
    not UTF-8 (a file name in Latin-1 in a warning) is read with replacement characters."""
    here = where
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        return subprocess.run(["git", *args], cwd=here if here.is_dir() else here.parent,
                              capture_output=True, text=True, errors="replace", timeout=10,
                              check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None


def out(where: Path, *args: str) -> str | None:
    """git's output, stripped; None on an error or an empty answer."""
    done = run(where, *args)
    return done.stdout.strip() or None if done and done.returncode == 0 else None  # fmt: skip


def ok(where: Path, *args: str) -> bool:
    """Whether git answered yes (exit status 0)."""
    done = run(where, *args)
    return done is not None and done.returncode == 0


def status(where: Path, *args: str) -> int | None:
    """git's exit status; None where it did not run."""
    done = run(where, *args)
    return None if done is None else done.returncode

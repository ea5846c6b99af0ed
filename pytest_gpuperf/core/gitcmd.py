"""git, the one place the package runs it: the short questions about the repository a
baseline or a checkout lives in (`run`, `out`, `ok`, `status`: at most 10 s, an unanswered
question reads as no answer), and the worktree builds of `gpuperf ab` and the paired stage
(`call`: longer, its errors go through to the caller, which says what failed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

QUESTION_S = 10.0  # a short question: git missing or hung is asked as if unanswered
BUILD_S = 120.0  # a worktree's add or removal, a submodule listing, of a large repository


def _git(cwd: Path, args: tuple[str, ...], timeout: float,
         errors: str | None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          errors=errors, timeout=timeout, check=False)  # fmt: skip


def run(where: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """`git ARGS` in `where`'s nearest existing folder, at most QUESTION_S; None where git is
    missing or hangs (a question it cannot answer is asked as if unanswered). Output that is
    not UTF-8 (a file name in Latin-1 in a warning) is read with replacement characters."""
    here = where
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        return _git(here if here.is_dir() else here.parent, args, QUESTION_S, "replace")
    except (OSError, subprocess.SubprocessError):
        return None


def call(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `repo`, at most BUILD_S seconds: the A/B and paired stages' worktree
    builds (fresh/abtree.py, paired/stage.py). Its errors go through (TimeoutExpired;
    FileNotFoundError where git is missing)."""
    return _git(repo, args, BUILD_S, None)


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

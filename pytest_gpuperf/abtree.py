"""The base worktree and the processes of `gpuperf ab`: the worktree of the base commit in a
temporary directory (removed however the run ends; one left by a run killed with SIGKILL is
removed by the next), each pytest round in a process group of its own, and the signals
(SIGINT, SIGTERM, SIGHUP) that stop a run, raised where they arrive so that every cleanup
runs. The rounds and their verdicts are ab.py's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .baseline.paired import ABError

PREFIX = "gpuperf-ab-"  # of the temporary directory that holds the base worktree
OWNER = "owner"  # in it: "<pid> <host>" of the run that made it
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


class Stopped(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped the run; raised where it arrived, so that
    every `finally` runs. A BaseException, like KeyboardInterrupt: no `except Exception`
    swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Stop:
    """The signal that stopped this run, and whether cleaning up defers it."""

    signum: int | None = None
    deferring = False

    @classmethod
    def handler(cls, signum: int, frame: Any) -> None:
        if cls.signum is not None:
            return  # already stopping: the cleanup must finish
        cls.signum = signum
        if not cls.deferring:
            raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise Stopped (once; later ones are ignored) while the
    block runs; the previous handlers come back after it."""
    _Stop.signum, _Stop.deferring = None, False
    previous = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        with contextlib.suppress(ValueError):  # not the main thread: signals stay as they are
            if sig is not None:
                previous[sig] = signal.signal(sig, _Stop.handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _Stop.signum = None


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Cleaning up: a signal arriving now is raised as Stopped when the block is done."""
    _Stop.deferring = True
    try:
        yield
    finally:
        _Stop.deferring = False
    if _Stop.signum is not None:
        raise Stopped(_Stop.signum)


def run_group(cmd: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run in a process group of its own (a pytest round, the --setup command
    and whatever they start): stopped, the whole group goes, SIGTERM then SIGKILL."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **kwargs,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate()
        except BaseException:
            with signals_deferred():
                _kill_group(proc)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=False, timeout=120
    )


def resolve_base(cwd: Path, ref: str) -> tuple[Path, str, str]:
    """(repository root, base commit, what the head side is), or ABError."""
    top = git(cwd, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise ABError(f"{cwd} is not in a git repository: A/B needs the base commit's code")
    root = Path(top.stdout.strip())
    sha = git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if sha.returncode != 0 or not sha.stdout.strip():
        raise ABError(f"base ref {ref!r} does not exist in {root}")
    dirty = git(root, "status", "--porcelain", "--untracked-files=no").stdout.splitlines()
    head = git(root, "rev-parse", "--short", "HEAD").stdout.strip() or "no commit"
    what = (
        f"the working tree (HEAD {head} plus uncommitted changes to {len(dirty)} file(s))"
        if dirty
        else f"HEAD {head}"
    )
    return root, sha.stdout.strip(), what


def remove_worktree(root: Path, tree: Path) -> None:
    """The base worktree, its registration and its temporary directory, whatever state a
    stopped `git worktree add` left them in."""
    git(root, "worktree", "remove", "--force", "--force", str(tree))  # twice: also locked
    shutil.rmtree(tree.parent, ignore_errors=True)
    git(root, "worktree", "unlock", str(tree))  # an add stopped midway leaves it locked
    git(root, "worktree", "prune")


def _owner_alive(work: Path) -> bool:
    """Whether the run that made `work` may still be running: its process exists on this
    host (a process of another host, or one not ours to signal, counts as alive)."""
    try:
        pid_text, host = (work / OWNER).read_text(encoding="utf-8").split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return False  # no owner: made by a version that wrote none, long gone
    if host != socket.gethostname():
        return True  # cannot tell from here: left alone
    if pid == os.getpid():
        return False  # an earlier process that had this one's id
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def prune_stale(root: Path) -> list[str]:
    """Remove what an earlier run that could not clean up (SIGKILL, a reboot) left: git's
    records of worktrees whose directory is gone (`git worktree prune`), and base worktrees
    in this tool's temporary directories whose run is gone. Returns lines to show."""
    lines = []
    listing = git(root, "worktree", "list", "--porcelain").stdout
    tmp = os.path.realpath(tempfile.gettempdir())
    for block in listing.split("\n\n"):
        fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        path = fields.get("worktree")
        if not path:
            continue
        tree = Path(path)
        work = tree.parent
        ours = tree.name == "base" and work.name.startswith(PREFIX)
        if not ours or os.path.realpath(work.parent) != tmp:
            continue
        if not tree.exists():  # only git's record is left; a locked one is not pruned
            git(root, "worktree", "unlock", str(tree))
            continue
        if _owner_alive(work):
            continue
        remove_worktree(root, tree)
        lines.append(
            f"gpuperf ab: removed the base worktree {tree} of an earlier run that was stopped"
        )
    git(root, "worktree", "prune")
    return lines

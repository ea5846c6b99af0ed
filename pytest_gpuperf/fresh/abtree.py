"""The base worktree and the processes of `gpuperf ab`: the worktree of the base commit in a
temporary directory (removed however the run ends; one left by a run killed with SIGKILL is
removed by the next), each pytest round in a process group of its own, and the signals
(SIGINT, SIGTERM, SIGHUP) that stop a run, raised where they arrive so that every cleanup
runs. The rounds and their verdicts are ab.py's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.gitcmd import call as git
from ..judging.abjudge import ABError

PREFIX = "gpuperf-ab-"  # of the temporary directory that holds the base worktree
OWNER = "owner"  # in it: "<pid> <host>" of the run that made it
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
PROBE = "gpuperf_ab_probe"  # the rounds' plugin (abprobe) that lists the files they imported


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


def run_group(cmd: Any, timeout: float | None = None,
              **kwargs: Any) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """subprocess.run in a process group of its own (a pytest round, the --setup command
    and whatever they start): stopped, or past `timeout` seconds (TimeoutExpired), the
    whole group goes, SIGTERM then SIGKILL."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **kwargs,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
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


@dataclass(frozen=True)
class Checkout:
    """The repository of the run, the base commit, and what the head side is: HEAD, the
    count of tracked files changed since, and the untracked files (relative to root)."""

    root: Path
    sha: str
    head: str
    dirty: int
    untracked: frozenset[str]

    def head_what(self, ran: Iterable[Path] = ()) -> str:
        """What the head side measured: HEAD, with the tracked files changed and the
        untracked files among `ran` (the files its rounds imported)."""
        root = self.root.resolve()
        names = sorted(
            rel for rel in (_inside(Path(p), root) for p in ran) if rel in self.untracked
        )
        parts = [f"uncommitted changes to {self.dirty} file(s)"] if self.dirty else []
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"untracked file(s) {shown}")
        if not parts:
            return f"HEAD {self.head}"
        return f"the working tree (HEAD {self.head} plus {' and '.join(parts)})"


def resolve_base(cwd: Path, ref: str) -> Checkout:
    """The repository, the base commit and the head side's state, or ABError."""
    top = git(cwd, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise ABError(f"{cwd} is not in a git repository: A/B needs the base commit's code")
    root = Path(top.stdout.strip())
    # the ref first, then its commit: "REF^{commit}" would be part of a ":/message" search
    named = git(root, "rev-parse", "--verify", "--quiet", ref) if ref[:1] != "-" else None
    if named is None or named.returncode != 0 or not named.stdout.strip():
        raise ABError(f"base ref {ref!r} does not exist in {root}")
    sha = git(root, "rev-parse", "--verify", "--quiet", named.stdout.strip() + "^{commit}")
    if sha.returncode != 0 or not sha.stdout.strip():
        raise ABError(f"base ref {ref!r} names no commit in {root}")
    dirty = git(root, "status", "--porcelain", "--untracked-files=no").stdout.splitlines()
    others = git(root, "ls-files", "-z", "--others", "--exclude-standard").stdout.split("\0")
    head = git(root, "rev-parse", "--short", "HEAD").stdout.strip() or "no commit"
    return Checkout(root, sha.stdout.strip(), head, len(dirty), frozenset(o for o in others if o))


@contextlib.contextmanager
def base_worktree(root: Path, sha: str) -> Iterator[tuple[Path, Path]]:
    """A detached worktree of `sha` in a temporary directory of its own: (that directory,
    the worktree). Who made it is written first, before git registers anything in it, so a
    later run removes the worktree of a run that is gone (killed with SIGKILL, a machine
    that rebooted); it is removed with its directory however the block ends, with the stop
    signals held while it goes. ABError when git cannot add it."""
    work = Path(tempfile.mkdtemp(prefix=PREFIX))
    tree = work / "base"
    try:
        (work / OWNER).write_text(f"{os.getpid()} {socket.gethostname()}\n", encoding="utf-8")
        added = git(root, "worktree", "add", "--detach", str(tree), sha)
        if added.returncode != 0:
            raise ABError(f"git worktree add failed: {added.stderr.strip()}")
        yield work, tree
    finally:
        with signals_deferred():
            remove_worktree(root, tree)


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


# ------------------------------------------------------- where each side's code comes from


def _inside(path: Path, root: Path) -> str | None:
    """`path` relative to `root` (both resolved, "/"-separated; "." for root itself), or
    None when it lies outside."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def _editable_dirs() -> list[str]:
    """The parent directories of the packages that an editable install's import finder on
    sys.meta_path maps (setuptools' `__editable___*_finder` MAPPING)."""
    out: list[str] = []
    for finder in sys.meta_path:
        module = sys.modules.get(getattr(finder, "__module__", "") or "")
        mapping = getattr(module, "MAPPING", None)
        if isinstance(mapping, dict):
            out.extend(str(Path(p).parent) for p in mapping.values() if isinstance(p, str))
    return out


def base_path(root: Path, tree: Path, pythonpath: str | None) -> str:
    """PYTHONPATH of the base's rounds: the worktree, then the base's copy of each directory
    of the checkout that this interpreter imports from (a src layout's <repo>/src that
    `pip install -e .` put on sys.path, an absolute PYTHONPATH entry, the package
    directories of an editable install's finder), in sys.path order, where the base has
    it; then PYTHONPATH as given. Ahead of the head's directories, they make the base
    import its own code."""
    out = [str(tree)]
    for entry in [*sys.path, *_editable_dirs()]:
        rel = _inside(Path(entry or "."), root)
        mine = tree / rel if rel is not None else None
        if mine is not None and mine.is_dir() and str(mine) not in out:
            out.append(str(mine))
    return os.pathsep.join([*out, *([pythonpath] if pythonpath else [])])


def install_probe(work: Path) -> Path:
    """The directory holding the rounds' `-p gpuperf_ab_probe` plugin (abprobe's copy)."""
    from . import abprobe

    folder = work / "probe"
    folder.mkdir()
    shutil.copyfile(abprobe.__file__, folder / f"{PROBE}.py")
    return folder


def imported_files(folder: Path) -> list[Path] | None:
    """The module files one round's processes imported from the watched directories
    (abprobe's lists, merged), or None when no process wrote one."""
    lists = sorted(folder.glob("*.json"))
    if not lists:
        return None
    files: set[Path] = set()
    for path in lists:
        try:
            names = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        files.update(Path(n) for n in names if isinstance(n, str))
    return sorted(files)


def imported_own(folder: Path) -> list[tuple[str, str | None]]:
    """Each of the base worktree's own modules a round's processes imported, with the file
    it came from (abprobe's .own lists, merged: a pytest-xdist worker's too), sorted."""
    out: set[tuple[str, str | None]] = set()
    for path in sorted(folder.glob("*.own")):
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(found, dict):
            out |= {(str(n), f if isinstance(f, str) else None) for n, f in found.items()}
    return sorted(out, key=lambda p: (p[0], p[1] or ""))


def _interpreter_dirs() -> list[Path]:
    """Where this interpreter's own modules live (a virtualenv inside the checkout)."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = [paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    with contextlib.suppress(AttributeError):  # site of a virtualenv of old may lack these
        dirs += [*site.getsitepackages(), site.getusersitepackages()]
    return [Path(d).resolve() for d in dirs if d]


def foreign_import(side: str, files: list[Path], root: Path, tree: Path) -> Path | None:
    """The first file a round of `side` imported from the other side's code: for the base,
    from the checkout (outside the run's temporary directory, which holds its worktree);
    for the head, from the base worktree. Files of the interpreter (a virtualenv inside
    the checkout) are nobody's side."""
    own = _interpreter_dirs()
    for path in files:
        if any(_inside(path, d) is not None for d in own):
            continue
        if side == "head":
            if _inside(path, tree) is not None:
                return path
        elif _inside(path, tree.parent) is None and _inside(path, root) is not None:
            return path
    return None


def run_setup(command: str, tree: Path, named: str, timeout: float | None = None) -> None:
    """Run the setup `command` (a shell line) in the base worktree `tree` before its rounds:
    gpuperf ab's --setup, the paired stage's --gpuperf-paired-setup (`named`, within the
    stage's budget: `timeout` seconds). ABError in one line when it fails or outlasts its
    time: the command, its exit status and its last line of stderr."""
    try:
        done = run_group(command, timeout=timeout, shell=True, cwd=tree)
    except subprocess.TimeoutExpired:
        raise ABError(f"{named} {command!r} did not end within {timeout:g} s in the base "
                      "worktree (stopped)") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or
                ["(no output)"])[-1]  # fmt: skip
        raise ABError(f"{named} {command!r} failed in the base worktree (exit "
                      f"{done.returncode}): {last[:300]}")  # fmt: skip


def missing_submodules(tree: Path) -> list[str]:
    """The submodules of the base worktree that are not checked out (git worktree add
    leaves them empty)."""
    fields = [line.split() for line in git(tree, "submodule", "status").stdout.splitlines()]
    return [f[1] for f in fields if len(f) > 1 and f[0].startswith("-")]

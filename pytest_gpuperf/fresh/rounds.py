"""Rounds in long-lived processes of two builds: the paired stage's measurement (run/paired.py
decides what to re-measure and judges it, judging/stage2.py).

The base is a detached worktree of the baseline's commit (abtree, as `gpuperf ab` makes
it); the head is the code this run measured. For each of `pairs` process pairs, one fresh
pytest process per side is started as the run was started (confirm.command: the run's
arguments, settings and ini file; for the base, every path of the checkout mapped to the
worktree), collects only the tests to re-measure, and runs the roundworker plugin: the
coordinator asks each process in turn to measure one round (base then head, then head then
base, so a drifting card favours neither side) and reads the round's results from a file.
A process builds its models once for all its rounds; two pairs of processes let the judge
tell noise that is per process from noise per round. Only two processes live at a time (one
per side), so the GPU holds two copies of a model, not four.

Each process lists the files it imported (abprobe): a base process that imported the
checkout's code, or a head process the worktree's, measured the wrong build, and the stage
stops saying so. Nothing is written to baselines or to the run's outputs."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import roundworker
from .abprobe import OUT as PROBE_OUT
from .abprobe import WATCH
from .abtree import PROBE, foreign_import, imported_files, install_probe

SIDES = ("base", "head")


class RoundsError(Exception):
    """The rounds could not be measured: the message says why (one line)."""


@dataclass(frozen=True)
class Build:
    """Where one side's processes run and the sys.path they start with."""

    side: str
    cwd: Path
    sys_path: tuple[str, ...]
    args: tuple[str, ...]  # pytest's arguments (the run's, mapped for the base)


@dataclass
class Measured:
    """Each side's rounds (round i: the results dicts its process wrote), the process pair
    of each round, the tests that did not pass in a round, and the time it took."""

    rounds: dict[str, list[list[dict[str, Any]]]] = field(
        default_factory=lambda: {s: [] for s in SIDES}
    )
    pair: list[int] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0


def install_worker(work: Path) -> Path:
    """The probe directory (abprobe's copy, `-p gpuperf_ab_probe`) with the round worker
    beside it (`-p gpuperf_rounds_worker`)."""
    folder = install_probe(work)
    shutil.copyfile(roundworker.__file__, folder / f"{roundworker.NAME}.py")
    return folder


def mapped(value: str, root: Path, tree: Path) -> str:
    """`value` with a path inside the checkout (alone, or after `--opt=`) pointing into the
    base worktree instead."""
    r = str(root.resolve())
    head, sep, tail = value.partition("=") if value.startswith("-") else ("", "", value)
    if value.startswith("-") and not sep:
        return value  # a flag, or an option whose value is the next word
    real = os.path.realpath(tail) if os.path.isabs(tail) else None
    if real is not None and (real == r or real.startswith(r + os.sep)):
        tail = str(tree) + real[len(r) :]
    return f"{head}{sep}{tail}"


def base_build(head: Build, root: Path, tree: Path, extra_path: list[str]) -> Build:
    """The base's build: the head's, every checkout path mapped into the worktree; the
    sys.path entries of the checkout the base lacks are dropped, and the worktree's copies of
    the directories an editable install maps (`extra_path`) go first."""
    path = [*extra_path]
    for entry in head.sys_path:
        m = mapped(entry, root, tree) if os.path.isabs(entry or ".") else entry
        if m != entry and not Path(m).is_dir():
            continue
        if m not in path:
            path.append(m)
    return Build(
        "base",
        Path(mapped(str(head.cwd), root, tree)),
        tuple(path),
        tuple(mapped(a, root, tree) for a in head.args),
    )


@dataclass
class _Proc:
    side: str
    popen: subprocess.Popen[bytes]
    to_child: IO[str]
    from_child: IO[str]
    out: Path
    log: Path
    imports: Path


def _start(build: Build, work: Path, name: str, env: dict[str, str], probe: Path) -> _Proc:
    out = work / name
    imports = work / "imports" / name
    out.mkdir(parents=True)
    imports.mkdir(parents=True)
    c_r, p_w = os.pipe()
    p_r, c_w = os.pipe()
    boot = (
        f"import sys; sys.path[:] = {[*build.sys_path, str(probe)]!r}; import pytest; "
        "raise SystemExit(pytest.console_main())"
    )
    cmd = [sys.executable, "-c", boot, "-p", PROBE, "-p", roundworker.NAME, *build.args,
           f"--gpuperf-json={out / 'results.json'}", f"--basetemp={out / 'basetemp'}"]  # fmt: skip
    full = dict(env)
    full.update({
        roundworker.FDS: f"{c_r},{c_w}", roundworker.OUT: str(out),
        PROBE_OUT: str(imports),
    })  # fmt: skip
    log = work / f"{name}.log"
    with open(log, "wb") as fh:
        popen = subprocess.Popen(
            cmd, cwd=build.cwd, env=full, stdin=subprocess.DEVNULL, stdout=fh,
            stderr=subprocess.STDOUT, pass_fds=(c_r, c_w), start_new_session=True,
        )  # fmt: skip
    os.close(c_r)
    os.close(c_w)
    to_child = os.fdopen(p_w, "w", encoding="utf-8")
    from_child = os.fdopen(p_r, "r", encoding="utf-8")
    return _Proc(build.side, popen, to_child, from_child, out, log, imports)


def _tail(proc: _Proc) -> str:
    try:
        lines = proc.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " / ".join(lines[-4:])


def _answer(proc: _Proc, deadline: float) -> list[str]:
    """The process's next line, split; RoundsError when it exits or the deadline passes."""
    left = deadline - time.monotonic()
    ready, _, _ = select.select([proc.from_child], [], [], max(0.0, left))
    line = proc.from_child.readline().split() if ready else None
    if line is None:
        raise RoundsError(f"the {proc.side} process did not answer in time (budget spent)")
    if not line:
        code = proc.popen.wait()
        raise RoundsError(f"the {proc.side} process exited ({code}): {_tail(proc)}")
    if line[0] == "error":
        raise RoundsError(f"the {proc.side} process: {' '.join(line[1:])}: {_tail(proc)}")
    return line


def _stop(proc: _Proc) -> None:
    import contextlib
    import signal

    with contextlib.suppress(OSError, ValueError):
        proc.to_child.write("stop\n")
        proc.to_child.flush()
    try:
        proc.popen.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.popen.pid, signal.SIGKILL)
        proc.popen.wait()
    for fh in (proc.to_child, proc.from_child):
        with contextlib.suppress(OSError):
            fh.close()


def _one_round(proc: _Proc, i: int, last: bool, deadline: float) -> dict[str, Any]:
    proc.to_child.write(f"go {i} {'last' if last else 'more'}\n")
    proc.to_child.flush()
    line = _answer(proc, deadline)
    if line[:2] != ["done", str(i)]:
        raise RoundsError(f"the {proc.side} process answered {' '.join(line)!r} to round {i}")
    data: dict[str, Any] = json.loads((proc.out / f"round-{i}.json").read_text("utf-8"))
    return data


def _check_imports(proc: _Proc, root: Path, tree: Path) -> None:
    files = imported_files(proc.imports)
    if files is None:
        raise RoundsError(f"the {proc.side} process did not list the files it imported")
    foreign = foreign_import(proc.side, files, root, tree)
    if foreign is not None:
        other = "the checkout under test" if proc.side == "base" else "the base worktree"
        raise RoundsError(f"the {proc.side} process imported {foreign} from {other}: it "
                          "measured the other build's code")  # fmt: skip


def measure_rounds(
    builds: dict[str, Build], env: dict[str, str], work: Path, root: Path, tree: Path,
    *, rounds: int, pairs: int, budget_s: float,
) -> Measured:  # fmt: skip
    """`rounds` paired rounds in `pairs` process pairs (rounds split between them in order),
    within `budget_s` seconds; RoundsError when they cannot all be measured."""
    probe = work / "probe"
    if not probe.is_dir():
        install_worker(work)
    env = {**env, WATCH: os.pathsep.join(str(p.resolve()) for p in (root, tree))}
    t0 = time.monotonic()
    deadline = t0 + budget_s
    got = Measured()
    per = [rounds // pairs + (1 if p < rounds % pairs else 0) for p in range(pairs)]
    i = 0
    for p, count in enumerate(per):
        procs = {s: _start(builds[s], work, f"{s}-{p}", env, probe) for s in SIDES}
        try:
            for proc in procs.values():
                _answer(proc, deadline)  # "ready n"
            for j in range(count):
                order = SIDES if i % 2 == 0 else SIDES[::-1]
                for s in order:
                    data = _one_round(procs[s], i, j == count - 1, deadline)
                    got.rounds[s].append(list(data.get("results") or []))
                    for nodeid, why in (data.get("outcomes") or {}).items():
                        got.outcomes.setdefault(f"{nodeid} ({s})", why)
                got.pair.append(p)
                i += 1
        finally:
            for proc in procs.values():
                _stop(proc)
        for proc in procs.values():
            _check_imports(proc, root, tree)
    got.wall_s = time.monotonic() - t0
    return got


ROUND_MAX_TIME = 1.0  # seconds of sampling a round's measurement takes at most


def head_build(config: Any) -> Build:
    """The head's build: the run's own start directory, sys.path (before its conftests)
    and arguments as the confirmation's fresh process gets them (confirm.command), less the
    outputs each round process gets its own of; each round samples for at most
    ROUND_MAX_TIME (or the run's own budget, when smaller): a round needs its median only
    as precise as the rounds' spread, and twelve measurements a figure must fit a night."""
    from .confirm import SYS_PATH_KEY, command, entry, start_dir

    path = config.stash.get(SYS_PATH_KEY, None) or list(sys.path)
    args = command(config, Path("unused") / "results.json")[len(entry(config)) :]
    own = ("--gpuperf-json=", "--basetemp=", "--junitxml=")
    kept = [a for a in args if not a.startswith(own)]
    given = config.getoption("gpuperf_max_time", None)
    try:
        cap = min(float(given), ROUND_MAX_TIME) if given is not None else ROUND_MAX_TIME
    except (TypeError, ValueError):
        cap = ROUND_MAX_TIME
    with contextlib.suppress(TypeError, ValueError):  # never under the run's minimum
        cap = max(cap, float(config.getoption("gpuperf_min_time", None) or 0))
    return Build("head", start_dir(config), tuple(path), (*kept, f"--gpuperf-max-time={cap:g}"))

"""Rounds in long-lived processes of two builds: the paired stage's measurement (stage.py
decides what to re-measure, judge.py judges it).

The base is a detached worktree of the baseline's commit (abtree, as `gpuperf ab` makes
it); the head is the code this run measured. For each of `pairs` process pairs, one fresh
pytest process per side is started as the run was started (confirm.command: the run's
arguments, settings and ini file; for the base, every path of the checkout mapped to the
worktree), collects only the tests to re-measure, and runs the worker plugin (worker.py): the
coordinator asks each process in turn to measure one round (base then head, then head then
base, so a drifting card favours neither side) and reads the round's results from a file.
A process builds its models once for all its rounds; several pairs of processes let the judge
tell noise that is per process from noise per round. Only two processes live at a time (one
per side), so the GPU holds two copies of a model, never more.

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

from ..fresh.abprobe import OUT as PROBE_OUT
from ..fresh.abprobe import WATCH
from ..fresh.abtree import PROBE, foreign_import, imported_files, install_probe
from ..fresh.provenance import write_own, wrong_build
from . import worker
from .plan import MIN_PER_PAIR, STOP_S, round_cap

SIDES = ("base", "head")


class RoundsError(Exception):
    """The rounds could not be measured: the message says why (one line)."""


class OutOfTime(RoundsError):
    """The budget was spent before a process answered."""


class TooDear(RoundsError):
    """The rounds measured show that not even MIN_PER_PAIR a process pair fit the budget
    left (`plan`); `got`: what they measured (looks.py drops the dearest tests)."""

    got: Measured | None = None


@dataclass(frozen=True)
class Build:
    """Where one side's processes run and the sys.path they start with."""

    side: str
    cwd: Path
    sys_path: tuple[str, ...]
    args: tuple[str, ...]  # pytest's arguments (the run's, mapped for the base)
    pythonpath: str = ""  # what a process the test starts imports from (PYTHONPATH)


@dataclass
class Timing:
    """What the rounds have cost so far (seconds): a process pair's start to both "ready"
    (the slowest seen), a pair's first round (its models built), the latest later round."""

    start_s: float = 0.0
    first_s: float = 0.0
    round_s: float | None = None

    @property
    def round_cost(self) -> float:
        """A round of both builds: the latest after a pair's first, else the first."""
        return self.round_s if self.round_s is not None else self.first_s

    @property
    def first_extra(self) -> float:
        """What a pair's first round costs beyond a later one: it builds the models."""
        return max(0.0, self.first_s - self.round_cost)

    def record(self, j: int, took: float) -> None:
        if j == 0:
            self.first_s = max(self.first_s, took)
        else:
            self.round_s = took


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
    asked: int = 0  # the rounds asked for (measured: len(pair))
    cut: str = ""  # why fewer rounds were measured than planned, when the budget ran out
    timing: Timing = field(default_factory=Timing)  # what a pair's start and a round cost
    seconds: dict[str, float] = field(default_factory=dict)  # each test's, all rounds and sides
    warmed: float = 0.0  # seconds the processes loaded the GPU before a call (worker.warm)


def install_worker(work: Path) -> Path:
    """The probe directory (abprobe's copy, `-p gpuperf_ab_probe`) with the round worker
    beside it (`-p gpuperf_rounds_worker`)."""
    folder = install_probe(work)
    shutil.copyfile(worker.__file__, folder / f"{worker.NAME}.py")
    return folder


def mapped(value: str, root: Path, tree: Path) -> str:
    """`value` with a path inside the checkout (alone, or after `--opt=`) pointing into the
    base worktree instead."""
    r = str(root.resolve())
    head, sep, tail = value.partition("=") if value.startswith("-") else ("", "", value)
    if value.startswith("-") and not sep:
        return value  # a flag, or an option whose value is the next word
    if not sep and "=" in value and not os.path.isabs(value):  # `-o key=/path`'s value
        head, sep, tail = value.partition("=")
    real = os.path.realpath(tail) if os.path.isabs(tail) else None
    if real is not None and (real == r or real.startswith(r + os.sep)):
        tail = str(tree) + real[len(r) :]
    return f"{head}{sep}{tail}"


def _in_venv(entry: Path, root: Path) -> bool:
    """Whether `entry` lies in a virtual environment (a directory with a pyvenv.cfg) inside
    the checkout `root`."""
    top = root.resolve()
    for d in [entry.resolve(), *entry.resolve().parents]:
        if (d / "pyvenv.cfg").is_file():
            return True
        if d == top or top not in d.parents:
            return False
    return False


def base_build(head: Build, root: Path, tree: Path, extra_path: list[str]) -> Build:
    """The base's build: the head's, every checkout path mapped into the worktree; the
    sys.path entries of the checkout the base lacks are dropped, but a virtual environment's
    (a `.venv` inside the checkout: the interpreter's, not the code's) is kept as it is, and
    the worktree's copies of the directories an editable install maps (`extra_path`) go
    first. Whatever the base then imports of the head's own code, the import proof refuses."""
    path = [*extra_path]
    for entry in head.sys_path:
        m = mapped(entry, root, tree) if os.path.isabs(entry or ".") else entry
        if m != entry and not Path(m).is_dir():
            if not _in_venv(Path(entry), root):
                continue
            m = entry
        if m not in path:
            path.append(m)
    given = os.pathsep.join(mapped(p, root, tree) for p in head.pythonpath.split(os.pathsep) if p)
    return Build(
        "base",
        Path(mapped(str(head.cwd), root, tree)),
        tuple(path),
        tuple(mapped(a, root, tree) for a in head.args),
        # a process the base's tests start (a launcher, torchrun) imports the base's code too
        os.pathsep.join([*extra_path, *([given] if given else [])]),
    )


@dataclass
class Proc:
    side: str
    popen: subprocess.Popen[bytes]
    to_child: IO[str]
    from_child: IO[str]
    out: Path
    log: Path
    imports: Path


def start_process(build: Build, work: Path, name: str, env: dict[str, str], probe: Path) -> Proc:
    out = work / name
    imports = work / "imports" / name
    out.mkdir(parents=True)
    imports.mkdir(parents=True)
    c_r, p_w = os.pipe()
    p_r, c_w = os.pipe()
    boot = (
        f"import sys; sys.path[:] = {[*build.sys_path, str(probe)]!r}; import pytest; "
        "raise SystemExit(pytest.main())"
    )
    flags: list[str] = getattr(subprocess, "_args_from_interpreter_flags", list)()
    cmd = [sys.executable, *flags, "-c", boot, "-p", PROBE, "-p", worker.NAME, *build.args,
           f"--gpuperf-json={out / 'results.json'}", f"--basetemp={out / 'basetemp'}"]  # fmt: skip
    full = dict(env)
    full.update({
        worker.FDS: f"{c_r},{c_w}", worker.OUT: str(out),
        PROBE_OUT: str(imports),
    })  # fmt: skip
    if build.pythonpath:
        full["PYTHONPATH"] = build.pythonpath
    else:
        full.pop("PYTHONPATH", None)
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
    return Proc(build.side, popen, to_child, from_child, out, log, imports)


def _tail(proc: Proc) -> str:
    try:
        lines = proc.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " / ".join(lines[-4:])


def answer(proc: Proc, deadline: float) -> list[str]:
    """The process's next line, split; RoundsError when it exits (checked every second: a
    process it started may hold the pipe open) or the deadline passes."""
    line = None
    while line is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise OutOfTime(f"the {proc.side} process did not answer in time: the stage's "
                            "budget was spent (--gpuperf-paired-budget)")
        ready, _, _ = select.select([proc.from_child], [], [], min(1.0, left))
        if ready:
            line = proc.from_child.readline().split()
        elif proc.popen.poll() is not None:
            line = []
    if not line:
        code = proc.popen.wait()
        raise RoundsError(f"the {proc.side} process exited ({code}): {_tail(proc)}")
    if line[0] == "error":
        raise RoundsError(f"the {proc.side} process: {' '.join(line[1:])}: {_tail(proc)}")
    return line


def stop_processes(procs: list[Proc], *, kill: bool) -> None:
    """End the processes: asked to stop (their sessions end as pytest's do), else (an error,
    Ctrl-C) their whole process groups at once, SIGTERM then SIGKILL."""
    import signal

    for proc in procs:
        with contextlib.suppress(OSError, ValueError):
            proc.to_child.write("stop\n")
            proc.to_child.flush()
    for sig, wait in (
        (None, 0.0 if kill else 30.0),
        (signal.SIGTERM, 10.0),
        (signal.SIGKILL, None),
    ):
        alive = [p for p in procs if p.popen.poll() is None]
        if not alive:
            break
        for proc in alive:
            if sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.popen.pid, sig)
        for proc in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=wait)
    for proc in procs:
        for fh in (proc.to_child, proc.from_child):
            with contextlib.suppress(OSError):
                fh.close()


def one_round(proc: Proc, i: int, last: bool, deadline: float) -> dict[str, Any]:
    try:
        proc.to_child.write(f"go {i} {'last' if last else 'more'}\n")
        proc.to_child.flush()
    except (OSError, ValueError):  # it exited since its last round (-x, an abort, OOM)
        code = proc.popen.wait()
        raise RoundsError(f"the {proc.side} process exited ({code}): {_tail(proc)}") from None
    line = answer(proc, deadline)
    if line[:2] != ["done", str(i)]:
        raise RoundsError(f"the {proc.side} process answered {' '.join(line)!r} to round {i}")
    data: dict[str, Any] = json.loads((proc.out / f"round-{i}.json").read_text("utf-8"))
    return data


def check_imports(proc: Proc, root: Path, tree: Path) -> None:
    files = imported_files(proc.imports)
    if files is None:
        raise RoundsError(f"the {proc.side} process did not list the files it imported")
    foreign = foreign_import(proc.side, files, root, tree)
    if foreign is not None:
        other = "the checkout under test" if proc.side == "base" else "the base worktree"
        raise RoundsError(f"the {proc.side} process imported {foreign} from {other}: it "
                          "measured the other build's code")  # fmt: skip


def check_modules(proc: Proc, modules: dict[str, Any], tree: Path) -> None:
    """RoundsError when a process imported one of the worktree's own modules from the
    wrong build (provenance.wrong_build)."""
    why = wrong_build(proc.side, sorted(modules.items()), tree)
    if why is not None:
        raise RoundsError(why)


def plan(per: list[int], p: int, done: int, timing: Timing, left: float,
         asked: list[int] | None = None, least: int | None = None) -> list[int]:  # fmt: skip
    """The rounds each pair measures, re-planned after pair `p`'s `done`-th round with
    `left` seconds of the budget left: every pair from `p` on gets the same count, the most
    that fits (its own `asked` at the most, MIN_PER_PAIR at the least), so a plan cut on
    dearer rounds grows back when they get cheaper; RoundsError when even the least does
    not fit, naming what a round and a pair cost. Before any later round than a pair's first was
    measured, the plan stands: a first round builds the models and warms the GPU
    (docs/evidence/paired-stage-notes.md), so its cost says little of the rounds after it; the
    next round re-plans, unless not even the later pairs' starts and ends fit. A pair whose last
    round was sent as its last (its worker has ended the session's fixtures) measures no
    more. With `least`, the pairs after the first `least` may go: where not even the least
    rounds fit, the last pairs are dropped (never the one measuring) instead of an error."""
    later = len(per) - p - 1
    if (timing.round_s is None and done < max(per[p:])
            and left > 0 and later * (timing.start_s + STOP_S) < left):  # fmt: skip
        return list(per)
    last, extra = timing.round_cost, timing.first_extra

    open_ = done < per[p]  # its last round sent was not its last: it may measure more
    caps = (asked or per)[p:len(per)]  # each pair's asked rounds: r never takes one beyond

    def counts(r: int) -> list[int]:
        return [max(min(r, caps[0]), done) if open_ else done] + [min(r, c) for c in caps[1:]]

    def need(r: int) -> float:
        here, *rest = counts(r)
        return (here - done) * last + sum(timing.start_s + extra + n * last + STOP_S
                                          for n in rest)  # fmt: skip

    floor = min(MIN_PER_PAIR, max(per[p:]))
    r = max(caps)
    while r > floor and need(r) > left:
        r -= 1
    if need(r) > left and least is not None and len(per) > max(least, p + 1):
        return plan(per[:-1], p, done, timing, left, asked, least)  # the last pair goes
    if need(r) > left and not (later == 0 and done >= r):
        raise TooDear(
            f"{r} rounds a process pair do not fit the budget: a round of both builds takes "
            f"{last:.1f} s (the first of a pair {timing.first_s:.1f} s) and a pair "
            f"{timing.start_s:.1f} s to start, about {need(r):.0f} s more with {max(left, 0):.0f} "
            "s left (--gpuperf-paired-budget)"
        )
    return [*per[:p], *counts(r)]


def _round(procs: dict[str, Proc], got: Measured, i: int, last: bool, deadline: float,
           tree: Path) -> None:  # fmt: skip
    """Round i in one process pair, both sides (base first in even rounds, head first in
    odd ones, so a drifting card favours neither); kept only when both sides measured it."""
    data = {}
    for s in SIDES if i % 2 == 0 else SIDES[::-1]:
        data[s] = one_round(procs[s], i, last, deadline)
        check_modules(procs[s], data[s].get("modules") or {}, tree)
    for s in SIDES:
        got.warmed += float(data[s].get("warmed") or 0.0)
        got.rounds[s].append(list(data[s].get("results") or []))
        for nodeid, took in (data[s].get("seconds") or {}).items():
            if isinstance(took, int | float):
                got.seconds[nodeid] = got.seconds.get(nodeid, 0.0) + float(took)
        for nodeid, why in (data[s].get("outcomes") or {}).items():
            got.outcomes.setdefault(f"{nodeid} ({s})", why)


def _pair(procs: dict[str, Proc], got: Measured, per: list[int], p: int, deadline: float,
          tree: Path, pair0: int = 0, asked: list[int] | None = None,
          least: int | None = None) -> list[int]:  # fmt: skip
    """Pair p's rounds, re-planning the rest of the stage (`plan`) after each; the plan.
    Out of time in the last pair, the rounds it measured are kept (at least MIN_PER_PAIR)."""
    t0 = time.monotonic()
    ready = {s: answer(procs[s], deadline) for s in SIDES}  # "ready <tests>"
    if any(r[:2] == ["ready", "0"] for r in ready.values()):
        side = next(s for s in SIDES if ready[s][:2] == ["ready", "0"])
        raise RoundsError(f"the {side} build has none of the tests to re-measure")
    timing = got.timing
    timing.start_s = max(timing.start_s, time.monotonic() - t0)
    j = 0
    while j < per[p]:
        t = time.monotonic()
        try:
            _round(procs, got, len(got.pair), j == per[p] - 1, deadline, tree)
        except OutOfTime:
            if p < len(per) - 1 or j < MIN_PER_PAIR:
                raise
            got.cut = f"out of time after {j} rounds of the last process pair"
            return [*per[:p], j]
        got.pair.append(pair0 + p)
        timing.record(j, time.monotonic() - t)
        j += 1
        try:
            per = plan(per, p, j, timing, deadline - time.monotonic(), asked, least)
        except TooDear as exc:
            exc.got = got
            raise
    return per


def measure_rounds(
    builds: dict[str, Build], env: dict[str, str], work: Path, root: Path, tree: Path,
    *, rounds: int, pairs: int, budget_s: float, pair0: int = 0, least: int | None = None,
) -> Measured:  # fmt: skip
    """Up to `rounds` paired rounds in `pairs` process pairs (split between them in order),
    within `budget_s` seconds: after each round the rest is re-planned from what the rounds
    cost (fewer rounds a pair, the same in each, when the asked ones do not fit); RoundsError
    when not even MIN_PER_PAIR a pair fit. On an error or Ctrl-C the processes' groups are
    ended at once. The pairs are numbered from `pair0` (the paired stage's second look
    starts new pairs after the first look's). With `least`, pairs after the first `least`
    that the budget cannot hold are not started (`plan`)."""
    probe = work / "probe"
    if not probe.is_dir():
        install_worker(work)
    env = {**env, WATCH: os.pathsep.join(str(p.resolve()) for p in (root, tree)),
           worker.OWN: write_own(tree, work / "own.json")}  # fmt: skip
    t0 = time.monotonic()
    deadline = t0 + budget_s
    got = Measured(asked=rounds)
    per = [rounds // pairs + (1 if p < rounds % pairs else 0) for p in range(pairs)]
    asked = list(per)
    p = 0
    while p < len(per):
        procs = {s: start_process(builds[s], work, f"{s}-{pair0 + p}", env, probe) for s in SIDES}
        ok = False
        try:
            per = _pair(procs, got, per, p, deadline, tree, pair0, asked, least)
            ok = True
        finally:
            stop_processes(list(procs.values()), kill=not ok or bool(got.cut))
        for proc in procs.values():
            check_imports(proc, root, tree)
        p += 1
    got.wall_s = time.monotonic() - t0
    return got


def more_need(got: Measured, tests: list[str], pairs: int, rounds: int = MIN_PER_PAIR) -> float:
    """The seconds a second look of `tests` takes, by what the first look's rounds (`got`)
    cost: `pairs` process pairs, each its start, its first round's extra (the first look's,
    a pair's first round less a later one, all of it: what part of it is the process's and
    what the tests' is not known), `rounds` rounds of those tests alone (MIN_PER_PAIR: the
    least it takes) and its end."""
    n = len(got.pair)
    per_round = sum(got.seconds.get(t, 0.0) for t in tests) / n if n else 0.0
    t = got.timing
    return pairs * (t.start_s + t.first_extra + rounds * per_round + STOP_S)


def measure_more(
    builds: dict[str, Build], env: dict[str, str], work: Path, root: Path, tree: Path,
    got: Measured, tests: list[str], *, rounds: int, pairs: int, budget_s: float, pair0: int,
    least: int | None = None,
) -> tuple[Measured | None, str]:  # fmt: skip
    """The paired stage's second look: up to `rounds` more rounds of `tests` alone (the
    first look's undecided) in `pairs` new process pairs numbered from `pair0`, within
    `budget_s`; (None, why) where the budget left cannot hold them (`more_need`), or where
    they fail: the first look's verdicts then stand. Ctrl-C is not caught. `least`: the
    pairs it needs (measure_rounds); the rest the budget may leave."""
    need = more_need(got, tests, least or pairs)
    if budget_s < need:
        left = max(budget_s, 0.0)
        return None, (f"the budget left ({left:.0f} s) held fewer than {MIN_PER_PAIR} "
                      f"rounds a process pair of them (about {need:.0f} s)")  # fmt: skip
    try:
        return measure_rounds(builds, env, work, root, tree, rounds=rounds, pairs=pairs,
                              budget_s=budget_s, pair0=pair0, least=least), ""  # fmt: skip
    except RoundsError as exc:
        return None, str(exc)
    except Exception as exc:  # an OS error or a bug here must not cost the first look
        return None, f"{type(exc).__name__}: {exc}"


def head_build(config: Any) -> Build:
    """The head's build: the run's own start directory, sys.path (before its conftests)
    and arguments as the confirmation's fresh process gets them (confirm.command), less the
    outputs each round process gets its own of; each round samples for at most
    afford.round_cap (0.5 s, the run's own max_time when smaller, at least its own minimum):
    a round needs its median only as precise as the rounds' spread, and twelve measurements
    a figure must fit a night."""
    from ..fresh.confirm import SYS_PATH_KEY, command, entry, start_dir

    path = config.stash.get(SYS_PATH_KEY, None) or list(sys.path)
    args = command(config, Path("unused") / "results.json")[len(entry(config)) :]
    own = ("--gpuperf-json=", "--basetemp=", "--junitxml=")
    kept = [a for a in args if not a.startswith(own)]
    cap = round_cap(config)
    return Build("head", start_dir(config), tuple(path), (*kept, f"--gpuperf-max-time={cap:g}"),
                 os.environ.get("PYTHONPATH", ""))  # fmt: skip

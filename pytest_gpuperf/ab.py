"""`gpuperf ab --base REF -- <pytest args>`: the base commit and the current tree measured
on the same GPU in one job, interleaved, a fresh pytest process per side and round, and
judged with a paired statistic over the rounds (the change's interval from the per-round
differences, so what moves both sides of a round cancels).

Machine-to-machine noise (one card's power state against another's) cancels: both sides
run on this machine within minutes of each other. The base is a detached git worktree of
REF in a temporary directory; its pytest runs there, with the worktree first on
PYTHONPATH, so `import yourpackage` (and this plugin, when it is the code under test)
resolves to the base's code. `--setup CMD` runs once in the worktree before the rounds
(e.g. to build an extension). Nothing is written to baselines (--gpuperf-baseline=off).
Stopped by Ctrl-C, SIGTERM or SIGHUP, it removes the worktree and its temporary directory
(exit 128 + the signal); the next run removes what a run killed with SIGKILL left.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .baseline.history import PER_CLOCK
from .baseline.judge import failing, verdict_dict
from .baseline.store import metrics_of
from .outputs.text import VERDICT_HEADER, json_safe, markdown_table, plain, table, verdict_rows
from .results import Result
from .settings import FALSE_ALARM
from .verdict import INCOMPARABLE, INCONCLUSIVE, NEW, Verdict, paired, per_metric_confidence

SIDES = ("base", "head")
Figure = tuple[float, str, bool]  # a metric's median, unit, and whether higher is better
Round = dict[tuple[str, str], Figure]  # (benchmark key, metric) -> figure, one pytest run


PREFIX = "gpuperf-ab-"  # of the temporary directory that holds the base worktree
OWNER = "owner"  # in it: "<pid> <host>" of the run that made it
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


class ABError(Exception):
    """Bad input or a failed run: exit 2 with this message."""


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
def _signals_deferred() -> Iterator[None]:
    """Cleaning up: a signal arriving now is raised as Stopped when the block is done."""
    _Stop.deferring = True
    try:
        yield
    finally:
        _Stop.deferring = False
    if _Stop.signum is not None:
        raise Stopped(_Stop.signum)


def _run(cmd: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run in a process group of its own (a pytest round, the --setup command
    and whatever they start): stopped, the whole group goes, SIGTERM then SIGKILL."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **kwargs,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate()
        except BaseException:
            with _signals_deferred():
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


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=False, timeout=120
    )


def resolve_base(cwd: Path, ref: str) -> tuple[Path, str, str]:
    """(repository root, base commit, what the head side is), or ABError."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise ABError(f"{cwd} is not in a git repository: A/B needs the base commit's code")
    root = Path(top.stdout.strip())
    sha = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if sha.returncode != 0 or not sha.stdout.strip():
        raise ABError(f"base ref {ref!r} does not exist in {root}")
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no").stdout.splitlines()
    head = _git(root, "rev-parse", "--short", "HEAD").stdout.strip() or "no commit"
    what = (
        f"the working tree (HEAD {head} plus uncommitted changes to {len(dirty)} file(s))"
        if dirty
        else f"HEAD {head}"
    )
    return root, sha.stdout.strip(), what


def _figures(path: Path) -> Round:
    """(key, metric) -> (median, unit, higher is better) from one run's --gpuperf-json;
    ValueError saying what is wrong with a file that is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot be read: {exc}") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise ValueError("holds no 'results' list")
    out = {}
    for d in results:
        r = Result.from_dict(d)
        for name, m in metrics_of(r).items():
            if name != PER_CLOCK:
                out[(r.key, name)] = (m["median"], m["unit"], m["direction"] == "higher")
    return out


def run_ab(
    cwd: Path,
    ref: str,
    pytest_args: Sequence[str],
    *,
    rounds: int,
    tolerance: float,
    false_alarm: float = FALSE_ALARM,
    setup: str | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """Run the rounds and judge them. Returns the report (see main for its use)."""
    if rounds < 2:
        raise ABError(f"--rounds must be at least 2 for a paired statistic, got {rounds}")
    root, sha, head_what = resolve_base(cwd, ref)
    rel = cwd.resolve().relative_to(root.resolve())
    for line in prune_stale(root):
        if log is not None:
            log(line)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=PREFIX))
    tree = work / "base"
    try:
        # who made it, before git registers anything in it: a later run removes the
        # worktree of a run that is gone (killed with SIGKILL, a machine that rebooted)
        (work / OWNER).write_text(f"{os.getpid()} {socket.gethostname()}\n", encoding="utf-8")
        added = _git(root, "worktree", "add", "--detach", str(tree), sha)
        if added.returncode != 0:
            raise ABError(f"git worktree add failed: {added.stderr.strip()}")
        if setup:
            done = _run(setup, shell=True, cwd=tree)
            if done.returncode != 0:
                why = done.stderr[-500:]
                raise ABError(f"--setup {setup!r} failed in the base worktree: {why}")
        figures: dict[str, list[Round]] = {side: [] for side in SIDES}
        last_head: Path | None = None
        for i in range(rounds):
            # alternate the order (A B, B A, ...) so a slow drift of the card (warming up)
            # does not always favour one side
            order = SIDES if i % 2 == 0 else SIDES[::-1]
            for side in order:
                out = work / f"{side}-{i}.json"
                run_cwd = (tree if side == "base" else root) / rel
                env = dict(os.environ, GPUPERF_AB_SIDE=side)
                env.pop("GITHUB_STEP_SUMMARY", None)  # ab's own report goes there, not each round's
                if side == "base":
                    env["PYTHONPATH"] = os.pathsep.join(
                        p for p in (str(tree), env.get("PYTHONPATH", "")) if p
                    )
                cmd = [
                    sys.executable, "-m", "pytest", *pytest_args, "-q", "-p", "no:cacheprovider",
                    "--gpuperf-baseline=off", f"--gpuperf-json={out}",
                ]  # fmt: skip
                t0 = time.monotonic()
                done = _run(cmd, cwd=run_cwd, env=env)
                if log is not None:
                    log(f"round {i + 1}/{rounds} {side}: pytest exit {done.returncode}, "
                        f"{time.monotonic() - t0:.1f} s")  # fmt: skip
                if done.returncode not in (0, 1) or not out.is_file():
                    tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
                    raise ABError(
                        f"{side} round {i + 1}: pytest exited {done.returncode} without "
                        f"results:\n  " + "\n  ".join(tail)
                    )
                try:
                    figures[side].append(_figures(out))
                except ValueError as exc:
                    raise ABError(f"{side} round {i + 1}: results file {out}: {exc}") from None
                if side == "head":
                    last_head = out
        return _judge(figures, last_head, tolerance, false_alarm, {
            "base": f"{ref} ({sha[:12]})",
            "head": head_what,
            "rounds": rounds,
            "pytest_args": list(pytest_args),
            "wall_s": round(time.monotonic() - started, 1),
        })  # fmt: skip
    finally:
        with _signals_deferred():
            _remove_worktree(root, tree)


def _remove_worktree(root: Path, tree: Path) -> None:
    """The base worktree, its registration and its temporary directory, whatever state a
    stopped `git worktree add` left them in."""
    _git(root, "worktree", "remove", "--force", "--force", str(tree))  # twice: also locked
    shutil.rmtree(tree.parent, ignore_errors=True)
    _git(root, "worktree", "unlock", str(tree))  # an add stopped midway leaves it locked
    _git(root, "worktree", "prune")


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
    listing = _git(root, "worktree", "list", "--porcelain").stdout
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
            _git(root, "worktree", "unlock", str(tree))
            continue
        if _owner_alive(work):
            continue
        _remove_worktree(root, tree)
        lines.append(
            f"gpuperf ab: removed the base worktree {tree} of an earlier run that was stopped"
        )
    _git(root, "worktree", "prune")
    return lines


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _float(x: float) -> float:
    try:
        return float(x)
    except OverflowError:  # an integer beyond any float: as good as infinite
        return math.inf if x > 0 else -math.inf


def _checked_rounds(figures: Any) -> dict[str, list[Round]]:
    """The rounds of both sides, or ABError saying what is malformed."""
    if not isinstance(figures, Mapping) or any(side not in figures for side in SIDES):
        raise ABError("the A/B figures must give the rounds of the base and of the head")
    out: dict[str, list[Round]] = {}
    for side in SIDES:
        rounds = figures[side]
        if not isinstance(rounds, Sequence) or isinstance(rounds, str):
            raise ABError(f"the {side}'s rounds must be a list, got {type(rounds).__name__}")
        out[side] = []
        for i, fig in enumerate(rounds, 1):
            if not isinstance(fig, Mapping):
                raise ABError(f"{side} round {i}: figures must be a mapping")
            for k, v in fig.items():
                pair = isinstance(k, tuple) and len(k) == 2
                if not (pair and all(isinstance(x, str) for x in k)):
                    raise ABError(f"{side} round {i}: {k!r} is not a (benchmark, metric) pair")
                if not (isinstance(v, tuple | list) and len(v) == 3 and _number(v[0])
                        and isinstance(v[1], str) and isinstance(v[2], bool)):  # fmt: skip
                    raise ABError(
                        f"{side} round {i}: {k[0]} {k[1]}: {v!r} is not (median, unit, "
                        "higher is better)"
                    )
            out[side].append({k: (_float(v[0]), v[1], v[2]) for k, v in fig.items()})
    if len(out["base"]) != len(out["head"]):
        raise ABError(
            f"paired rounds differ in number: {len(out['base'])} base, {len(out['head'])} head"
        )
    return out


def _what_differs(base: list[Figure], head: list[Figure]) -> str | None:
    """Why base and head figures of one metric cannot be compared, or None: another unit or
    direction (between the sides, or between the rounds of one side). Never converted."""
    for what, i, show in (
        ("unit", 1, repr),
        ("direction", 2, lambda h: "higher is better" if h else "lower is better"),
    ):
        b = sorted({f[i] for f in base})
        h = sorted({f[i] for f in head})
        if len(b) == 1 and len(h) == 1 and b != h:
            return (
                f"{what} differs: base {show(b[0])}, head {show(h[0])}; figures in another "
                f"{what} are never converted"
            )
        for side, seen in (("base", b), ("head", h)):
            if len(seen) > 1:
                return f"{what} differs between the {side}'s rounds: " + ", ".join(
                    show(x) for x in seen
                )
    return None


def judge_rounds(figures: Any, tolerance: Any, false_alarm: Any) -> dict[str, Any]:
    """The verdict of each metric from the base's and the head's rounds: pure, no I/O.

    `figures` is {"base": [round, ...], "head": [round, ...]}, round i of each side a
    mapping (benchmark key, metric) -> (median, unit, higher is better). Returns the
    confidence, the verdict dicts per key and metric, the figures judged and the keys
    measured at the base only. A metric whose unit or direction differs between base and
    head (or between the rounds of one side) is incomparable, never converted; one missing
    from some rounds is inconclusive; a value that is not finite and positive is
    inconclusive (verdict.paired). Malformed input raises ABError, one line."""
    if not (_number(tolerance) and 0 < tolerance < 1):
        raise ABError(f"--tolerance must be between 0 and 1, got {tolerance!r}")
    if not (_number(false_alarm) and 0 < false_alarm < 1):
        raise ABError(f"--false-alarm must be between 0 and 1, got {false_alarm!r}")
    sides = _checked_rounds(figures)
    n = len(sides["base"])
    seen = {side: set().union(*sides[side]) for side in SIDES}
    counts = {side: {k: sum(k in f for f in sides[side]) for k in seen[side]} for side in SIDES}
    verdicts: dict[str, dict[str, Any]] = {}
    judged: dict[tuple[str, str], tuple[list[Figure], list[Figure]]] = {}
    for k in sorted(seen["base"] & seen["head"]):
        nb, nh = counts["base"][k], counts["head"][k]
        base = [f[k] for f in sides["base"] if k in f]
        head = [f[k] for f in sides["head"] if k in f]
        if why := _what_differs(base, head):
            v, advice = Verdict(INCOMPARABLE, None, None, None, tolerance, why), None
        elif nb < n or nh < n:
            why = f"measured in {nb} of {n} base and {nh} of {n} head rounds"
            advice = "see why the benchmark gave no figure in the other rounds"
            v = Verdict(INCONCLUSIVE, None, None, None, tolerance, why)
        else:
            judged[k] = base, head
            continue
        vd = verdict_dict(v, n)
        vd.pop("advice", None)  # a baseline's advice: not this one's
        verdicts.setdefault(k[0], {})[k[1]] = {**vd, **({"advice": advice} if advice else {})}
    confidence = per_metric_confidence(false_alarm, len(judged))
    values: dict[str, dict[str, Any]] = {}
    for (key, metric), (base, head) in judged.items():
        a = [x[0] for x in base]
        b = [x[0] for x in head]
        _, unit, higher = head[-1]
        v = paired(a, b, higher_is_better=higher, tolerance=tolerance, confidence=confidence)
        vd = verdict_dict(v, len(a))
        if v.status == INCONCLUSIVE:
            vd["advice"] = "run more rounds (--rounds) or measure longer"
        verdicts.setdefault(key, {})[metric] = vd
        values.setdefault(key, {})[metric] = {"unit": unit, "base": a, "head": b}
    for key, metric in sorted(seen["head"] - seen["base"]):
        verdicts.setdefault(key, {})[metric] = {
            "status": NEW, "change": None, "tolerance": tolerance,
            "reason": "not measured at the base",
        }  # fmt: skip
    return {
        "confidence": confidence,
        "verdicts": verdicts,
        "values": values,
        "missing": sorted({k for k, _ in seen["base"] - seen["head"]}),
    }


def _judge(
    figures: dict[str, list[Round]],
    last_head: Path | None,
    tolerance: float,
    false_alarm: float,
    meta: dict[str, Any],
) -> dict[str, Any]:
    judged = judge_rounds(figures, tolerance, false_alarm)
    results = []
    if last_head is not None:
        for d in json.loads(last_head.read_text(encoding="utf-8")).get("results", []):
            r = Result.from_dict(d)
            r.verdicts = judged["verdicts"].get(r.key, {})
            results.append(r)
    rows = verdict_rows(results, judged["missing"])
    return {
        "schema": "pytest-gpuperf/ab-1",
        **meta,
        **judged,
        "rows": rows,
        "regressed": any(failing(r) for r in results),
    }


def markdown(report: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"## gpuperf A/B: {plain(report['head'])} against {plain(report['base'])}",
            f"{report['rounds']} interleaved rounds on one machine, {report['wall_s']} s",
            "",
            markdown_table(VERDICT_HEADER, report["rows"]),
        ]
    )


def _outputs(args: Any) -> list[tuple[str, str, str]]:
    """(what, path, mode) of each output asked for: --json, --markdown, the step summary."""
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    out = [("--json", args.json, "w"), ("--markdown", args.markdown, "w")]
    return [(what, p, mode) for what, p, mode in [*out, ("GITHUB_STEP_SUMMARY", step, "a")] if p]


def check_outputs(outputs: list[tuple[str, str, str]]) -> str | None:
    """Why the outputs cannot be written (one on another, on a baseline, or unwritable),
    before anything is measured; None when they can."""
    from .outputs.paths import first_clash, unwritable

    clash = first_clash([(what, p) for what, p, _ in outputs])
    if clash:
        return clash
    for what, p, mode in outputs:  # the runner's step summary: its directory is never made
        why = unwritable(what, p, create_dirs=mode == "w")
        if why:
            return why
    return None


def write_outputs(report: dict[str, Any], outputs: list[tuple[str, str, str]]) -> list[str]:
    """Write the report to each output; returns one line per output that failed."""
    failed = []
    for what, p, mode in outputs:
        if what == "--json":
            text = json.dumps(json_safe(report), indent=2) + "\n"
        else:
            text = markdown(report) + "\n\n"
        try:
            if mode == "w":
                Path(p).parent.mkdir(parents=True, exist_ok=True)
            with open(p, mode, encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            failed.append(f"NOT WRITTEN: {what} {p}: {exc.strerror or exc}")
    return failed


def main(args: Any) -> int:
    """`gpuperf ab`: exit 0, 1 (a regression), 2 (bad input, a failed run, an output that
    cannot be written) or 128 + the signal that stopped it (130 for Ctrl-C)."""
    try:
        with stop_on_signals():
            return _main(args)
    except (Stopped, KeyboardInterrupt) as exc:
        signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
        name = signal.Signals(signum).name
        print(
            f"gpuperf ab: stopped by {name} (exit {128 + signum}); the base worktree and "
            "its temporary directory were removed",
            file=sys.stderr,
            flush=True,
        )
        return 128 + signum


def _main(args: Any) -> int:
    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    outputs = _outputs(args)
    try:
        problem = check_outputs(outputs)
        if problem:
            raise ABError(problem)
        report = run_ab(
            Path.cwd(),
            args.base,
            args.pytest_args,
            rounds=args.rounds,
            tolerance=args.tolerance,
            false_alarm=args.false_alarm,
            setup=args.setup,
            log=log,
        )
    except ABError as exc:
        print(f"gpuperf ab: {plain(exc)}", file=sys.stderr)
        return 2
    print(f"base: {report['base']}; head: {report['head']}")
    print(f"{report['rounds']} rounds, {report['wall_s']} s")
    for line in table(VERDICT_HEADER, report["rows"]):
        print(line)
    for key, metrics in sorted(report["verdicts"].items()):
        for metric, v in sorted(metrics.items()):
            if v.get("status") == INCOMPARABLE:  # the row does not say why
                print(f"incomparable: {plain(key)} {plain(metric)}: {plain(v.get('reason'))}")
    failed = write_outputs(report, outputs)
    for line in failed:
        print(f"gpuperf ab: {plain(line)}", file=sys.stderr)
    if report["regressed"]:
        print("performance regression" + (" (--warn-only: not failing)" if args.warn_only else ""))
    if failed:
        return 2  # an output asked for is missing: not a verdict on the code
    return 1 if report["regressed"] and not args.warn_only else 0

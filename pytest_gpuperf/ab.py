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

import json
import math
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .abtree import (  # ABError, Stopped: also ab's own interface
    OWNER,
    PREFIX,
    ABError,
    Stopped,
    _git,
    _remove_worktree,
    _run,
    _signals_deferred,
    prune_stale,
    resolve_base,
    stop_on_signals,
)
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

"""`gpuperf ab --base REF -- <pytest args>`: the base commit and the current tree measured on
the same GPU in one job, interleaved, a fresh pytest process per side and round, and judged
with a paired statistic over the rounds (the change's interval from the per-round
differences, so what moves both sides of a round cancels).

Machine-to-machine noise (one card's power state against another's) cancels: both sides run
on this machine within minutes of each other. The base is a detached git worktree of REF in
a temporary directory; its pytest runs there, with the worktree first on PYTHONPATH and then
its copy of each directory of the checkout that this interpreter imports from (a src
layout's src/ that `pip install -e .` put on the path), so `import yourpackage` (and this
plugin, when it is the code under test) resolves to the base's code. Each round lists the
files it imported; a base round that imported one from the checkout stops the run (exit 2),
naming the file. `--setup CMD` runs once in the worktree before the rounds (e.g. to build an
extension, or `git submodule update --init`). Nothing is written to baselines
(--gpuperf-baseline=off). Stopped by Ctrl-C, SIGTERM or SIGHUP, it removes the worktree and
its temporary directory (exit 128 + the signal); the next run removes what a run killed with
SIGKILL left.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.figures import PER_CLOCKS, metrics_of
from ..core.results import Result
from ..core.settings import FALSE_ALARM
from ..core.verdict import from_json
from ..fresh.abprobe import OUT, OWN, WATCH
from ..fresh.abtree import (  # Stopped: also ab's own interface
    PROBE,
    Stopped,
    base_path,
    base_worktree,
    foreign_import,
    imported_files,
    imported_own,
    install_probe,
    missing_submodules,
    prune_stale,
    resolve_base,
    run_group,
    run_setup,
    stop_on_signals,
)
from ..fresh.provenance import write_own, wrong_build
from ..judging.abjudge import SIDES, ABError, Round, judge_rounds  # ABError: also ab's interface
from ..judging.judge import failing
from ..judging.verdict import INCOMPARABLE, INCONCLUSIVE
from ..measure.hostload import describe as describe_load
from ..outputs.markdown import COMMENT_LIMIT, fit_markdown
from ..outputs.text import VERDICT_HEADER, json_safe, md_cell, plain, table, verdict_rows


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
    return figures_of(results)


def figures_of(results: list[Any]) -> Round:
    """(key, metric) -> (median, unit, higher is better) of a run's results (dicts, as a
    --gpuperf-json's "results" or a round worker's payload hold them)."""
    out = {}
    for d in results:
        r = Result.from_dict(d)
        for name, m in metrics_of(r).items():
            if name not in PER_CLOCKS:
                out[(r.key, name)] = (m["median"], m["unit"], m["direction"] == "higher")
    return out


MAX_ROUNDS = 100  # 2 sides a round, a fresh pytest each: past this an A/B is a soak test


@dataclass(frozen=True)
class Rounds:
    """What every round of one run shares: where each side runs and the base's PYTHONPATH
    (gpuperf bisect gives each of its worktrees one, every side a base)."""

    root: Path
    tree: Path  # the base worktree, in the run's temporary directory `work`
    rel: Path  # the current directory, relative to the repository root
    work: Path
    pytest_args: tuple[str, ...]
    count: int
    base_pythonpath: str
    own: str  # the file listing the base worktree's own modules (provenance.write_own)

    def env(self, side: str, imports: Path) -> dict[str, str]:
        env = dict(os.environ, GPUPERF_AB_SIDE=side)
        env.pop("GITHUB_STEP_SUMMARY", None)  # ab's own report goes there, not each round's
        path = self.base_pythonpath if side == "base" else env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(self.work / "probe")) if p)
        env[WATCH] = os.pathsep.join(str(p.resolve()) for p in (self.root, self.tree))
        env[OUT] = str(imports)
        env[OWN] = self.own
        return env


def measure_round(r: Rounds, side: str, i: int, log: Any,
                  label: str | None = None) -> tuple[Round, list[Path], Path]:  # fmt: skip
    """One side's pytest of round i: its figures, the files it imported from the checkout
    or the base worktree, and its results file; ABError when it did not run, or ran the
    other side's code. `label` names the round in its lines (gpuperf bisect's commits)."""
    what = label or f"{side} round {i + 1}"
    out = r.work / f"{side}-{i}.json"
    imports = r.work / "imports" / f"{side}-{i}"
    imports.mkdir(parents=True)
    cmd = [
        sys.executable, "-m", "pytest", "-p", PROBE, *r.pytest_args, "-q",
        "-p", "no:cacheprovider", "--gpuperf-baseline=off", f"--gpuperf-json={out}",
    ]  # fmt: skip
    t0 = time.monotonic()
    run_cwd = (r.tree if side == "base" else r.root) / r.rel
    done = run_group(cmd, cwd=run_cwd, env=r.env(side, imports))
    if log is not None:
        log(f"{label or f'round {i + 1}/{r.count} {side}'}: pytest exit {done.returncode}, "
            f"{time.monotonic() - t0:.1f} s")  # fmt: skip
    if done.returncode not in (0, 1) or not out.is_file():
        tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
        gone = missing_submodules(r.tree) if side == "base" else []
        hint = [
            f"the base worktree's submodule(s) {', '.join(gone)} are not checked out (git "
            'worktree add leaves them empty): pass --setup "git submodule update --init"'
        ] if gone else []  # fmt: skip
        raise ABError("\n  ".join([f"{what}: pytest exited {done.returncode} without results:",
                                   *tail, *hint]))  # fmt: skip
    files = imported_files(imports)
    if files is None:
        raise ABError(f"{what}: pytest did not list the files it imported (its -p {PROBE} "
                      "plugin did not run): which commit it measured is unknown")  # fmt: skip
    foreign = foreign_import(side, files, r.root, r.tree)
    if foreign is not None:
        raise ABError(_foreign(what, side, foreign, r.tree))
    wrong = wrong_build(side, imported_own(imports), r.tree)  # an installed copy of the head
    if wrong is not None:
        raise ABError(f"{what}: {wrong}")
    try:
        return _figures(out), files, out
    except ValueError as exc:
        raise ABError(f"{what}: results file {out}: {exc}") from None


def _foreign(what: str, side: str, path: Path, tree: Path) -> str:
    if side == "base":
        return (
            f"{what} imported {path} from the checkout under test, not from the base "
            f"worktree {tree}: it would measure the head's code. Name test paths relative "
            "to the current directory, and put the package's directory on PYTHONPATH "
            "relative to it (e.g. PYTHONPATH=src), so that each side imports its own"
        )
    return (
        f"{what} imported {path} from the base worktree: the head would measure the base's "
        "code (a --setup that installs the base into this environment does that)"
    )


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
    if not 2 <= rounds <= MAX_ROUNDS:
        raise ABError(
            f"--rounds must be at least 2 for a paired statistic and at most {MAX_ROUNDS}, "
            f"got {rounds}"
        )
    checkout = resolve_base(cwd, ref)
    root = checkout.root
    rel = cwd.resolve().relative_to(root.resolve())
    for line in prune_stale(root):
        if log is not None:
            log(line)
    started = time.monotonic()
    with base_worktree(root, checkout.sha) as (work, tree):
        if setup:
            run_setup(setup, tree, "--setup")
        install_probe(work)
        shared = Rounds(root, tree, rel, work, tuple(pytest_args), rounds,
                         base_path(root, tree, os.environ.get("PYTHONPATH")),
                         write_own(tree, work / "own.json"))  # fmt: skip
        figures: dict[str, list[Round]] = {side: [] for side in SIDES}
        head_ran: set[Path] = set()
        last_head: Path | None = None
        busy: dict[str, dict[str, Any]] = {}  # test -> its busiest round's host, where busy
        last: dict[str, Path] = {}  # each side's last results file
        for i in range(rounds):
            # alternate the order (A B, B A, ...) so a slow drift of the card (warming up)
            # does not always favour one side
            for side in SIDES if i % 2 == 0 else SIDES[::-1]:
                measured, files, out = measure_round(shared, side, i, log)
                figures[side].append(measured)
                busy = busy_hosts(out, busy)
                last[side] = out
                if side == "head":
                    last_head = out
                    head_ran.update(files)
        return _judge(figures, last_head, tolerance, false_alarm, {
            "base": f"{ref} ({checkout.sha[:12]})",
            "head": checkout.head_what(head_ran),
            "rounds": rounds,
            "pytest_args": list(pytest_args),
            "wall_s": round(time.monotonic() - started, 1),
            "environment": {side: side_environment(p) for side, p in last.items()},
        }, checkout.sha, busy)  # fmt: skip


def busy_hosts(path: Path, busy: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`busy` with the CPU results of one round's results file that were measured on a
    busy host (hostload.py): test key -> the host of its busiest round so far."""
    out = dict(busy)
    for d in json.loads(path.read_text(encoding="utf-8")).get("results", []):
        host = d.get("host") if isinstance(d, dict) else None
        if d.get("backend") == "cpu" and isinstance(host, dict) and host.get("busy"):
            key = Result.from_dict(d).key
            if float(host.get("load1") or 0) >= float(out.get(key, {}).get("load1") or 0):
                out[key] = host
    return out


def _busy_said(busy: dict[str, dict[str, Any]]) -> str | None:
    """Once per A/B: the tests measured on a busy host in some round (None: none)."""
    if not busy:
        return None
    worst = max(busy.values(), key=lambda h: float(h.get("load1") or 0))
    return (f"gpuperf ab: {len(busy)} CPU benchmark(s) measured on a busy host in at least "
            f"one round ({describe_load(worst)}), flagged busy-host: a pytest run's gate "
            "decides nothing on such a figure; here both builds shared the load round by "
            "round")  # fmt: skip


def side_environment(path: Path) -> dict[str, Any]:
    """What one side's pytest recorded of its environment in its results file: python,
    the driver, CUDA and the packages' versions (hardware/device.py), {} where unreadable.
    Both sides run under this process's environment variables; what they import may still
    differ (a --setup that installs into the base's path, a PYTHONPATH)."""
    try:
        device = json.loads(path.read_text(encoding="utf-8")).get("device") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {"python": device.get("python"), "driver": device.get("driver_version"),
            "cuda": device.get("cuda_driver_version"), **(device.get("packages") or {})}


def environment_line(report: dict[str, Any]) -> str:
    """The sides' environments in one line: what differs (base -> head), or what both ran
    with (python and torch, where recorded). A slowdown from outside the code is the same
    on both sides: gpuperf ab compares code, never the environment."""
    from ..paired.basecheck import differences

    env = report.get("environment") or {}
    base, head = env.get("base") or {}, env.get("head") or {}
    if not base or not head:
        return "environment: not recorded by both sides"
    if differ := differences(base, head):
        return f"environment differs between the sides (base -> head): {differ}"
    same = ", ".join(f"{k} {head[k]}" for k in ("python", "torch") if head.get(k))
    return (f"environment: the same on both sides ({same or 'as recorded'}); a change outside "
            "the code (an environment variable, a dependency) slows both alike, unseen here")


def _judge(
    figures: dict[str, list[Round]],
    last_head: Path | None,
    tolerance: float,
    false_alarm: float,
    meta: dict[str, Any],
    commit: str = "",
    busy: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The rounds judged, as the report; a test measured on a busy host in any round is
    flagged busy-host as the gate flags it (`busy`: busy_hosts'), whichever round's
    figures the table shows."""
    judged = judge_rounds(figures, tolerance, false_alarm)
    results = []
    if last_head is not None:
        for d in json.loads(last_head.read_text(encoding="utf-8")).get("results", []):
            r = Result.from_dict(d)
            r.verdicts = {m: from_json(d) for m, d in judged["verdicts"].get(r.key, {}).items()}
            if r.key in (busy or {}) and not (r.host or {}).get("busy"):
                r.host = (busy or {})[r.key]
            results.append(r)
    rows = verdict_rows(results, judged["missing"])
    return {
        "schema": "pytest-gpuperf/ab-1",
        **meta,
        **judged,
        "rows": rows,
        "busy_line": _busy_said(busy or {}),
        "regressed": any(failing(r) for r in results),
        "reproduce": [
            f"gpuperf ab --base {commit[:12]} --rounds {meta.get('rounds')} -- {shlex.quote(n)}"
            for n in dict.fromkeys(r.nodeid for r in results if failing(r))
        ],
    }


def row_notes(report: dict[str, Any]) -> list[str]:
    """What the verdict rows do not say: why a figure is incomparable, and what would
    settle an inconclusive one."""
    out = []
    for key, metrics in sorted(report["verdicts"].items()):
        for metric, d in sorted(metrics.items()):
            v = from_json(d)
            if v.status == INCOMPARABLE:
                out.append(f"incomparable: {plain(key)} {plain(metric)}: {plain(v.reason)}")
            elif v.status == INCONCLUSIVE and v.advice:
                out.append(f"inconclusive: {plain(key)} {plain(metric)}: to settle: "
                           f"{plain(v.advice)}")  # fmt: skip
    return out


def markdown(report: dict[str, Any], limit: int | None = None) -> str:
    """The report as markdown: a heading, the verdicts worst first, the `gpuperf ab` line
    that re-measures each failing test; with `limit`, fitted to that many characters (a
    pull-request comment's limit for --markdown)."""
    top = [
        f"## gpuperf A/B: {md_cell(report['head'])} against {md_cell(report['base'])}",
        f"{report['rounds']} interleaved rounds on one machine, {report['wall_s']} s",
        "",
    ]
    return fit_markdown(top, VERDICT_HEADER, report["rows"], report.get("reproduce", []), limit)


def _outputs(args: Any) -> list[tuple[str, str, str]]:
    """(what, path, mode) of each output asked for: --json, --markdown, the step summary."""
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    out = [("--json", args.json, "w"), ("--markdown", args.markdown, "w")]
    return [(what, p, mode) for what, p, mode in [*out, ("GITHUB_STEP_SUMMARY", step, "a")] if p]


def check_outputs(outputs: list[tuple[str, str, str]]) -> str | None:
    """Why the outputs cannot be written (one on another, on a baseline, or unwritable),
    before anything is measured; None when they can."""
    from ..outputs.paths import first_clash, unwritable

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
        else:  # --markdown is a pull-request comment's body; the step summary takes more
            text = markdown(report, COMMENT_LIMIT if what == "--markdown" else None) + "\n\n"
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
    except ABError as exc:  # a round's output: one line each, none acted on by the terminal
        print("gpuperf ab: " + "\n".join(map(plain, str(exc).splitlines())), file=sys.stderr)
        return 2
    print(f"base: {report['base']}; head: {report['head']}")
    print(f"{report['rounds']} rounds, {report['wall_s']} s")
    print(plain(environment_line(report)))
    for line in table(VERDICT_HEADER, report["rows"]):
        print(line)
    for line in row_notes(report):
        print(line)
    if report.get("busy_line"):  # once per run, as the gate says it
        print(report["busy_line"])
    failed = write_outputs(report, outputs)
    for line in failed:
        print(f"gpuperf ab: {plain(line)}", file=sys.stderr)
    for line in report["reproduce"]:
        print(f"reproduce: {plain(line)}")
    if report["regressed"]:
        print("performance regression" + (" (--warn-only: not failing)" if args.warn_only else ""))
    if failed:
        return 2  # an output asked for is missing: not a verdict on the code
    return 1 if report["regressed"] and not args.warn_only else 0

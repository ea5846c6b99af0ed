"""`gpuperf ab --base REF -- <pytest args>`: the base commit and the current tree measured
on the same GPU in one job, interleaved, a fresh pytest process per side and round, and
judged with a paired statistic over the rounds (verdict.paired).

Machine-to-machine noise (one card's power state against another's) cancels: both sides
run on this machine within minutes of each other. The base is a detached git worktree of
REF in a temporary directory; its pytest runs there, with the worktree first on
PYTHONPATH, so `import yourpackage` (and this plugin, when it is the code under test)
resolves to the base's code. `--setup CMD` runs once in the worktree before the rounds
(e.g. to build an extension). Nothing is written to baselines (--gpuperf-baseline=off).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .baseline.history import PER_CLOCK
from .baseline.judge import failing, verdict_dict
from .baseline.store import metrics_of
from .outputs.text import VERDICT_HEADER, markdown_table, plain, table, verdict_rows
from .results import Result
from .verdict import paired, per_metric_confidence

SIDES = ("base", "head")


class ABError(Exception):
    """Bad input or a failed run: exit 2 with this message."""


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


def _figures(path: Path) -> dict[tuple[str, str], tuple[float, str, bool]]:
    """(key, metric) -> (median, unit, higher is better) from one run's --gpuperf-json."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for d in data.get("results", []):
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
    false_alarm: float = 0.01,
    setup: str | None = None,
    log: Any = None,
) -> dict[str, Any]:
    """Run the rounds and judge them. Returns the report (see main for its use)."""
    if rounds < 2:
        raise ABError(f"--rounds must be at least 2 for a paired statistic, got {rounds}")
    root, sha, head_what = resolve_base(cwd, ref)
    rel = cwd.resolve().relative_to(root.resolve())
    work = Path(tempfile.mkdtemp(prefix="gpuperf-ab-"))
    tree = work / "base"
    started = time.monotonic()
    added = _git(root, "worktree", "add", "--detach", str(tree), sha)
    if added.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise ABError(f"git worktree add failed: {added.stderr.strip()}")
    try:
        if setup:
            done = subprocess.run(setup, shell=True, cwd=tree, capture_output=True, text=True)
            if done.returncode != 0:
                why = done.stderr[-500:]
                raise ABError(f"--setup {setup!r} failed in the base worktree: {why}")
        figures: dict[str, list[dict[tuple[str, str], tuple[float, str, bool]]]] = {
            side: [] for side in SIDES
        }
        last_head: Path | None = None
        for i in range(rounds):
            # alternate the order (A B, B A, ...) so a slow drift of the card (warming up)
            # does not always favour one side
            order = SIDES if i % 2 == 0 else SIDES[::-1]
            for side in order:
                out = work / f"{side}-{i}.json"
                run_cwd = (tree if side == "base" else root) / rel
                env = dict(os.environ, GPUPERF_AB_SIDE=side)
                if side == "base":
                    env["PYTHONPATH"] = os.pathsep.join(
                        p for p in (str(tree), env.get("PYTHONPATH", "")) if p
                    )
                cmd = [
                    sys.executable, "-m", "pytest", *pytest_args, "-q", "-p", "no:cacheprovider",
                    "--gpuperf-baseline=off", f"--gpuperf-json={out}",
                ]  # fmt: skip
                t0 = time.monotonic()
                done = subprocess.run(cmd, cwd=run_cwd, env=env, capture_output=True, text=True)
                if log is not None:
                    log(f"round {i + 1}/{rounds} {side}: pytest exit {done.returncode}, "
                        f"{time.monotonic() - t0:.1f} s")  # fmt: skip
                if done.returncode not in (0, 1) or not out.is_file():
                    tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
                    raise ABError(
                        f"{side} round {i + 1}: pytest exited {done.returncode} without "
                        f"results:\n  " + "\n  ".join(tail)
                    )
                figures[side].append(_figures(out))
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
        _git(root, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(work, ignore_errors=True)


def _judge(
    figures: dict[str, list[dict[tuple[str, str], tuple[float, str, bool]]]],
    last_head: Path | None,
    tolerance: float,
    false_alarm: float,
    meta: dict[str, Any],
) -> dict[str, Any]:
    base_keys = set().union(*figures["base"])
    head_keys = set().union(*figures["head"])
    both = sorted(
        k
        for k in base_keys & head_keys
        if all(k in f for side in SIDES for f in figures[side])
    )
    confidence = per_metric_confidence(false_alarm, len(both))
    verdicts: dict[str, dict[str, Any]] = {}
    values: dict[str, dict[str, Any]] = {}
    for key, metric in both:
        a = [f[(key, metric)][0] for f in figures["base"]]
        b = [f[(key, metric)][0] for f in figures["head"]]
        _, unit, higher = figures["head"][-1][(key, metric)]
        v = paired(a, b, higher_is_better=higher, tolerance=tolerance, confidence=confidence)
        vd = verdict_dict(v, len(a))
        if v.status == "inconclusive":
            vd["advice"] = "run more rounds (--rounds) or measure longer"
        verdicts.setdefault(key, {})[metric] = vd
        values.setdefault(key, {})[metric] = {"unit": unit, "base": a, "head": b}
    for key, metric in sorted(head_keys - base_keys):
        verdicts.setdefault(key, {})[metric] = {
            "status": "new", "change": None, "tolerance": tolerance,
            "reason": "not measured at the base",
        }  # fmt: skip
    results = []
    if last_head is not None:
        for d in json.loads(last_head.read_text(encoding="utf-8")).get("results", []):
            r = Result.from_dict(d)
            r.verdicts = verdicts.get(r.key, {})
            results.append(r)
    gone = sorted({k for k, _ in base_keys - head_keys})
    rows = verdict_rows(results, gone)
    return {
        "schema": "pytest-gpuperf/ab-1",
        **meta,
        "confidence": confidence,
        "verdicts": verdicts,
        "values": values,
        "missing": gone,
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


def main(args: Any) -> int:
    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
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
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    for target, mode in ((args.markdown, "w"), (step, "a")):
        if target:
            with open(target, mode, encoding="utf-8") as fh:
                fh.write(markdown(report) + "\n\n")
    if report["regressed"]:
        print("performance regression" + (" (--warn-only: not failing)" if args.warn_only else ""))
        return 0 if args.warn_only else 1
    return 0

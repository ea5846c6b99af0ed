"""`gpuperf baseline rolling HISTORY_DIR --profile P [--sessions N] [--dry-run]`: a rolling
baseline for teams that opt in: each figure's last N sessions at one level, after the newest
step the history's detection finds, written as the sessions the gate judges against
(history/rolling.py has the rules; docs/baselines.md the trade-off). Per figure it says
what it took (how many runs, from which run and commit to which) and what it skipped and
why. The file is written as `accept` writes (baseline/store.rewrite: locked, atomic); a
session that would leave the file and that the history does not hold is refused without
--force."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..baseline.history import HISTORY
from ..baseline.store import baseline_path, load, rewrite
from ..core import gitcmd
from ..outputs.text import plain
from .inputs import InputError

REFUSED = 1


def add_parser(cmds: Any, epilog: str) -> None:
    """The `rolling` subcommand of `gpuperf baseline`."""
    r = cmds.add_parser("rolling", help="each figure's last N sessions at one level, from a "
                        "history (opt in)", description=__doc__, epilog=epilog,
                        formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    r.add_argument("history", type=Path, metavar="HISTORY_DIR",
                   help="the history --gpuperf-history records into")
    r.add_argument("--profile", required=True, help="the GPU profile (its baseline file's)")
    r.add_argument("--sessions", type=int, default=5, metavar="N",
                   help=f"sessions a figure, 3 to {HISTORY} (default 5)")
    r.add_argument("--baseline", type=Path, default=None,
                   help="baseline file (default: baselines/<profile>.json)")
    r.add_argument("--card", default=None, metavar="UUID|any",
                   help="take runs of this card only (default: each figure's newest run's); "
                   "any: of every card of the file's GPU (a fleet's, as a save takes them)")
    r.add_argument("--dry-run", action="store_true",
                   help="say what it would take; the baseline file is not written (the "
                   "history's read cache may be, as gpuperf history writes it)")
    r.add_argument("--force", action="store_true",
                   help="write even where sessions the history does not hold leave the file")


def rolling_command(args: argparse.Namespace) -> int:
    """Plan from the history, say it per figure, then write (or not)."""
    from ..history.cache import read_cached
    from ..history.rolling import apply_rolling, plan_rolling
    from ..history.store import HistoryError

    if not 3 <= args.sessions <= HISTORY:
        raise InputError(f"--sessions {args.sessions}: must be 3 to {HISTORY} (the sessions "
                         "a figure is judged against)")  # fmt: skip
    path = Path(args.baseline) if args.baseline else baseline_path(Path("baselines"), args.profile)
    base = load(path)
    if base is None:
        raise InputError(f"no baseline file {path}: a rolling baseline updates the figures a "
                         "saved baseline holds (save one first)")  # fmt: skip
    if base.profile != args.profile:
        raise InputError(f"baseline file {path}: belongs to profile {base.profile!r}, not "
                         f"{args.profile!r}")  # fmt: skip
    try:
        hist = read_cached(args.history)
        if not any(r.profile == args.profile for r in hist.runs):
            raise InputError(f"history {args.history}: holds no run of profile {args.profile!r}")
        plan = plan_rolling(hist, base, args.history, args.sessions, args.card)
    except HistoryError as exc:
        raise InputError(str(exc)) from None
    now = datetime.now(UTC).isoformat(timespec="seconds")
    record = _record(args, hist, plan, now, path)
    _, changed, dropped = apply_rolling(base, plan, hist, record, now)
    for line in plan_lines(plan, hist, set(changed)):
        print(plain(line))
    if dropped and not args.force:
        for line in dropped:
            print(f"gpuperf baseline rolling: refused: {plain(line)} would leave the file and "
                  "the history does not hold it", file=sys.stderr)  # fmt: skip
        print(f"gpuperf baseline rolling: nothing written (gpuperf history import {args.history}"
              f" {path} keeps them in the history; or --force)", file=sys.stderr)  # fmt: skip
        return REFUSED
    if args.dry_run or not changed:
        print(f"gpuperf baseline rolling: {len(changed)} figure(s) would change; "
              f"{'dry run: ' if args.dry_run else ''}nothing written")  # fmt: skip
        return 0
    if dropped:
        record["forced"] = [f"{d} left the file, not in the history" for d in dropped]
    args.target = path

    def change(current: Any) -> Any:
        if current is None or current.to_json() != base.to_json():
            raise InputError(f"baseline file {path}: changed while planning; run again")
        return apply_rolling(current, plan, hist, record, now)[0]

    rewrite(path, change)
    print(f"gpuperf baseline rolling: wrote {path}: {len(changed)} figure(s) judged from "
          f"their last sessions at one level")  # fmt: skip
    return 0


def _record(args: argparse.Namespace, hist: Any, plan: Any, now: str, path: Path) -> dict[str, Any]:
    """The restart record each rolled figure's first session carries."""
    from ..baseline.edit import restart_record

    runs = [hist.runs[fp.taken[-1]] for fp in plan.figures if fp.taken]
    newest = max(runs, key=lambda r: r.date) if runs else None
    who = gitcmd.out(path.parent if path.parent.is_dir() else Path.cwd(), "config",
                     "user.name") or os.environ.get("USER") or None  # fmt: skip
    reason = (f"rolling baseline: the last sessions at one level in the history "
              f"{args.history} (at most {args.sessions})")  # fmt: skip
    commit = newest.commit if newest is not None and not newest.dirty else None
    return restart_record(reason, now, commit, who, [])


def plan_lines(plan: Any, hist: Any, changed: set[str]) -> list[str]:
    """Per figure: what it took, from which run and commit to which, after which change,
    and what it skipped and why; or why it is left as it was."""
    from ..history.rolling import ANY

    out = []
    for fp in plan.figures:
        what = f"{fp.key} {fp.figure}"
        skipped = "; skipped " + ", ".join(_skipped(fp, why, n) for why, n in sorted(
            fp.skipped.items())) if fp.skipped else ""  # fmt: skip
        if fp.left:
            out.append(f"{what}: left as it was: {fp.left}{skipped}")
            continue
        first, last = hist.runs[fp.taken[0]], hist.runs[fp.taken[-1]]
        after = ""
        if fp.after is not None:
            step = hist.runs[fp.after]
            after = f", at or after the change first seen in {step.name} ({_commit(step)})"
        state = "" if what in changed else " (already so)"
        card = "any card" if fp.card == ANY else f"card {fp.card}"
        out.append(f"{what}: took {len(fp.taken)} run(s){state} of {card}, "
                   f"{first.date[:10]} {_commit(first)} ({first.name}) .. {last.date[:10]} "
                   f"{_commit(last)} ({last.name}){after}{skipped}")  # fmt: skip
    if plan.not_in_file or plan.not_in_history:
        out.append(f"not rolled: {plan.not_in_file} series of the history the file holds no "
                   f"metric for (save them first), {plan.not_in_history} metric(s) of the "
                   "file with no series in the history (left as they were)")  # fmt: skip
    return out


def _skipped(fp: Any, why: str, n: int) -> str:
    which = fp.which.get(why)
    return f"{n} {why}" + (f" ({', '.join(which)})" if which else "")


def _commit(run: Any) -> str:
    if not run.commit:
        return "no commit"
    return run.commit[:12] + (" +uncommitted changes" if run.dirty else "")

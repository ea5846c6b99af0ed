"""`gpuperf baseline {accept,show,merge,merge-driver,rolling}`: living with a committed
baseline.

accept   restart named metrics' histories from a run's figures (an intended slowdown or
         speed-up), with a reason recorded in the file and shown in the next verdicts
show     what the gate judges against: sessions per metric, dates, commits, hosts, GPUs,
         restarts, flagged and set-aside sessions
merge    one file holding both files' sessions (two branches' saves)
merge-driver  git's merge driver: `gpuperf baseline merge-driver %O %A %B %P`
rolling  each figure's last N sessions at one level, from the nightly history (opt in;
         cli/rolling.py)

The edits themselves are baseline/edit.py's; files are written by baseline/store.py
(locked, atomic); nothing here drops a saved session unasked.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..baseline.edit import describe, kind_changes, merge_files, restart, restart_record
from ..baseline.schema import BaselineError, BaselineFile
from ..baseline.store import baseline_path, load, rewrite, write_unlocked
from ..core import gitcmd
from ..core.results import Result
from ..outputs.text import plain
from .inputs import InputError as UsageError  # exit 2, naming the bad input
from .inputs import read_results
from .rolling import add_parser as add_rolling_parser
from .rolling import rolling_command

REFUSED = 1  # a figure that must not restart a history (without --force)
BAD_INPUT = 2
NOT_WRITTEN = 3  # the disk refused (read-only, full, no permission, lock timeout)
INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports it

EXIT_CODES = """exit codes:
  0  done
  1  accept: refused (a figure inconclusive, an improvement nothing re-measured, measured on
     a busy host, or not ok; --force overrides); merge-driver: a conflict it cannot
     resolve (git keeps the conflict); rolling: sessions the history does not hold
     would leave the file (--force writes)
  2  bad input: a missing, unreadable or malformed results or baseline file, files of
     different profiles, a test the results do not hold
  3  accept, merge, rolling: the file could not be written (a read-only or full disk, no
     permission, the lock not acquired); it is as it was (the merge driver exits 1: a
     conflict)
  130  interrupted (Ctrl-C): a baseline file is as it was or wholly written, never partial
"""

DRIVER_SETUP = """set up once per clone (.gitattributes is committed):
  .gitattributes:  baselines/*.json merge=gpuperf
  git config merge.gpuperf.driver "gpuperf baseline merge-driver %O %A %B %P"

"""


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gpuperf baseline ...`, wired from cli/main.py's parser."""
    p = sub.add_parser(
        "baseline",
        help="accept an intended change, show or merge baseline files",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmds = p.add_subparsers(dest="baseline_command", required=True)
    a = cmds.add_parser("accept", help="restart metrics' histories from a run's figures",
                        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("tests", nargs="*", help="node ids (or keys) of the tests to accept")
    a.add_argument("--from", dest="source", type=Path, required=True,
                   help="the run's --gpuperf-json results file")
    a.add_argument("--reason", required=True, help="why (recorded, shown in the verdicts)")
    a.add_argument("--baseline", type=Path, default=None,
                   help="baseline file (default: the one the run compared against, else "
                   "baselines/<profile>.json)")
    a.add_argument("--all-regressed", action="store_true", help="every regressed figure")
    a.add_argument("--all-improved", action="store_true", help="every improved figure")
    a.add_argument("--class", dest="noise_class", default=None,
                   help="only figures of this noise class (compute, bandwidth, model, ...)")
    a.add_argument("--force", action="store_true",
                   help="accept figures that are inconclusive or from a busy host")
    a.add_argument("--restart-incomparable", action="store_true",
                   help="restart figures whose unit or direction changed (incomparable): "
                   "their earlier sessions, in the other unit, are dropped from the file")
    s = cmds.add_parser("show", help="what the gate judges against")
    s.add_argument("files", type=Path, nargs="*",
                   help="baseline files (default: every *.json in --baseline-dir)")
    s.add_argument("--baseline-dir", type=Path, default=Path("baselines"))
    m = cmds.add_parser("merge", help="one file holding both files' sessions")
    m.add_argument("ours", type=Path)
    m.add_argument("theirs", type=Path)
    m.add_argument("-o", "--output", type=Path, required=True,
                   help="one of the two inputs, or a new file")
    d = cmds.add_parser("merge-driver", help="git's merge driver: %%O %%A %%B %%P",
                        epilog=DRIVER_SETUP + EXIT_CODES,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, what in (("base", "%%O: the common ancestor (git's temporary file)"),
                       ("ours", "%%A: our side, where the merge is written"),
                       ("theirs", "%%B: their side")):  # fmt: skip
        d.add_argument(name, type=Path, help=what)
    d.add_argument("path", type=Path, nargs="?", default=None,
                   help="%%P: the baseline's path in the repository, named in messages")
    add_rolling_parser(cmds, EXIT_CODES)


def main(args: argparse.Namespace) -> int:
    command = {"accept": accept_command, "show": show_command, "merge": merge_command,
               "merge-driver": merge_driver_command,
               "rolling": rolling_command}[args.baseline_command]  # fmt: skip
    said = f"gpuperf baseline {args.baseline_command}"
    driver = args.baseline_command == "merge-driver"
    try:
        return command(args)
    except (UsageError, BaselineError) as exc:
        print(f"{said}: {plain(exc)}", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:  # written through a temporary file: the old file stays whole
        if args.baseline_command == "show":
            raise  # writes no file
        target = getattr(args, "target", None)
        why = exc.strerror or str(exc)
        if exc.filename and str(exc.filename) != str(target):
            why += f" ({exc.filename})"
        print(f"{said}: {target or 'the baseline'}: not written: {plain(why)}; the file is as "
              f"it was{'; left as a conflict' if driver else ''}", file=sys.stderr)  # fmt: skip
        return REFUSED if driver else NOT_WRITTEN
    except KeyboardInterrupt:
        if args.baseline_command == "show":
            raise
        print(f"{said}: interrupted; {getattr(args, 'target', None) or 'the baseline'} is as "
              "it was or wholly written, never partial", file=sys.stderr)  # fmt: skip
        return INTERRUPTED


# ------------------------------------------------------------------------ accept


def _who(where: Path) -> str | None:
    """Who accepts: git's user.name where the baseline lives, else $USER."""
    return gitcmd.out(where, "config", "user.name") or os.environ.get("USER") or None


def _read(path: Path) -> tuple[dict[str, Any], list[Result]]:
    return read_results(path)


def _profile_of(data: dict[str, Any], results: list[Result], source: Path) -> str:
    if not data.get("profile"):
        raise UsageError(f"results file {source}: the run has no GPU profile")
    emulated = {r.emulated for r in results if r.emulated}
    return f"{data['profile']}@{emulated.pop()}" if len(emulated) == 1 else str(data["profile"])


def _baseline_of(args: argparse.Namespace, data: dict[str, Any], profile: str) -> Path:
    if args.baseline is not None:
        return Path(args.baseline)
    if isinstance(data.get("baseline"), str) and data["baseline"]:
        top = gitcmd.out(Path.cwd(), "rev-parse", "--show-toplevel")
        return in_checkout(Path(data["baseline"]), Path(top) if top else Path.cwd())
    return baseline_path(Path("baselines"), profile)


def in_checkout(recorded: Path, root: Path) -> Path:
    """This checkout's baseline file for the one the run recorded (a hint, never a target:
    the run may have been on another machine): the recorded path where it lies inside
    `root`, else `root` joined with the longest tail of it (file name and at least one
    folder) whose folder exists here (a CI runner's /ci/work/repo/baselines/h100.json is
    baselines/h100.json here). UsageError where none does."""
    whole = recorded if recorded.is_absolute() else Path.cwd() / recorded
    try:
        whole.resolve().relative_to(root.resolve())
        return recorded
    except (ValueError, OSError):
        pass
    parts = whole.parts[1:]
    for i in range(len(parts) - 1):  # the longest tail first
        here = root.joinpath(*parts[i:])
        if here.parent.is_dir():
            return here
    raise UsageError(f"the run's baseline file {recorded} is not in this checkout ({root}) "
                     "and no folder here matches its path: pass --baseline PATH")  # fmt: skip


def measured_at(data: dict[str, Any], now: str) -> tuple[str | None, str, list[str]]:
    """The commit and date of the code the run measured, from its results file, and what
    to say: no commit where its tree was dirty (the code was no commit's) or the file
    predates the field (never the accept's HEAD: the paired stage would build other code);
    the accept's date where the file records none."""
    notes = []
    commit = data.get("commit")
    if "commit" not in data:
        notes.append("the results file records no commit (written before 2026-12-07): the "
                     "accepted sessions record none, and the paired stage leaves them to "
                     "stage 1 (measure again and accept that run to record one)")  # fmt: skip
    elif data.get("dirty") is True:
        commit = None
        notes.append(f"the run measured uncommitted changes on {str(data.get('commit'))[:12]}: "
                     "the accepted sessions record no commit")  # fmt: skip
    date = data.get("date")
    if not date:
        notes.append("the results file records no date: the accepted sessions carry today's")
    return commit, date or now, notes


def select(results: list[Result], args: argparse.Namespace) -> list[tuple[Result, str]]:
    """The figures to accept: of the named tests (every test where none is named), those
    with a chosen verdict (--all-regressed, --all-improved) and of --class. Raises
    UsageError when nothing selects, a named test is not in the run, or nothing matches."""
    from ..core.figures import metrics_of

    statuses = {s for s, on in (("regressed", args.all_regressed),
                                ("improved", args.all_improved)) if on}  # fmt: skip
    if not (args.tests or statuses or args.noise_class):
        raise UsageError("name the tests to accept, or --all-regressed, --all-improved or "
                         "--class CLASS")  # fmt: skip
    known = {r.key for r in results} | {r.nodeid for r in results}
    unknown = [t for t in args.tests if t not in known]
    if unknown:
        raise UsageError(f"not in the results of {args.source}: {', '.join(unknown)}")
    chosen = []
    for r in results:
        if args.tests and r.key not in args.tests and r.nodeid not in args.tests:
            continue
        for name, m in metrics_of(r).items():
            found = r.verdicts.get(name)
            status = found.status if found is not None else None
            if statuses and status not in statuses:
                continue
            if args.noise_class and m.get("noise_class") != args.noise_class:
                continue
            chosen.append((r, name))
    if not chosen:
        raise UsageError(f"no figure of {args.source} matches what was asked")
    return chosen


def refusals(chosen: list[tuple[Result, str]], workers: int = 0) -> list[str]:
    """Why each chosen figure must not restart a history (--force overrides): its
    verdict was inconclusive, an improvement nothing re-measured (one run's luck taken in
    ratchets the baseline's noise), or a save would refuse it: too disturbed to be a
    baseline (a CPU measurement on a busy host, or beside other pytest-xdist workers:
    `workers` of the run), or measured on a GPU another process used (gpu-shared)."""
    from ..judging.explain import seen_twice
    from ..measure.hostload import too_disturbed

    out = []
    for r, name in chosen:
        v = r.verdicts.get(name)
        if v is not None and v.status in ("inconclusive", "power-state"):
            out.append(f"{r.key} {name}: {v.status} in that run ({v.reason})")
        if v is not None and v.status == "improved" and not seen_twice(v):
            out.append(f"{r.key} {name}: improved in that run, but neither a fresh process "
                       "nor the paired stage re-measured it (one run's luck, taken into a "
                       "baseline, would ratchet its noise in)")  # fmt: skip
        if why := too_disturbed(r, workers):
            out.append(f"{r.key} {name}: {why}")
        if r.gpu_shared:  # a save leaves it out without --gpuperf-save-gpu-shared
            out.append(f"{r.key} {name}: measured while another process used the GPU "
                       "(gpu-shared)")  # fmt: skip
    return out


def not_ok(results: list[Result], tests: list[str]) -> list[str]:
    """Named tests whose result is not ok (out of memory, an error): no figure to accept."""
    return [f"{r.key}: not ok ({r.error or r.outcome}): no figure to accept"
            for r in results if (r.key in tests or r.nodeid in tests)
            and (r.outcome != "ok" or r.error)]  # fmt: skip


def accept_command(args: argparse.Namespace) -> int:
    """Restart the chosen figures' histories in the baseline from the run's figures."""
    from ..baseline.history import environment
    from ..baseline.schema import entries_to_save

    data, results = _read(args.source)
    if not args.reason.strip():
        raise UsageError("--reason must say why the change is accepted")
    profile = _profile_of(data, results, args.source)
    path = _baseline_of(args, data, profile)
    broken = not_ok(results, args.tests)
    if broken:
        raise UsageError("; ".join(broken))
    chosen = select(results, args)
    problems = refusals(chosen, data.get("xdist_workers", 0))  # checked by read_run
    if problems and not args.force:
        for line in problems:
            print(f"gpuperf baseline accept: refused: {plain(line)}", file=sys.stderr)
        print("gpuperf baseline accept: nothing accepted (measure again, or --force)",
              file=sys.stderr)  # fmt: skip
        return REFUSED
    now = datetime.now(UTC).isoformat(timespec="seconds")
    emulated = {r.emulated for r in results}
    env = environment(data["device"], emulated.pop() if len(emulated) == 1 else None)
    where = path.parent  # gitcmd asks in its nearest existing folder
    commit, date, notes = measured_at(data, now)  # the run's, not this checkout's HEAD
    names: dict[str, set[str]] = {}
    for r, name in chosen:
        names.setdefault(r.key, set()).add(name)
    updates = entries_to_save([r for r in results if r.key in names], env, date=date,
                              commit=commit, session=data.get("session_id"),
                              host=(data.get("device") or {}).get("hostname"))  # fmt: skip
    for key, entry in updates.items():
        entry["metrics"] = {n: m for n, m in entry["metrics"].items() if n in names[key]}
    changed = kind_changes(load(path), updates)
    if changed and not args.restart_incomparable:
        for line in changed:
            print(f"gpuperf baseline accept: refused: {plain(line)}: another unit or direction "
                  "(incomparable)", file=sys.stderr)  # fmt: skip
        print("gpuperf baseline accept: nothing accepted (--restart-incomparable restarts "
              "them, dropping those sessions)", file=sys.stderr)  # fmt: skip
        return REFUSED
    record = restart_record(args.reason.strip(), now, commit, _who(where), problems)
    args.target = path  # named if the disk refuses the write
    rewrite(path, lambda current: restart(current, path, profile, updates, record, now,
                                          drop_other_kind=args.restart_incomparable))
    for line in notes + [f"dropped {c}" for c in changed]:
        print(f"gpuperf baseline accept: {plain(line)}")
    count = sum(len(e["metrics"]) for e in updates.values())
    print(f"accepted {count} figure(s) of {len(updates)} test(s) into {path}: history "
          f"restarted on {now[:10]}: {plain(args.reason.strip())}")  # fmt: skip
    for key, entry in sorted(updates.items()):
        print(f"  {plain(key)}: {', '.join(sorted(entry['metrics']))}")
    return 0


# ------------------------------------------------------------------------ show


def show_command(args: argparse.Namespace) -> int:
    """Each file's metrics: the sessions judged and kept, when, at which commits, on which
    hosts and GPUs; the restart, flagged sessions and those the noise model sets aside."""
    files = list(args.files) or sorted(Path(args.baseline_dir).glob("*.json"))
    if not files:
        raise UsageError(f"no baseline files in {args.baseline_dir}")
    for i, path in enumerate(files):
        found = load(path)
        if found is None:
            raise UsageError(f"no baseline file {path}")
        if i:
            print()
        for line in show_lines(found):
            print(plain(line))
    return 0


def show_lines(file: BaselineFile) -> list[str]:
    from ..baseline.history import series_of
    from ..judging.noise import NoiseModel

    views = describe(file)
    model = NoiseModel.fit(series_of(file.entries))
    out = [f"baseline {file.path}: profile {file.profile}, updated {file.updated or '?'}, "
           f"{len(file.entries)} test(s), {len(views)} metric(s)"]  # fmt: skip
    for v in views:
        span = f"{str(v.first)[:10]} .. {str(v.last)[:10]}" if v.first else "no dates"
        kept = f" of {v.kept} kept" if v.kept != v.judged else ""
        out.append(
            f"{v.key} {v.metric} ({v.unit}, {v.direction} is better, "
            f"{v.noise_class or 'class unsaved'}{'' if v.gate else ', informational'}): "
            f"{v.judged} session(s) judged{kept}, {span}; commits "
            f"{', '.join(v.commits) or '?'}; hosts {', '.join(v.hosts) or '?'}; GPUs "
            f"{', '.join(v.gpus) or '?'}"
        )
        if v.restart:
            r = v.restart
            out.append(f"  history restarted on {str(r.get('date'))[:10]}: {r.get('reason')} "
                       f"(by {r.get('who') or '?'} at commit {str(r.get('commit') or '?')[:10]}"
                       + (f"; forced past: {'; '.join(r['forced'])}" if r.get("forced") else "")
                       + f"); {v.kept - v.judged} earlier session(s) kept, not judged")  # fmt: skip
        for flag in v.flagged:
            out.append(f"  flagged session {flag}")
        spread = model.spread(f"{v.key}::{v.metric}")
        for why in spread.set_aside if spread is not None else ():
            out.append(f"  {why}")
    return out


# ------------------------------------------------------------------------ merge


def _load_input(
    path: Path, empty_ok: bool = False, side: str | None = None, shown: Path | None = None
) -> BaselineFile | None:
    """The baseline file at `path`; its errors name `side` (ours, theirs, the ancestor) and
    `shown`, the file's real path, where `path` is git's temporary file of a merge."""
    if empty_ok and path.is_file() and path.stat().st_size == 0:
        return None  # git's ancestor of a file both sides added
    try:
        found = load(path)
    except BaselineError as exc:
        if side is None:
            raise
        said, where = str(exc), f"baseline file {path}"
        name = f"baseline file {path} ({side})" if shown is None else (
            f"baseline file {shown} ({side}, git's {path.name})")
        rest = said[len(where):] if said.startswith(where) else f": {said}"
        raise BaselineError(f"{name}{rest}") from None
    if found is None and not empty_ok:
        raise UsageError(f"no baseline file {path}" + (f" ({side})" if side else ""))
    return found


def merge_command(args: argparse.Namespace) -> int:
    """Both files' sessions into -o, which must be one of the two (its sessions are in
    the result) or a new file: an existing other file is never overwritten."""
    ours = _load_input(args.ours, side="ours")
    theirs = _load_input(args.theirs, side="theirs")
    assert ours is not None and theirs is not None
    out = Path(args.output)
    inputs = {os.path.realpath(args.ours): "ours", os.path.realpath(args.theirs): "theirs"}
    side = inputs.get(os.path.realpath(out))
    if side is None and out.exists():
        raise UsageError(f"-o {out} exists and is neither input: not overwriting it (pass "
                         "one of the inputs, or a new path)")  # fmt: skip

    def change(current: BaselineFile | None) -> BaselineFile:
        if side is None and current is not None:
            raise UsageError(f"-o {out} appeared while merging: not overwriting it")
        a = current if side == "ours" and current is not None else ours
        b = current if side == "theirs" and current is not None else theirs
        return merge_files(a, b, out, sides=(f"ours {args.ours}", f"theirs {args.theirs}", ""))

    args.target = out
    merged = rewrite(out, change)
    print(f"merged {args.ours} and {args.theirs} into {out}: {_count(merged)}")
    return 0


def _count(file: BaselineFile) -> str:
    views = describe(file)
    sessions = sum(v.kept for v in views)
    return f"{len(file.entries)} test(s), {len(views)} metric(s), {sessions} session value(s)"


def merge_driver_command(args: argparse.Namespace) -> int:
    """git's merge driver (`merge=gpuperf`): the merge of %A (ours) and %B (theirs) with
    %O (their common ancestor) written into %A; exit 0, or 1 with the file left as git
    gave it where the two cannot be merged without choosing (git then reports a
    conflict). %P, the file's path in the repository, is what messages name (git's
    temporary files mean nothing to the user); each message says which side is bad."""
    shown = args.path
    args.target = shown or args.ours
    try:
        base = _load_input(args.base, empty_ok=True, side="the ancestor", shown=shown)
        ours = _load_input(args.ours, side="ours", shown=shown)
        theirs = _load_input(args.theirs, side="theirs", shown=shown)
        assert ours is not None and theirs is not None
        merged = merge_files(ours, theirs, shown or Path(args.ours), base)
        write_unlocked(Path(args.ours), merged)
    except (UsageError, BaselineError) as exc:
        print(f"gpuperf baseline merge-driver: {plain(exc)}; left as a conflict",
              file=sys.stderr)  # fmt: skip
        return REFUSED
    return 0

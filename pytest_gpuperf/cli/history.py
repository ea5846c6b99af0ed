"""`gpuperf history DIR [--json F]`: the steps and creep in every figure's nightly series,
newest first, each with its commit range and the `gpuperf bisect` command for it.
`gpuperf history import DIR FILES...`: past results files and baseline files' sessions into
the history. `gpuperf history compact DIR --before DATE`: older runs into one file a month.
The history is the directory `pytest --gpuperf-history=DIR` records each run into, one file
per run (docs/history.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..outputs.text import plain

FLAKY_SHOWN = 10  # figures whose verdicts flipped, in the table (all in --json)
EXIT = """exit codes:
  0  read (changes found or not), or imported
  2  bad input: a history file or an imported file that is missing, unreadable or
     malformed (named, with its field), or an output that cannot be written
"""


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gpuperf history ...`, wired from cli/main.py's parser."""
    p = sub.add_parser(
        "history",
        help="steps and creep over the nightly history; import past runs into it",
        description=__doc__,
        usage="gpuperf history DIR [--json F] [-o SITE [--repo-url TEMPLATE]]\n"
        "       gpuperf history import DIR FILES...\n"
        "       gpuperf history compact DIR --before DATE",
        epilog=EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("words", nargs="+", metavar="DIR | import DIR FILES... | compact DIR",
                   help="the history")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, help="also write the changes as JSON here")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="SITE",
                   help="also write the dashboard, a static site, into this directory")
    p.add_argument("--repo-url", default=None, metavar="TEMPLATE",
                   help="link each range in the dashboard, e.g. "
                   "https://github.com/o/r/compare/{last_good}...{first_bad}")  # fmt: skip
    p.add_argument("--before", default=None, metavar="DATE",
                   help="compact: archive the runs before this date, one file a month")  # fmt: skip


def main(args: argparse.Namespace) -> int:
    from ..history.importer import HistoryImportError
    from ..history.site import SiteError
    from ..history.store import HistoryError

    words = list(args.words)
    try:
        if words[0] == "import":
            if len(words) < 3:
                return _usage("gpuperf history import DIR FILES...: name the history and files")
            return _import(Path(words[1]), [Path(w) for w in words[2:]])
        if words[0] == "compact":
            if len(words) != 2 or not args.before:
                return _usage("gpuperf history compact DIR --before DATE: name both")
            return _compact(Path(words[1]), args.before)
        if len(words) != 1:
            return _usage(f"gpuperf history DIR: one directory, got {len(words)} arguments")
        return _show(Path(words[0]), args.json, args.output, args.repo_url)
    except (HistoryError, HistoryImportError, SiteError) as exc:
        print(f"gpuperf history: {plain(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"gpuperf history: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def _usage(line: str) -> int:
    print(line, file=sys.stderr)
    return 2


def _import(directory: Path, files: list[Path]) -> int:
    from ..history.importer import import_files

    written, skipped = import_files(directory, files)
    held = f" ({skipped} already there)" if skipped else ""
    print(f"gpuperf history: imported {len(written)} runs into {directory}{held}")
    return 0


def _compact(directory: Path, before: str) -> int:
    from ..history.compact import compact

    written, removed = compact(directory, before)
    print(f"gpuperf history: {removed} runs before {before} archived into {len(written)} "
          f"files: {', '.join(p.name for p in written) or 'none'}")  # fmt: skip
    return 0


def _show(directory: Path, json_path: Path | None, site: Path | None = None,
          repo_url: str | None = None) -> int:  # fmt: skip
    from ..history.cache import read_cached
    from ..history.detectcache import find_changes_cached
    from ..history.site import check_repo_url, write_site

    if repo_url is not None:
        check_repo_url(repo_url)
        if site is None:
            return _usage("gpuperf history: --repo-url links the dashboard's ranges: give -o SITE")
    if json_path is not None and json_path.resolve().parent == directory.resolve():
        return _usage(f"gpuperf history: --json {json_path}: inside the history {directory}, "
                      "where it would be read as a run; write it elsewhere")  # fmt: skip
    hist = read_cached(directory)  # the runs recorded since the last look, and the cache
    found, _ = find_changes_cached(directory, hist)  # the series tonight's runs changed
    data = changes_json(hist, found)
    for line in table_lines(data, len(hist.runs), len(hist.series)):
        print(line)
    if json_path is not None:
        json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"gpuperf history: wrote {json_path}")
    if site is not None:
        pages = write_site(hist, found, site, directory, repo_url)
        print(f"gpuperf history: wrote the dashboard {site / 'index.html'} ({pages} pages)")
    return 0


def _point(hist: Any, i: int) -> dict[str, Any]:
    run = hist.runs[i]
    return {"commit": run.commit, "date": run.date, "run": run.name, "dirty": run.dirty}


def changes_json(hist: Any, found: Any) -> dict[str, Any]:
    """The issue's form: {"changes": [...], "left_out": [...], "verdicts": [...], "runs": N,
    "series": M}; verdicts: the figures whose verdict flipped between judged runs or
    regressed with no change behind it (false alarms)."""
    from ..history.changes import bisect_command

    changes = []
    for c in found.changes:
        s = hist.series[(c.profile, c.test, c.figure)]
        good, bad = _point(hist, c.last_good), _point(hist, c.first_bad)
        changes.append({
            "test": c.test, "figure": c.figure, "profile": c.profile, "kind": c.kind,
            "direction": c.direction, "change": c.change, "interval": c.interval, "z": c.z,
            "rate": c.rate, "runs": c.runs or None, "environment": c.environment,
            "last_good": good, "first_bad": bad,
            "bisect": bisect_command(good["commit"], bad["commit"], s.nodeid),
        })  # fmt: skip
    left = [{"profile": p, "test": t, "figure": f, "flags": flags}
            for (p, t, f), flags in sorted(found.left_out.items())]  # fmt: skip
    verdicts = [{"profile": p, "test": t, "figure": f, "judged": n, "flips": flips,
                 "false_alarms": false} for (p, t, f), (n, flips, false)
                in sorted(found.verdicts.items())]  # fmt: skip
    return {"changes": changes, "left_out": left, "verdicts": verdicts, "runs": len(hist.runs),
            "series": len(hist.series)}  # fmt: skip


def table_lines(data: dict[str, Any], runs: int, series: int) -> list[str]:
    """The changes for people, newest first: when, what, how much, the range, the command."""
    changes = data["changes"]
    out = [f"gpuperf history: {runs} runs, {series} series, {len(changes)} changes"
           + (" (newest first)" if changes else "")]  # fmt: skip
    for c in changes:
        size = f"{c['change'] * 100:+.2f}% ±{c['interval'] * 100:.2f}% (z {c['z']:.1f})"
        what = f"{c['profile'] or '-'} {c['test']} {c['figure']}"
        out.append(f"{c['first_bad']['date'][:10]}  {c['kind']:<5} {c['direction']:<7} "
                   f"{size}  {what}")  # fmt: skip
        if c["kind"] == "creep":
            out.append(f"    {c['rate'] * 100:+.2f}% a run over {c['runs']} runs")
        good, bad = c["last_good"], c["first_bad"]
        out.append(f"    last good {_run(good)}, first bad {_run(bad)}")
        if c["environment"]:
            out.append(f"    the environment's: {c['environment']}")
        if c["bisect"] and not c["environment"]:
            out.append(f"    {c['bisect']}")
    flaky = sorted(data["verdicts"], key=lambda v: (-v["false_alarms"], -v["flips"]))
    for v in flaky[:FLAKY_SHOWN]:
        out.append(f"verdicts: {v['profile'] or '-'} {v['test']} {v['figure']}: "
                   f"{v['false_alarms']} false alarms (regressed with no change behind), "
                   f"{v['flips']} flips in {v['judged']} judged runs")  # fmt: skip
    if len(flaky) > FLAKY_SHOWN:
        out.append(f"verdicts: {len(flaky) - FLAKY_SHOWN} more figures flipped (--json lists them)")
    if data["left_out"]:
        total: dict[str, int] = {}
        for item in data["left_out"]:
            for flag, n in item["flags"].items():
                total[flag] = total.get(flag, 0) + n
        said = ", ".join(f"{flag} {n}" for flag, n in sorted(total.items()))
        out.append(f"left out: {sum(total.values())} points of {len(data['left_out'])} series "
                   f"({said}): their runs say nothing of the code")  # fmt: skip
    return out


def _run(point: dict[str, Any]) -> str:
    commit = point["commit"][:12] if point["commit"] else "(no commit)"
    dirty = " +uncommitted changes" if point["dirty"] else ""
    return f"{point['date'][:10]} {commit}{dirty} ({point['run']})"

"""`gpuperf compare RESULTS.json` (or `python -m pytest_gpuperf`): compare a saved run with a
baseline outside pytest and set the exit code, for gating in other CI steps.
`gpuperf ab --base REF -- <pytest args>`: the base commit against the current tree on this
GPU, interleaved (`gpuperf ab --help`).
`gpuperf report RESULTS.json... -o report.html`: one HTML report of several runs (GPUs,
emulated caps, dates), with charts.
`gpuperf bisect --good G -- TESTID...`: the commits of good..bad that changed a figure.
`gpuperf baseline {accept,show,merge,merge-driver,rolling}`: accept an intended change, show
what the gate judges against, merge two branches' baselines, take a rolling baseline from
the history (`gpuperf baseline --help`).
`gpuperf history DIR`: steps and creep over the nightly history (`gpuperf history --help`).

RESULTS.json is the file written by `pytest --gpuperf-json=PATH` or the `gpuperf` section
of `pytest --benchmark-json=PATH`. The verdicts come from the same gate that pytest uses,
with each benchmark's own tolerance unless --tolerance is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

from ..baseline.history import environment
from ..baseline.schema import BaselineError
from ..baseline.store import baseline_path, load
from ..core.results import Result
from ..core.settings import FALSE_ALARM
from ..judging.blind import blindness
from ..judging.confirmation import unconfirmed_improvements
from ..judging.explain import Rerun, missing, rerun_commands
from ..judging.judge import judge_run
from ..outputs.terminal import trail_lines, verdict_count_line
from ..outputs.text import VERDICT_HEADER, plain, table, verdict_rows
from ..plugin.options import add_cli_arguments
from .baseline import add_arguments as add_baseline_arguments
from .bisect import add_arguments as add_bisect_arguments
from .history import add_arguments as add_history_arguments
from .inputs import InputError, read_results

EXIT_CODES = """exit codes:
  0  no regression (also with --warn-only when there is one)
  1  a performance regression, or a benchmark that had a baseline and failed
  2  bad input: a results or baseline file that is missing, unreadable or malformed, a
     baseline of another profile than the run's, a run with no results; nothing is judged.
     Also an output that would land on an input, a baseline file or another output, or
     that cannot be written
  130, 143, 129  (ab, bisect) stopped by Ctrl-C, SIGTERM or SIGHUP; worktrees are removed
  141  the output's reader left (`gpuperf baseline show | head`): stopped quietly
"""


def _read_run(path: Path) -> tuple[dict[str, Any], list[Result]]:
    """The results file's JSON object and its results, read and checked by runfile."""
    return read_results(path, " to compare")


def _baseline_for(data: dict[str, Any], results: list[Result], given: Path | None) -> Path:
    """The baseline the run compared against (recorded in the file), else the profile's
    file under ./baselines; --baseline overrides both."""
    if given is not None:
        return given
    recorded = data.get("baseline")
    if isinstance(recorded, str) and recorded:
        return Path(recorded)
    if not data.get("profile"):
        raise InputError("the run has no GPU profile and recorded no baseline: pass --baseline")
    return baseline_path(Path("baselines"), _expected_profile(data, results))


def _expected_profile(data: dict[str, Any], results: list[Result]) -> str:
    emulated = {r.emulated for r in results if r.emulated}
    profile = str(data.get("profile"))
    return f"{profile}@{emulated.pop()}" if len(emulated) == 1 else profile


class Compared(NamedTuple):
    """What `gpuperf compare` found."""

    rows: list[list[str]]  # the verdict table's
    failing: bool  # whether the run fails
    baseline: Path  # the baseline file used
    confidence: float  # each metric was judged at
    shifts: list[str]  # the class-wide shift lines
    rerun: list[str]  # the commands re-running each failing test against that file
    blind: list[str]  # which gated figures it left undecided and why (none: it saw all)
    results: list[Result]  # judged: each carries its verdicts


def compare_files(
    results_path: Path,
    baseline: Path | None,
    tolerance: float | None = None,
    memory_tolerance: float | None = None,
    false_alarm: float | None = None,
) -> Compared:
    """The run in `results_path` judged against `baseline` (default: the one it names)."""
    data, results = _read_run(results_path)
    path = _baseline_for(data, results, baseline)
    try:
        base = load(path)
    except BaselineError as exc:
        raise InputError(str(exc)) from None
    if base is None:
        raise InputError(
            f"no baseline file {path}: save one with pytest --gpuperf-baseline=save "
            "(on the GPU the run used)"
        )
    expected = _expected_profile(data, results)
    if base.profile != expected:
        raise InputError(
            f"baseline file {path} belongs to profile {base.profile!r}, and the run "
            f"{results_path} was measured as profile {expected!r} "
            f"({data.get('describe') or 'unknown device'}): pass the baseline of its profile"
        )
    # a run that saved itself into this file is judged against the history before it
    sid = data.get("session_id") if data.get("saved") is True else None
    if data.get("saved") is True and not isinstance(sid, str):
        raise InputError(
            f"results file {results_path}: the run saved itself into the baseline and did not "
            "record its session id: its history would include the run being judged"
        )
    devices = {r.emulated for r in results}
    judgement = judge_run(
        results,
        base.entries,
        environment(data["device"], devices.pop() if len(devices) == 1 else None),
        false_alarm=false_alarm or FALSE_ALARM,
        tolerance=tolerance,
        memory_tolerance=memory_tolerance,
        exclude_session=sid,
    )
    unconfirmed_improvements(results)  # stage 1 alone re-measures none
    confidence = judgement.confidence
    shift_lines = [sh.line() for sh in judgement.shifts]
    gone = missing(base.entries, (r.key for r in results), data.get("selected"))
    rows = verdict_rows(results, gone)
    rerun = rerun_commands(results, Rerun.of(base.profile, path.parent, None))
    blind = blindness(results, base.entries).line(hint="")  # where the gate could not see
    return Compared(rows, judgement.failing(results), path, confidence, shift_lines, rerun,
                    [blind] if blind else [], results)  # fmt: skip


def ab_doc() -> str:
    from . import ab

    return (ab.__doc__ or "").strip()


PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader left


def main(argv: list[str] | None = None) -> int:
    """The `gpuperf` command: parse the command line, run the subcommand, its exit code.
    Output into a pipe whose reader has gone (`gpuperf baseline show | head`) stops
    quietly, as other command-line tools do, with exit PIPE_CLOSED, not a traceback."""
    try:
        code = _command(argv)
        sys.stdout.flush()  # here, not at exit, where a closed pipe is a message
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # the flush at exit must not fail again
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return PIPE_CLOSED
    return code


def _command(argv: list[str] | None) -> int:
    """The subcommand the command line names, run: its exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "report":
        return report_command(args)
    if args.command == "baseline":
        from .baseline import main as baseline_main

        return baseline_main(args)
    if args.command == "history":
        from .history import main as history_main

        return history_main(args)
    if args.command == "ab":
        from .ab import main as ab_main

        if args.pytest_args[:1] == ["--"]:
            args.pytest_args = args.pytest_args[1:]
        return ab_main(args)
    if args.command == "bisect":
        from .bisect import main as bisect_main

        return bisect_main(args)
    return compare_command(args)


def build_parser() -> argparse.ArgumentParser:
    """The `gpuperf` parser, a subparser per command (in the order `--help` lists them);
    each command's arguments are declared in its own function below."""
    parser = argparse.ArgumentParser(
        prog="gpuperf",
        description=__doc__.split("\n\n")[0],
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _compare_arguments(sub)
    _ab_arguments(sub)
    add_bisect_arguments(sub, EXIT_CODES)
    _report_arguments(sub)
    add_baseline_arguments(sub)
    add_history_arguments(sub)
    return parser


def _compare_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gpuperf compare RESULTS [--baseline] [tolerances] [--false-alarm] [--warn-only]`:
    the tolerance flags are the plugin's own (plugin/options), unset meaning each
    benchmark's own tolerance."""
    c = sub.add_parser(
        "compare",
        help="compare a saved run with a baseline",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("results", type=Path, help="JSON from --gpuperf-json or --benchmark-json")
    c.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="baseline file (default: the one the run compared against, else "
        "baselines/<profile>.json)",
    )
    add_cli_arguments(
        c, ("gpuperf_tolerance", "gpuperf_memory_tolerance"), unset="each benchmark's own"
    )
    add_cli_arguments(c, ("gpuperf_false_alarm", "gpuperf_warn_only"))
    c.add_argument("-v", "--verbose", action="store_true",
                   help="also how each verdict was reached: its rules in order")  # fmt: skip


def _ab_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gpuperf ab --base REF ... -- <pytest args>`: its description is cli/ab.py's
    docstring, so the help and the module say the same."""
    ab = sub.add_parser(
        "ab",
        help="A/B: the base commit and the current tree, interleaved on this GPU",
        description=ab_doc(),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ab.add_argument("--base", required=True, help="git ref of the base (e.g. origin/main)")
    ab.add_argument(
        "--rounds", type=int, default=5, help="interleaved rounds, 2 to 100 (default: %(default)r)"
    )
    add_cli_arguments(ab, ("gpuperf_tolerance", "gpuperf_false_alarm"))
    ab.add_argument("--setup", default=None, help="shell command run once in the base tree")
    ab.add_argument("--json", default=None, help="write the report as JSON here")
    ab.add_argument("--markdown", default=None, help="write the report as markdown here")
    add_cli_arguments(ab, ("gpuperf_warn_only",))
    ab.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then pytest arguments")


def _report_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`gpuperf report RESULTS... -o HTML [--baseline-dir] [--pyproject] [--title]`."""
    rep = sub.add_parser(
        "report",
        help="one HTML report of several runs (GPUs, emulated caps, dates)",
        description="Merge the JSON results of several runs into one self-contained HTML "
        "report. Inputs that cannot be read are named and left out; the report is written "
        "for the others (exit 2 when any was left out, so CI notices).",
    )
    rep.add_argument(
        "results", type=Path, nargs="+", help="--gpuperf-json or --benchmark-json files"
    )
    rep.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    rep.add_argument(
        "--baseline-dir",
        type=Path,
        default=None,
        help="baselines/<profile>.json here give each judged benchmark's history",
    )
    rep.add_argument(
        "--pyproject",
        type=Path,
        default=None,
        help="pyproject.toml with [tool.gpuperf.profiles] (prices); default: ./pyproject.toml",
    )
    rep.add_argument("--title", default="gpuperf report", help="the report's title")


def compare_command(args: argparse.Namespace) -> int:
    """`gpuperf compare`: judge the run, print its table, class lines and count; exit 1 on
    a regression (0 with --warn-only), 2 on bad input (InputError)."""
    try:
        rows, regressed, used, confidence, shifts, rerun, blind, results = compare_files(
            args.results, args.baseline, args.tolerance, args.memory_tolerance, args.false_alarm
        )
    except InputError as exc:
        print(f"gpuperf compare: {plain(exc)}", file=sys.stderr)
        return 2
    print(f"baseline: {used}")
    for line in table(VERDICT_HEADER, rows):
        print(line)
    for line in shifts:
        print(line)
    print(verdict_count_line(rows, confidence, verbosity=1))
    for line in rerun:
        print(f"reproduce: {plain(line)}")
    for line in blind:
        print(plain(line))
    for line in trail_lines(results) if args.verbose else []:
        print(line)
    if regressed:
        print("performance regression" + (" (--warn-only: not failing)" if args.warn_only else ""))
        return 0 if args.warn_only else 1
    return 0


def report_command(args: argparse.Namespace) -> int:
    """`gpuperf report`: read each results file (a bad one is named and left out), the
    baselines of their profiles for the history charts, the profiles for prices; write."""
    from ..baseline.store import load as load_baseline
    from ..hardware.profiles import ProfileError, load_registry
    from ..outputs.paths import first_clash
    from ..outputs.report.html import baseline_name, build_html
    from ..outputs.runfile import ResultsFileError, read_run, run_count

    pyproject = args.pyproject or Path("pyproject.toml")
    if args.pyproject is not None and not pyproject.is_file():  # named: a typo must not pass
        print(f"gpuperf report: --pyproject {pyproject}: not a file", file=sys.stderr)
        return 2
    try:
        registry = load_registry(pyproject if pyproject.is_file() else None)
    except ProfileError as exc:
        print(f"gpuperf report: {plain(exc)}", file=sys.stderr)
        return 2
    clash = first_clash(
        [("-o", args.output)],
        [
            *(("results file", p) for p in args.results),
            ("profiles file", pyproject if pyproject.is_file() else None),
        ],
        [("--baseline-dir", args.baseline_dir, registry.names())] if args.baseline_dir else [],
    )
    if clash:
        print(f"gpuperf report: {plain(clash)}; nothing written", file=sys.stderr)
        return 2
    problems: list[str] = []
    summaries = []
    for path in args.results:
        try:
            summaries.append(read_run(path)[1])
        except ResultsFileError as exc:
            problems.append(f"left out: {exc}")
    baselines: dict[str, Any] = {}
    if args.baseline_dir is not None:
        if not args.baseline_dir.is_dir():
            print(f"gpuperf report: --baseline-dir {args.baseline_dir}: not a directory",
                  file=sys.stderr)  # fmt: skip
            return 2
        for name in sorted({baseline_name(s) for s in summaries} - {""}):
            try:
                found = load_baseline(args.baseline_dir / name)
            except BaselineError as exc:
                problems.append(f"no history from {name}: {exc}")
                continue
            if found is not None:
                baselines[name] = found
    for line in problems:
        print(f"gpuperf report: {plain(line)}", file=sys.stderr)
    if not summaries:
        print("gpuperf report: no readable results: nothing written", file=sys.stderr)
        return 2
    try:
        text = build_html(
            summaries, profiles=registry.get, baselines=baselines, problems=problems,
            title=args.title,
        )  # fmt: skip
    except ImportError as exc:  # the report extra is not installed (MissingExtra says so)
        print(f"gpuperf report: {exc}", file=sys.stderr)
        return 2
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"gpuperf report: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    size = len(text.encode()) / 1024
    print(f"wrote {args.output} ({size:,.0f} KiB) from {run_count(summaries)} run(s)")
    return 2 if problems and any(p.startswith("left out") for p in problems) else 0

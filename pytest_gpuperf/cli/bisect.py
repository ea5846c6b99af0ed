"""`gpuperf bisect --good G --bad B -- TESTID...`: the commits of good..bad that changed a
figure, found on this machine (judging/bisection.py walks the range).

Each probed commit is built as `gpuperf ab` builds its base: a detached git worktree of its
own (fresh/abtree.py, `--setup CMD` run in it first), and is measured against a worktree of
the good and one of the bad commit in interleaved paired rounds. A build's rounds run in
long-lived pytest processes (paired/pool.py, the paired stage's round worker: 2 a build,
started once, the good and bad builds' for the whole walk, a probe's while it is measured),
so a further round costs the test's own run, not a process start; the import proof holds
(a process that imported another build's files is refused: the good or bad build's stops
the run, a probe's own modules from another build skip that commit). A commit
whose setup or pytest fails, or whose test gives no figure, is skipped and named, as
`git bisect skip`. First-parent history by default (`--all-parents` enters merges);
a tree with uncommitted changes is refused (bisect measures commits only), a shallow clone
is an error naming `git fetch --unshallow`. The state (every round measured) is written to
the git directory after each measurement: `--resume` continues a run that was stopped or
ran out of `--budget`. `--from RESULTS.json` (a failed gate's --gpuperf-json) bisects its
regressed tests from the baseline's commit to the run's (what follows -- is added to them:
options such as --gpu-profile). `--budget` never starts a measurement that the time left
cannot hold, priced from the rounds and process starts measured so far. Nothing is written
to baselines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from ..core.gitcmd import call as git
from ..fresh.abprobe import OWN, WATCH
from ..fresh.abtree import (
    Stopped,
    base_path,
    base_worktree,
    prune_stale,
    resolve_base,
    run_setup,
    stop_on_signals,
)
from ..fresh.provenance import write_own
from ..judging.abjudge import ABError
from ..judging.bisection import (
    BisectError,
    Bisection,
    Settings,
    Skip,
    probes_for,
    rounds_needed,
)
from ..outputs.text import json_safe, plain
from ..paired import worker
from ..paired.looks import WARM_S
from ..paired.pool import Pool, WrongBuild
from ..paired.rounds import Build, RoundsError, base_build, install_worker
from .ab import MAX_ROUNDS, Round, check_outputs, figures_of
from .bisectreport import build, markdown, text_lines

STATE_NAME = "gpuperf-bisect-state.json"  # in the repository's git directory


def commit_range(cwd: Path, good: str, bad: str, all_parents: bool) -> tuple[Path, list[str]]:
    """The repository and the commits good..bad, good first (first-parent history unless
    `all_parents`), or BisectError: a shallow clone, a dirty tree, refs that are no
    commits, a good commit that is not an ancestor of the bad one."""
    shallow = git(cwd, "rev-parse", "--is-shallow-repository")
    if shallow.returncode == 0 and shallow.stdout.strip() == "true":
        raise BisectError("this is a shallow clone: good..bad needs the history between them; "
                          "run `git fetch --unshallow` (in CI: fetch-depth: 0) and try again")
    try:
        g, b = resolve_base(cwd, good), resolve_base(cwd, bad)
    except ABError as exc:
        raise BisectError(str(exc).replace("base ref", "ref")) from None
    if b.dirty:
        raise BisectError(f"the working tree has uncommitted changes to {b.dirty} tracked "
                          "file(s): bisect measures commits only, never the tree (refused): "
                          "commit or stash them first")  # fmt: skip
    if g.sha == b.sha:
        raise BisectError(f"--good {good} and --bad {bad} are the same commit")
    if git(g.root, "merge-base", "--is-ancestor", g.sha, b.sha).returncode != 0:
        raise BisectError(f"--good {good} is not an ancestor of --bad {bad}: give an older good")
    walk = ["rev-list", "--reverse"] + (["--topo-order"] if all_parents else ["--first-parent"])
    listed = git(g.root, *walk, f"{g.sha}..{b.sha}")
    if listed.returncode != 0:
        raise BisectError(f"git rev-list failed: {listed.stderr.strip()}")
    return g.root, [g.sha, *listed.stdout.split()]


def commit_info(root: Path, commits: list[str]) -> dict[str, dict[str, str]]:
    """Each commit's subject, author and date (ISO)."""
    out = {}
    for c in commits:
        shown = git(root, "show", "-s", "--format=%s%x1f%an%x1f%aI", c).stdout.strip()
        subject, author, date = [*shown.split("\x1f"), "", "", ""][:3]
        out[c] = {"subject": subject, "author": author, "date": date}
    return out


def from_results(path: Path) -> tuple[str | None, str | None, list[str]]:
    """`--from RESULTS.json`: the baseline's commit its regressed tests were judged against
    (the newest session's, as the paired stage takes it; None where none is recorded), the
    run's own commit (None where unrecorded) and the regressed tests, or BisectError."""
    from ..baseline.schema import BaselineError
    from ..baseline.store import baseline_path, load
    from ..core.verdict import Status
    from ..paired.stage import newest_commit
    from .inputs import InputError, read_results

    try:
        data, results = read_results(path, " to bisect")
    except InputError as exc:
        raise BisectError(str(exc)) from None
    regressed = [r for r in results if any(v.status == Status.REGRESSED
                                           for v in r.verdicts.values())]  # fmt: skip
    if not regressed:
        raise BisectError(f"results file {path}: no test regressed: nothing to bisect")
    recorded = data.get("baseline")
    where = Path(recorded) if isinstance(recorded, str) and recorded else None
    if (where is None or not where.is_file()) and data.get("profile"):
        where = baseline_path(Path("baselines"), str(data["profile"]))  # this checkout's
    good = None
    try:
        base = load(where) if where is not None else None
    except BaselineError as exc:
        raise BisectError(f"--from {path}: its baseline {where}: {exc}") from None
    if base is not None:
        good, _ = newest_commit(Path.cwd(), base.entries, {r.key for r in regressed})
    bad = data.get("commit") if isinstance(data.get("commit"), str) else None
    return good, bad, list(dict.fromkeys(r.nodeid for r in regressed))


class Builds:
    """A worktree per commit measured, made when first needed and kept to the end (a probe
    may get more rounds later), its rounds in `slots` long-lived processes (paired/pool.py);
    the good and bad builds' failures are errors, a probe's a Skip."""

    def __init__(self, root: Path, ends: tuple[str, str], pytest_args: list[str],
                 setup: str | None, stack: contextlib.ExitStack, log: Any,
                 slots: int = 2) -> None:  # fmt: skip
        self.root, self.ends, self.setup = root, ends, setup
        self.args = (*pytest_args, "-q", "-p", "no:cacheprovider", "--gpuperf-baseline=off")
        self.stack, self.log = stack, log
        self.pool = Pool(root, slots, ends)
        self.made: set[str] = set()
        self.done: dict[str, int] = {}  # rounds measured of each build (their log lines)

    def ready(self, commit: str) -> None:
        """The commit's worktree, its setup run, its processes' build added to the pool
        (they start on its first round, and end before the worktree is removed)."""
        if commit in self.made:
            return
        self.made.add(commit)
        t0 = time.monotonic()
        work, tree = self.stack.enter_context(base_worktree(self.root, commit))
        self.stack.callback(self.pool.stop, commit, True)
        try:
            if self.setup:
                run_setup(self.setup, tree, "--setup")
        except ABError as exc:
            self.fail(commit, str(exc))
        install_worker(work)
        cwd = Path.cwd()  # its processes start as `python -m pytest` here would (cwd first)
        head = Build("head", cwd, (str(cwd), *sys.path), self.args,
                     os.environ.get("PYTHONPATH", ""))  # fmt: skip
        extra = [p for p in base_path(self.root, tree, None).split(os.pathsep) if p]
        own = write_own(tree, work / "own.json")
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
        env.update({WATCH: os.pathsep.join(str(p.resolve()) for p in (self.root, tree)),
                    OWN: own, worker.OWN: own})  # fmt: skip
        if shutil.which("nvidia-smi"):  # a CUDA machine: warm the GPU before a first call
            env[worker.WARM] = f"{WARM_S:g}"
        self.pool.add(commit, base_build(head, self.root, tree, extra), work, tree, env)
        self.pool.costs.preps.append(time.monotonic() - t0)

    def fail(self, commit: str, why: str) -> NoReturn:
        lines = [x.strip() for x in why.strip().splitlines() if x.strip()] or ["failed"]
        errors = [x for x in lines[1:] if x.startswith("E ") or "Error" in x]
        first = lines[0] + (f" {errors[-1]}" if errors else "")
        if commit in self.ends:
            which = "good" if commit == self.ends[0] else "bad"
            raise BisectError(f"the {which} commit {commit[:12]} cannot be measured: "
                              + " | ".join(why.strip().splitlines()[:4]))  # fmt: skip
        raise Skip(first[:300])

    def one(self, commit: str, slot: int) -> Round:
        """One round of `commit`'s build in its process `slot`: its figures."""
        self.ready(commit)
        i = self.done.get(commit, 0)
        self.done[commit] = i + 1
        t0 = time.monotonic()
        try:
            data = self.pool.round(commit, slot)
            figures = figures_of(list(data.get("results") or []))
        except WrongBuild as exc:
            if exc.key == commit:  # this round's own modules came from another build
                self.fail(commit, str(exc))
            raise BisectError(f"{exc.key[:12]}: {exc}: its rounds are not to be trusted "
                              f"(remove {STATE_NAME} before running again)") from None
        except RoundsError as exc:
            self.fail(commit, str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            self.fail(commit, f"its round's results cannot be read: {exc!r}")
        if self.log is not None:
            self.log(f"{commit[:12]} round {i + 1} (process {slot}): "
                     f"{time.monotonic() - t0:.1f} s")  # fmt: skip
        return figures

    def cost(self, commit: str, against: str, rounds: int) -> float:
        """The seconds `rounds` paired rounds of the two builds will likely take, by what
        this run (or the one it resumes) measured: each round of both builds, and for a
        build without live processes its worktree and setup (the first time), its
        processes' start and their first rounds' extra; 0 for what nothing measured yet."""
        c = self.pool.costs
        total = rounds * 2 * (c.round_s or 0.0)
        for b in dict.fromkeys((commit, against)):
            if not self.pool.alive(b):
                total += 0.0 if b in self.made else c.prep_s or 0.0
                total += (c.start_s or 0.0) + min(rounds, self.pool.slots) * (
                    c.first_extra_s or 0.0)
        return total

    def finish(self) -> None:
        """End every build's processes, their import proof checked: BisectError where one
        measured another build's code."""
        try:
            self.pool.close()
        except WrongBuild as exc:
            raise BisectError(f"{exc.key[:12]}: {exc}: its rounds are not to be trusted "
                              f"(remove {STATE_NAME} before running again)") from None


class Measurer:
    """The engine's `measure`: rounds of a commit and the build it is measured against,
    interleaved (the order alternating), as log ratios of the one figure bisected (chosen
    on the first measurement: the one that moved most between good and bad). The pair's
    round `first + i` runs in process slot (first + i) % slots of each build, as the engine
    groups them (judging/bisection.pair_estimate)."""

    def __init__(self, builds: Builds, figure: dict[str, Any] | None, estimate: Any,
                 slots: int = 2) -> None:  # fmt: skip
        self.builds, self.figure, self.estimate, self.slots = builds, figure, estimate, slots
        self.turn = 0

    def __call__(self, commit: str, against: str, n: int, first: int = 0) -> list[float]:
        if commit not in self.builds.ends:
            self.estimate(self)
        pairs = []
        for r in range(n):
            slot = (first + r) % self.slots
            order = (commit, against) if self.turn % 2 == 0 else (against, commit)
            self.turn += 1
            got = {c: self.builds.one(c, slot) for c in order}
            pairs.append((got[commit], got[against]))
        if self.figure is None:
            self.figure = choose_figure(pairs)
        key = (self.figure["key"], self.figure["metric"])
        out = []
        for mine, theirs in pairs:
            for c, figs in ((commit, mine), (against, theirs)):
                value, unit, higher = figs.get(key, (None, None, None))
                if value is None:
                    self.builds.fail(c, f"its test gave no figure {key[0]} {key[1]} (failed?)")
                if not (math.isfinite(value) and value > 0):
                    self.builds.fail(c, f"its figure {key[0]} {key[1]} is {value!r}, not a "
                                     "positive number")  # fmt: skip
                if (unit, higher) != (self.figure["unit"], self.figure["higher"]):
                    self.builds.fail(c, f"its figure {key[0]} {key[1]} is in {unit!r}, higher "
                                     f"{'is' if higher else 'is not'} better, not as bisected "
                                     f"({self.figure['unit']!r}): never converted")  # fmt: skip
            out.append(math.log(mine[key][0] / theirs[key][0]))
        return out


def choose_figure(pairs: list[tuple[dict[Any, Any], dict[Any, Any]]]) -> dict[str, Any]:
    """The figure measured in every round of both sides that moved most (mean log ratio),
    of those with a positive value in each (a peak memory of 0 B has no ratio)."""
    common = set.intersection(*(set(a) & set(b) for a, b in pairs))
    common = {k for k in common
              if all(_positive(a[k][0]) and _positive(b[k][0]) for a, b in pairs)}  # fmt: skip
    if not common:
        raise BisectError("the good and bad builds' tests gave no figure in common: "
                          "check the test ids (pytest ran, but measured nothing to compare)")
    def moved(k: tuple[str, str]) -> float:
        return abs(sum(math.log(a[k][0] / b[k][0]) for a, b in pairs)) / len(pairs)

    key = max(sorted(common), key=moved)
    return {"key": key[0], "metric": key[1], "unit": pairs[0][0][key][1],
            "higher": pairs[0][0][key][2]}  # fmt: skip


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x) and x > 0


def state_path(root: Path) -> Path:
    common = git(root, "rev-parse", "--git-common-dir").stdout.strip() or ".git"
    return (root / common).resolve() / STATE_NAME


def read_state(path: Path, resume: bool, key: dict[str, Any]) -> dict[str, Any] | None:
    """The saved state to resume (None: start anew), or BisectError: a state of an
    unfinished run that --resume was not given for, or one of another bisection."""
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BisectError(f"the state {path} cannot be read: {exc}") from None
    if not resume:
        if isinstance(saved, dict) and saved.get("finished"):
            return None
        raise BisectError(f"an unfinished bisection's state is in {path}: pass --resume to go "
                          "on with it, or remove the file to start anew")  # fmt: skip
    if not isinstance(saved, dict) or saved.get("key") != key:
        raise BisectError(f"the state {path} is of another bisection (good, bad, tests or "
                          "parents differ): remove it, or run without --resume")  # fmt: skip
    return saved


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Through a rename, so that a kill leaves the last whole state."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(json_safe(state)) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class Estimate:
    """The estimate printed once, before the first probe: the probes one step takes, each a
    new build (its worktree and setup, its processes' start and first rounds) measured
    against good and bad in the rounds the good-bad rounds' spread asks of each, each round
    of both builds at what a later round took (this run's, or the run it resumes: the
    state's "costs"). `engine` is set once it exists."""

    def __init__(self, n_commits: int, settings: Settings) -> None:
        self.n_commits, self.s = n_commits, settings
        self.engine: Bisection | None = None
        self.said = False

    def minutes(self, m: Measurer) -> tuple[int, int, float, float, float]:
        """(probes, rounds a pair, a probe's start, a round of both builds, minutes)."""
        assert self.engine is not None
        c, e = m.builds.pool.costs, self.engine
        n = rounds_needed(e.data.get((e.bad, e.good), []), self.s)
        probes = probes_for(self.n_commits)
        start = ((c.prep_s or 0.0) + (c.start_s or 0.0)
                 + self.s.processes * (c.first_extra_s or 0.0))  # fmt: skip
        pair = 2 * (c.round_s or 0.0)
        return probes, n, start, pair, probes * (start + 2 * n * pair) / 60

    def __call__(self, m: Measurer) -> None:
        if self.said or self.engine is None:
            return
        self.said = True
        probes, n, start, pair, minutes = self.minutes(m)
        print(f"estimate: about {probes} probe(s) for one step in {self.n_commits} commits, "
              f"each a build of {self.s.processes} process(es) ready in about {start:.1f} s "
              f"(worktree, start, first rounds), measured against good and bad in about {n} "
              f"round(s) each (at the good-bad rounds' spread) of {pair:.1f} s (both "
              f"builds): ~{minutes:.1f} min; an unsure probe gets more rounds (up to "
              f"{self.s.max_rounds}) and each further step more probes", flush=True)  # fmt: skip


def bisect(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    """Resolve the range, walk it, and return the report."""
    settings = Settings(tolerance=args.tolerance, rounds=args.rounds,
                        max_rounds=max(args.rounds, args.max_rounds),
                        budget_s=args.budget)  # fmt: skip
    root, commits = commit_range(Path.cwd(), args.good, args.bad, args.all_parents)
    for line in prune_stale(root):
        log(line)
    key = {"good": commits[0], "bad": commits[-1], "tests": list(args.pytest_args),
           "all_parents": bool(args.all_parents)}  # fmt: skip
    path = state_path(root)
    saved = read_state(path, args.resume, key)
    figure = (saved or {}).get("figure")
    print(f"gpuperf bisect: {len(commits)} commits, {commits[0][:12]}..{commits[-1][:12]}"
          + (f"; resuming from {path}" if saved else ""), flush=True)  # fmt: skip
    with contextlib.ExitStack() as stack:
        builds = Builds(root, (commits[0], commits[-1]), list(args.pytest_args), args.setup,
                        stack, log, settings.processes)  # fmt: skip
        prior = (saved or {}).get("costs")
        builds.pool.costs.prior = dict(prior) if isinstance(prior, dict) else {}
        estimate = Estimate(len(commits), settings)
        measurer = Measurer(builds, figure, estimate, settings.processes)

        def save(engine_state: dict[str, Any], finished: bool = False) -> None:
            write_state(path, {"key": key, "figure": measurer.figure, "finished": finished,
                               "engine": engine_state, "costs": builds.pool.costs.saved()})

        engine = Bisection(commits, measurer, settings, state=(saved or {}).get("engine"),
                           save=save, cost=builds.cost)  # fmt: skip
        estimate.engine = engine
        outcome = engine.run()
        builds.finish()
        save(engine.state(), finished=outcome.verdict != "budget")
    meta = {"good": commits[0], "bad": commits[-1], "commits": len(commits),
            "tests": list(args.pytest_args), "rounds": args.rounds,
            "tolerance": args.tolerance, "figure": measurer.figure, "state": str(path),
            "processes": builds.pool.started}  # fmt: skip
    return build(outcome, commit_info(root, commits), meta)  # fmt: skip


def main(args: argparse.Namespace) -> int:
    """`gpuperf bisect`: exit 0 (walked, or told why not), 2 (bad input, a good or bad build
    that cannot be measured, an output that cannot be written), 128 + the signal."""
    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.pytest_args[:1] == ["--"]:
        args.pytest_args = args.pytest_args[1:]
    outputs = [(w, p, "w") for w, p in (("--json", args.json), ("--markdown", args.markdown)) if p]
    try:
        if args.from_results is not None:
            good, bad, tests = from_results(args.from_results)
            args.good = args.good or good
            args.bad = args.bad or bad
            args.pytest_args = [*tests, *args.pytest_args]  # after --: options added
            print(f"gpuperf bisect: from {args.from_results}: {len(tests)} regressed test(s)",
                  flush=True)  # fmt: skip
        if not args.good:
            raise BisectError(f"--from {args.from_results}: the baseline recorded no commit "
                              "for its regressed tests: give --good" if args.from_results
                              else "give --good (or --from RESULTS.json)")  # fmt: skip
        args.bad = args.bad or "HEAD"
        if not args.pytest_args:
            raise BisectError("name the tests after --: gpuperf bisect --good G -- TESTID")
        if not 2 <= args.rounds <= MAX_ROUNDS:
            raise BisectError(f"--rounds must be between 2 and {MAX_ROUNDS}, got {args.rounds}")
        if problem := check_outputs(outputs):
            raise BisectError(problem)
        with stop_on_signals():
            report = bisect(args, log)
    except (BisectError, ABError) as exc:
        print("gpuperf bisect: " + " ".join(map(plain, str(exc).splitlines())), file=sys.stderr)
        return 2
    except (Stopped, KeyboardInterrupt) as exc:
        signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
        print(f"gpuperf bisect: stopped by {signal.Signals(signum).name} (exit {128 + signum}); "
              "the worktrees were removed; --resume goes on from the last measurement",
              file=sys.stderr)  # fmt: skip
        return 128 + signum
    for line in text_lines(report):
        print(line)
    failed = 0
    for what, p, _ in outputs:
        text = json.dumps(json_safe(report), indent=2) if what == "--json" else markdown(report)
        try:
            Path(p).parent.mkdir(parents=True, exist_ok=True)
            Path(p).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"gpuperf bisect: NOT WRITTEN: {what} {p}: {exc.strerror or exc}",
                  file=sys.stderr)  # fmt: skip
            failed += 1
    return 2 if failed else 0


def add_arguments(sub: Any, epilog: str) -> None:
    """`gpuperf bisect --good G [--bad B] ... -- TESTID...` (or `--from RESULTS.json`): its
    description is this module's docstring."""
    from ..plugin.options import add_cli_arguments

    b = sub.add_parser("bisect", help="find the commits of good..bad that changed a figure",
                       description=(__doc__ or "").strip(), epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    b.add_argument("--good", default=None, help="a commit whose figure is good")
    b.add_argument("--bad", default=None, help="a later commit whose figure is bad (HEAD)")
    b.add_argument("--from", dest="from_results", type=Path, default=None, metavar="RESULTS",
                   help="a failed gate's --gpuperf-json: its regressed tests, the baseline's "
                   "commit as --good and the run's as --bad (each unless given)")  # fmt: skip
    b.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="stop measuring after this long; --resume goes on")  # fmt: skip
    b.add_argument("--rounds", type=int, default=5, help="paired rounds a probe starts with (5)")
    b.add_argument("--max-rounds", type=int, default=40,
                   help="the most an unsure probe gets (40)")  # fmt: skip
    add_cli_arguments(b, ("gpuperf_tolerance",))
    b.add_argument("--setup", default=None, help="shell command run once in each worktree")
    b.add_argument("--json", default=None, help="write the report as JSON here")
    b.add_argument("--markdown", default=None, help="write the report as markdown here")
    b.add_argument("--resume", action="store_true", help="go on from the saved state")
    b.add_argument("--all-parents", action="store_true",
                   help="enter merged branches (default: first-parent history)")  # fmt: skip
    b.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then the test ids")

"""The paired stage (stage 2 of the gate): the throughput figures the first stage left
inconclusive, and those it found changed (checked; `candidates` says why), re-measured
against a build of the baseline's commit on this machine, in rounds (rounds.py), judged
on the paired differences (judge.py). Its verdicts replace the first
stage's for those figures and keep them (`stage1`), so a reader sees what each stage said
and why a figure was re-measured; a checked figure it cannot decide becomes inconclusive,
unless its rounds put the change beyond the tolerance on the first stage's side (or, where
its noise is per process, every process pair on its own did): that verdict then stands.

The stage runs when the baseline's sessions recorded the commit they were saved at, that
commit is in this clone, and the run compares with the baseline (not in save mode, not in
a fresh process of the gate's own). Otherwise, or when the rounds cannot be measured, it
says why in one line and the first stage's verdicts stand. The run's false-alarm budget is
split: half for the first stage, half for this one (Bonferroni over the figures it
re-measures), spent in two looks of a half each: the asked rounds, then up to MORE times as
many of the tests the first look left undecided, in PAIRS more process pairs
(looks.py measures them)."""

from __future__ import annotations

import math
import statistics
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.verdict import Rule, Verdict, after, amend, stage1_record
from ..judging.offsets import recap_derived
from ..judging.verdict import CHANGED, INCONCLUSIVE, INCONCLUSIVE_POWER, REGRESSED
from .envshift import environment_shifts, software_changed
from .looks import MORE, PAIRS, more_said, rounds_said

if TYPE_CHECKING:
    from ..core.results import Result

STAGE_SHARE = 0.5  # of the run's false-alarm budget, when the paired stage can run
# the least budget, 90 s a process pair: a small file's first look fits whole (at 180 s with
# three pairs, two of the own file's seven tests did not: evidence/h100-2026-12-07-pairs3)
BUDGET_FLOOR_S = 90.0 * PAIRS
LEFT_TO_STAGE1 = "launch-bound"  # wall time whose noise is per process: stage 2 cannot help
# the stage's rules, as a verdict's trail names them
STAGE = "paired stage"
NOT_MEASURED, UNDECIDED, EACH = Rule.LEFT_OUT, Rule.STAGE1_STANDS, Rule.EACH_PAIR


@dataclass
class Stage:
    """What the paired stage did, for the run's line."""

    line: str


def newest_commit(
    root: Path, entries: dict[str, dict[str, Any]], keys: Iterable[str]
) -> tuple[str | None, str]:
    """The commit of the newest baseline session among `keys`' entries, and a note when
    their sessions were saved at more than one commit ("" when one). Newest: a commit no
    other of them descends from (dates have a second's resolution; a save and the next
    commit's can share one), then the latest date."""
    newest: dict[str, str] = {}  # commit -> its latest entry date
    for key in keys:
        e = entries.get(key) or {}
        commit, date = e.get("commit"), str(e.get("date") or "")
        if isinstance(commit, str) and commit:
            newest[commit] = max(date, newest.get(commit, ""))
    if not newest:
        return None, ""
    tips = [c for c in newest if not any(
        o != c and _git(root, "merge-base", "--is-ancestor", c, o).returncode == 0
        for o in newest)] or list(newest)  # fmt: skip
    commit = max(tips, key=lambda c: (newest[c], c))
    note = (
        f"; the baseline's newest sessions of these tests were saved at {len(newest)} "
        f"commits: paired against the newest, {commit[:12]} ({newest[commit] or 'undated'})"
        if len(newest) > 1
        else ""
    )
    return commit, note


def candidates(
    results: list[Result], entries: dict[str, dict[str, Any]] | None = None,
    env: dict[str, Any] | None = None,
) -> list[tuple[Result, str, str]]:  # fmt: skip
    """(result, metric, class) of each throughput-class figure the paired stage re-measures:
    those the first stage left inconclusive, and those it found changed (`checked`: the
    first stage's confirmation runs on this card again, so a card's own residual and recent
    load repeat there, while rounds that alternate the builds on one card share both:
    docs/evidence/paired-stage-notes.md). Left to the first stage: a wall time launch-bound
    now (whatever class it declares) or in every session it was saved in (which side of the
    edge a process falls on is its own: figure.other_regime), and a change whose baseline
    entry was saved with other software than `env` (`software_changed`: both builds here
    share a new version's change, so only the first stage sees it)."""
    from ..core.figures import KERNEL_FIGURES, LAUNCH, MEMORY, PER_CLOCKS, RECORDED, metrics_of

    out = []
    for r in results:
        if r.kind != "measured":
            continue
        figs = metrics_of(r)
        for metric, v in r.verdicts.items():
            cls = (figs.get(metric) or {}).get("noise_class")
            edge = metric not in KERNEL_FIGURES and (
                bool(r.launch_bound) or _saved_launch_bound(r, metric, entries))
            if cls in (None, MEMORY, RECORDED, LAUNCH) or edge:
                continue
            status = v.status
            check = (status in CHANGED and metric not in PER_CLOCKS  # judged with its time
                     and not software_changed(r.key, entries or {}, env or {}))  # fmt: skip
            if status == "inconclusive" or check:
                out.append((r, metric, str(cls)))
    return out


def _saved_launch_bound(r: Result, metric: str, entries: dict[str, dict[str, Any]] | None) -> bool:
    from ..baseline.history import launch_bound_throughout

    base_m = ((entries or {}).get(r.key) or {}).get("metrics", {}).get(metric)
    return isinstance(base_m, dict) and launch_bound_throughout(base_m) > 0


def checked(todo: list[tuple[Result, str, str]]) -> int:
    """How many of the stage's figures the first stage had decided (found changed), not
    left inconclusive."""
    return sum(1 for r, m, _ in todo if r.verdicts[m].status in CHANGED)


def _what(todo: list[tuple[Result, str, str]], tests: int | None = None) -> str:
    """The figures the stage takes, in words."""
    n, k = len(todo), checked(todo)
    of = f" of {tests} test(s)" if tests is not None else ""
    if not k:
        return f"{n} figure(s){of} the first stage left inconclusive"
    return (f"{n} figure(s){of}: {n - k} the first stage left inconclusive, {k} "
            "figure(s) it found changed (checked)")  # fmt: skip


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    from ..core import gitcmd

    return gitcmd.call(root, *args)


def _repo(config: Any) -> Path | None:
    top = _git(Path(config.rootpath), "rev-parse", "--show-toplevel")
    return Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else None


def run_stage(
    config: Any, results: list[Result], entries: dict[str, dict[str, Any]], *,
    rounds: int, false_alarm: float, budget_s: float, env: dict[str, Any] | None = None,
    costs: dict[str, float] | None = None, doing: dict[str, Any] | None = None,
    run_max_s: float | None = None, gpu_bytes: int | None = None, setup: str | None = None,
) -> Stage | None:  # fmt: skip
    """Re-measure and judge what the first stage left inconclusive or found changed
    (`candidates`), None if nothing; replace the verdicts it decides (recap_derived caps
    their derived figures) and make a checked figure it cannot decide (`_each_pair` aside)
    or kernel-time one it does not re-measure (`_leave`) inconclusive. `costs`: each test's
    first-stage seconds (plan.py); `doing`: told what the rounds re-measure (a Ctrl-C
    line); `run_max_s`: the run's max_time; `gpu_bytes`: the GPU memory of a round's pair."""
    todo = candidates(results, entries, env)
    if not todo:
        return None
    what = _what(todo)
    root = _repo(config)
    if root is None:
        return Stage(f"paired stage off: {config.rootpath} is not in a git repository; the "
                     "first stage's verdicts stand")  # fmt: skip
    commit, mixed = newest_commit(root, entries, {r.key for r, _, _ in todo})
    if commit is None:
        return Stage(
            f"paired stage off: the baseline's sessions of the {what} recorded no "
            "commit (saved outside a git checkout, or from uncommitted changes); the first "
            "stage's verdicts stand"
        )
    others = [t for t in todo if (entries.get(t[0].key) or {}).get("commit") != commit]
    todo = [t for t in todo if t not in others]  # another commit's, or none: not this build's
    tests = sorted({r.nodeid for r, _, _ in todo})
    mixed += (f"; {len(others)} figure(s) saved at another commit or none left to the first "
              "stage" if others else "")  # fmt: skip
    what = _what(todo, len(tests))
    if _git(root, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return Stage(f"paired stage off: the baseline's commit {commit[:12]} is not in this "
                     "clone (a shallow clone? git fetch --unshallow, or fetch that commit); "
                     "the first stage's verdicts stand")  # fmt: skip
    from ..baseline.schema import expected_durations
    from .looks import measure_looks
    from .plan import affordable, round_cap
    from .rounds import RoundsError

    asked, base_s = todo, expected_durations(entries, tests)  # the base's own time a test
    todo, tests, dear = affordable(todo, tests, results, costs or {}, round_cap(config),
                                   budget_s, PAIRS, base_s, run_max_s, gpu_bytes)  # fmt: skip
    _leave(asked, set(tests), "its test was left out of the rounds (the stage's line says why)")
    if not tests:
        return Stage(f"paired stage against {commit[:12]}{mixed}: {what}, not measured: "
                     f"{dear}; {_stand(asked)}")  # fmt: skip
    what = _what(todo, len(tests))
    t0 = time.monotonic()
    if doing is not None:
        doing.update(t0=t0, what=f"re-measuring {what} against {commit[:12]} within "
                                 f"{budget_s:.0f} s{'; ' + dear if dear else ''}")  # fmt: skip

    def undecided(measured: Any, of: list[str]) -> list[str]:  # the first look's undecided
        from .figures import undecided_tests  # figures' tests, of the tests it measured

        return undecided_tests([t for t in todo if t[0].nodeid in of], measured, false_alarm / 2)

    first = {r.nodeid for r, m, _ in todo if r.verdicts[m].status in CHANGED}
    try:
        looks = measure_looks(config, results, root, commit, tests, rounds, budget_s,
                              undecided, first, setup)  # fmt: skip
    except Exception as exc:  # a bug here must not cost the run its stage-1 verdicts either
        why = exc if isinstance(exc, RoundsError) else f"{type(exc).__name__}: {exc}"
        _leave(todo, set(), f"its rounds did not end: {why}")  # a checked one: inconclusive
        return Stage(f"paired stage against {commit[:12]}{mixed}: {what}, not measured: "
                     f"{why}; {_stand(asked)}{'; ' + dear if dear else ''}")  # fmt: skip
    todo = _leave(todo, set(tests) - set(looks.dropped), "its first rounds did not fit")
    decided = _apply(todo, looks.got, false_alarm, commit, looks.again, looks.whole, entries)
    recap_derived(results)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(decided.items()))
    return Stage(
        f"paired stage against the baseline's commit {commit[:12]}{mixed}: {what} "
        f"re-measured in {rounds_said(looks.got, budget_s)} ({PAIRS} processes a side)"
        f"{looks.dropped_said}{more_said(looks.again, looks.note)} in "
        f"{time.monotonic() - t0:.0f} s: {counts}{'; ' + dear if dear else ''}"
        f"{_base_said(todo, entries, env or {})}"
    )


def _base_said(todo: list[tuple[Result, str, str]], entries: dict[str, dict[str, Any]],
               env: dict[str, Any]) -> str:  # fmt: skip
    """The line's words on the figures the base check refused ("" where none), naming the
    recorded environment of their baseline entries that differs from this run's."""
    from ..baseline.history import env_for
    from .basecheck import Refusal, differences, line

    refused = [Refusal(r.key, m, **rec) for r, m, _ in todo
               if (rec := (r.verdicts[m].paired or {}).get("base_check"))]  # fmt: skip
    diffs = {differences((entries.get(no.key) or {}).get("environment") or {},
                         env_for(env, 1)) for no in refused}  # fmt: skip
    undecided = sum(r.verdicts[m].status == INCONCLUSIVE for r, m, _ in todo
                    if (r.verdicts[m].paired or {}).get("base_check", {}).get("outside") is False)
    said = line(refused, "; ".join(sorted(d for d in diffs if d)), undecided)
    return f"; {said}" if said else ""


def _stand(figures: list[tuple[Result, str, str]]) -> str:
    """What stands of the first stage's verdicts where the stage measured none of
    `figures`: its *other* verdicts where `_leave` made a checked figure inconclusive."""
    other = any(r.verdicts[m].stage1 is not None for r, m, _ in figures)
    return f"the first stage's{' other' * other} verdicts stand"


def _leave(todo: list[tuple[Result, str, str]], keep: set[str],
           why: str) -> list[tuple[Result, str, str]]:  # fmt: skip
    """`todo` less the figures of the tests not in `keep` (their rounds did not fit the
    budget, or did not end), whose reasons now say `why` they were not re-measured. A
    figure the first stage left inconclusive keeps its verdict, and so does a checked wall
    time (a regression stands as the confirmation in a fresh process left it, so an
    unaffordable test's regression still fails the run); a checked kernel-time figure
    becomes inconclusive, as one the rounds cannot decide does: a first-stage kernel-time
    change is not to be trusted alone (docs/evidence/paired-stage-notes.md)."""
    from ..core.figures import KERNEL_FIGURES

    for r, m, _ in (t for t in todo if t[0].nodeid not in keep):
        v = r.verdicts[m]
        said = _stage1_said(v)
        if not said or m not in KERNEL_FIGURES:
            new = amend(v, NOT_MEASURED, STAGE, note=why, reason=(
                f"{v.reason or v.status}; not {'checked' if said else 're-measured'} by the "
                f"paired stage: {why}"))  # fmt: skip
        else:
            new = amend(v, NOT_MEASURED, STAGE, note=why, status=INCONCLUSIVE,
                        stage1=stage1_record(v),
                        reason=f"{said}, not checked by the paired stage: {why}",
                        advice=("where its rounds did not fit, a larger --gpuperf-paired-budget "
                                "lets the stage check it (its line says what its tests would "
                                "need); gpuperf ab measures it in any case"))  # fmt: skip
        r.verdicts = {**r.verdicts, m: new}
    return [t for t in todo if t[0].nodeid in keep]


def _apply(todo: list[tuple[Result, str, str]], measured: Any, false_alarm: float,
           commit: str, again: Any = None, whole: bool = False,
           entries: dict[str, dict[str, Any]] | None = None) -> dict[str, int]:  # fmt: skip
    """Judge the rounds and write the stage-2 verdicts of the figures it decides (the first
    stage's kept in `stage1`); the count of each status. Two looks, each at half the stage's
    share over all the figures it re-measured (Bonferroni): the first on `measured`, the
    second on those the first left inconclusive with the rounds of `again` after theirs;
    `whole`: one look at the whole share, no second could fit (looks.one_look). A
    compute-bound throughput is decided by its time, its per-clock twin vetoing a change the
    cycles decidedly do not share (judge.clocked). A figure whose base build did not
    reproduce the baseline's sessions at `commit` (`entries`: basecheck.py) keeps the first
    stage's verdict, its `paired` record saying why (`base_check`)."""
    from ..core.settings import MAX_PAIRED_ROUNDS as MAX_ROUNDS
    from ..judging.explain import EACH_PAIR
    from ..judging.pairedrounds import settle_advice
    from .basecheck import check, judged
    from .figures import extended, first_look, second_look, written
    from .judge import judge_paired, withheld

    n = len(measured.pair)
    took = getattr(measured, "seconds", None) or {}  # each test's, over all rounds and sides
    tol, figures, verdicts, confidence = first_look(todo, measured,
                                                    false_alarm / (1 if whole else 2))
    measured_figs = {(f.key, f.metric): f for f in figures if f.base}
    if again is not None:  # the second look: the undecided figures with more rounds
        more = extended(second_look(todo, figures, verdicts), again)
        verdicts.update(judge_paired(more, tol, false_alarm / 2, count=len(figures))[0])
        measured_figs.update({(f.key, f.metric): f for f in more})
    unmeasured = {(f.key, f.metric) for f in figures if not f.base}  # missing from a round
    counts: dict[str, int] = {}
    for r, metric, _ in todo:
        v = written(r, metric, verdicts)
        failed = _failed_said(measured, again, nodeid=r.nodeid)
        if v.status == "inconclusive" and failed:  # no rounds to judge, or too few: why
            v = amend(v, None, reason=f"{v.reason}; {failed}")
        first = r.verdicts[metric]
        f = measured_figs.get((r.key, metric))
        n_f = len(f.base) if f is not None else 0 if failed and (r.key, metric) in unmeasured else n
        pairs = len(set(f.pair)) if f is not None else PAIRS  # twice where a second look took it
        record = {"commit": commit, "rounds": n_f, "processes": pairs, "confidence": confidence}
        if f is not None:
            record.update(_round_record(f, measured_figs, verdicts))
        new = after(first, v, stage1=stage1_record(first), paired=record)
        tip = ""
        if v.status == "inconclusive" and f is not None:
            round_s = took[r.nodeid] / n if took.get(r.nodeid) and n else None
            said_so = settle_advice(f, tol[r.key], confidence, round_s,
                                    MORE if again is not None else 0,
                                    MAX_ROUNDS)  # no second look: the asked are all it got
            tip = f"paired stage: {said_so}" if said_so else ""
        said = _stage1_said(first)
        no = (check(r.key, metric, statistics.median(f.base), (entries or {}).get(r.key) or {},
                    commit, f.cls, tol[r.key], checked=bool(said))
              if f is not None and f.base else None)  # fmt: skip
        if no is not None:  # the base is not the baseline: it clears nothing
            new = judged(first, new, no)
        # stage 1's verdict stands where undecided here: a figure it left inconclusive, or a
        # checked one no round measured, its change held back (too few rounds, a pair against
        # it: judge.withheld) or its rounds beyond the tolerance its way (_same_way)
        elif v.status == "inconclusive" and (not said or (r.key, metric) in unmeasured
                                             or withheld(v) == first.status
                                             or _same_way(v, first)):  # fmt: skip
            advice = "; ".join(a for a in (first.advice, tip) if a) if tip else first.advice
            new = amend(first, UNDECIDED, STAGE, note=v.reason, paired=record, advice=advice,
                        reason=f"{first.reason}; paired stage: {v.reason}")  # fmt: skip
        elif said and v.status == "inconclusive" and (kept := _each_pair(f, tol[r.key], first,
                                                                         v.basis)):  # fmt: skip
            text, changes = kept  # per process, but borne out by each pair: stage 1's stands
            new = amend(first, EACH, STAGE, figures={"pairs' changes": ", ".join(
                            f"{100 * c:+.2f}%" for c in changes)},
                        paired={**record, EACH_PAIR: changes},
                        reason=f"{first.reason}; paired stage: {text}")  # fmt: skip
        elif said and v.status in (INCONCLUSIVE, INCONCLUSIVE_POWER):  # not borne out
            new = amend(new, None, advice=tip or None,
                        reason=f"{said}, not borne out by the paired stage: {v.reason}")
        elif said:
            new = amend(new, None, reason=f"{new.reason}; {said}, checked here")
        r.verdicts = {**r.verdicts, metric: new}
        counts[str(new.status)] = counts.get(str(new.status), 0) + 1
    return counts


def _same_way(v: Verdict, first: Verdict) -> bool:
    """Whether undecided rounds of a checked figure put its change beyond the tolerance on
    the side the first stage found: as far as they can tell they bear it out, so its
    verdict stands. Rounds that put it within the tolerance leave it not borne out; where
    the noise is per process (its class's pairs disagree) each pair must (_each_pair)."""
    from .judge import CLASS_PER_PROCESS

    if first.status not in CHANGED or v.worse is None or not math.isfinite(v.worse):
        return False
    if CLASS_PER_PROCESS in (v.basis or ""):
        return False
    return (v.worse if first.status == REGRESSED else -v.worse) > v.tolerance


def _failed_said(*looks: Any, nodeid: str = "") -> str:
    """How test `nodeid` failed in a look's rounds, by build ("its test failed in the base
    build's rounds: failed in call: FileNotFoundError: ..."), or "" where it never did: a
    figure with no rounds to judge says why (a file only the head's checkout holds)."""
    seen: dict[str, str] = {}
    for look in looks:
        for key, why in (getattr(look, "outcomes", None) or {}).items():
            test, _, side = key.rpartition(" (")
            if test == nodeid:
                seen.setdefault(side.rstrip(")"), why)
    return "; ".join(f"its test failed in the {side} build's rounds: {why}"
                     for side, why in sorted(seen.items()))  # fmt: skip


def _each_pair(f: Any, tolerance: float, first: Verdict,
               basis: str = "") -> tuple[str, list[float]] | None:  # fmt: skip
    """Where the per-process screen took a checked figure (one the first stage decided),
    why the first stage's verdict stands, and each process pair's change: every pair on its
    own measured it beyond the tolerance on the same side (judge.each_pair_beyond);
    None otherwise (it then reads inconclusive, not borne out). The same where its class's
    process pairs disagree (`basis` says so: judge.class_process), not its own."""
    from .judge import CLASS_PER_PROCESS, PER_PROCESS, each_pair_beyond, pair_spread, screened

    p = screened(f, tolerance) if f is not None and f.usable() else None
    by_class = f is not None and f.usable() and CLASS_PER_PROCESS in basis
    changes = (each_pair_beyond(f, tolerance, str(first.status))
               if p is not None or by_class else None)  # fmt: skip
    if changes is None:
        return None
    said = ", ".join(f"{100 * c:+.2f}%" for c in changes)
    seen = f"p = {p:.2g}" if p is not None else "its class's pairs disagree"
    text = (f"{PER_PROCESS} (its process pairs' changes span "
            f"{200 * math.expm1(pair_spread(f)):.2f}%, {seen}), but each of "
            f"its {len(changes)} process pairs measured it {first.status} beyond the "
            f"tolerance on its own ({said} over {len(f.base)} rounds): the first stage's "
            "verdict stands")  # fmt: skip
    return text, changes


def _round_record(f: Any, figs: dict[tuple[str, str], Any] | None = None,
                  verdicts: dict[tuple[str, str], Any] | None = None,
                  ) -> dict[str, Any]:  # fmt: skip
    """A figure's rounds as the verdict keeps them: each build's median over the rounds
    (the failure line's "base -> now") and each round's figure of both builds with the
    process pair that measured it, so a reader can see where the noise was; and the sd of
    the paired difference a round, relative (`round_spread`). A compute-bound figure's
    per-clock twin, judged with it (in `figs`, its verdict in `verdicts`), is kept the same
    way under `per_clock`, with its interval's basis (its class's pool or its own rounds):
    the time decides, the cycles can only veto (judge.clocked)."""
    from ..core.figures import per_clock_name

    sd = statistics.stdev(f.diffs()) if len(f.base) >= 2 else None
    out = {"base_median": statistics.median(f.base), "head_median": statistics.median(f.head),
           "base_rounds": list(f.base), "head_rounds": list(f.head),
           "round_pairs": list(f.pair),
           "round_spread": math.expm1(sd) if sd is not None else None}  # fmt: skip
    twin = (f.key, per_clock_name(f.metric))
    if figs is not None and twin in figs and twin != (f.key, f.metric):
        out["per_clock"] = _round_record(figs[twin])
        v = (verdicts or {}).get(twin)
        out["per_clock"]["basis"] = getattr(v, "basis", None)
    return out


def _stage1_said(first: Verdict) -> str:
    """ "the first stage found it regressed (-8.30%) against the baseline's sessions" for a
    checked figure (one the first stage decided), else ""."""
    if first.status not in CHANGED:
        return ""
    change = 100 * float(first.change or 0.0)
    return (f"the first stage found it {first.status} ({change:+.2f}%) against the "
            "baseline's sessions")  # fmt: skip


def after_judgement(
    config: Any, base: Any, results: list[Result], options: Any, durations: dict[str, float],
    env: dict[str, Any], run_max_s: float | None = None, gpu_bytes: int | None = None,
) -> tuple[list[str], bool]:  # fmt: skip
    """The paired stage at the end of a run (run/session.py): its line, and the class
    lines it found to be the environment's; whether Ctrl-C stopped it. `base` is the run's
    RunBaseline (its entries and judgement), `options` its Options, `durations` each test's
    seconds in this run, `run_max_s` its own max_time (ini and command line), `gpu_bytes`
    its GPU's memory (hardware/marks.usable_memory); the budget
    is the run's own test time, at least BUDGET_FLOOR_S, unless --gpuperf-paired-budget
    names it."""
    budget = options.paired_budget or max(BUDGET_FLOOR_S, sum(durations.values()))
    doing: dict[str, Any] = {}
    try:
        stage = run_stage(
            config, results, base.entries, rounds=options.paired_rounds,
            false_alarm=options.false_alarm * STAGE_SHARE, budget_s=budget, env=env,
            costs=durations, doing=doing, run_max_s=run_max_s, gpu_bytes=gpu_bytes,
            setup=options.paired_setup,
        )  # fmt: skip
    except KeyboardInterrupt:  # a job's time limit: say what the rounds were doing
        said = (f" after {time.monotonic() - doing['t0']:.0f} s, {doing['what']}"
                if doing else "")  # fmt: skip
        return [f"gpuperf: paired stage interrupted (Ctrl-C){said}"], True
    if stage is None:
        return [], False
    notes = [f"gpuperf: {stage.line}"]
    if base.judgement is not None:
        shifts = environment_shifts(base.judgement.shifts, results, base.entries, env)
        notes += [f"gpuperf: {line}" for line in shifts]
    return notes, False

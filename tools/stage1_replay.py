"""What each stage-1 refinement is worth on the real judged runs (issue 60, point 1): the
shipped suite's GPU runs 5-9 (tools/strict_evidence.py's parts and baselines, all A/A: the
code was not changed, so any REGRESSED or IMPROVED is a false alarm) and the own file's runs
(tests/gpu/test_verdicts.py, A/A and 5%/10% slower, against its stored H200 baseline),
each re-judged by stage 1's first look (judge_run, as `gpuperf compare` judges a results
file; no confirmation, no paired stage) with one refinement switched off
(tools/gatesim/ablate.py).

    python tools/stage1_replay.py [--variants shipped,no-offsets,...] [--own]

Per run and variant: speed figures judged (FIGURES, not rows: each result's throughput or
latency and its GPU kernel-time figure), decided (unchanged, regressed, improved), the
REGRESSED and IMPROVED calls, and what the paired stage would be left
(paired.stage.candidates): figures, tests, and their first-stage seconds (measure + warm-up,
as tools/gatesim/fit_rounds.py prices a test), with 6 rounds of them priced as
tools/gatesim/drive.py prices a round (drive.round_price, both builds, each process
pair's start and stop). --own: each own-file figure's verdict per variant."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gatesim import ablate, drive
from strict_evidence import RUNS, E

from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.core.figures import KERNEL_FIGURES, TIMED
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.outputs.runfile import read_run
from pytest_gpuperf.paired.looks import PAIRS
from pytest_gpuperf.paired.plan import STOP_S
from pytest_gpuperf.paired.stage import candidates

SPEED = frozenset(TIMED) | KERNEL_FIGURES
DECIDED = ("unchanged", "regressed", "improved")
ROUNDS = 6  # --gpuperf-paired-rounds' default
OWN_BASE = (
    E / "h200-2026-12-02-e" / "own-file-baseline-h200.json"
)  # = the tgz's baselines/h200.json
OWN_RUNS = {  # (folder, the slowdown the code had)
    "h200-2026-12-03-g/a/p/slow10-1.json": 0.10, "h200-2026-12-03-g/a/p/slow10-2.json": 0.10,
    "h200-2026-12-05/a/p/slow10-3.json": 0.10, "h200-2026-12-05/a/p/slow5-1.json": 0.05,
    "h200-2026-12-05/a/p/slow5-2.json": 0.05, "h200-2026-12-05/b/p/slow5-1.json": 0.05,
    "h200-2026-12-05/b/p/slow5-2.json": 0.05, "h200-2026-12-05/b/p/slow5-3.json": 0.05,
    "h200-2026-12-05/c/p/aa-1.json": 0.0, "h200-2026-12-05/c/p/aa-2.json": 0.0,
}  # fmt: skip
NEVER_SLOWED = ("test_v_sweep[8]",)  # tests/gpu/test_verdicts.py: the sweep's launch-bound point


def judged(path: Path, entries: dict, variant: str) -> tuple[list, object, dict]:
    """The results file's results judged by stage 1 under `variant`: (results, judgement, env)."""
    data, summary = read_run(path)
    env = environment(data["device"], None)
    with ablate.variant(variant):
        j = judge_run(summary.results, entries, env)
    return summary.results, j, env


def tally(results: list, judgement, entries: dict, env: dict) -> Counter:  # type: ignore[no-untyped-def]
    """One results file's counts (see the module's docstring)."""
    c: Counter = Counter()
    for r in results:
        for name, v in r.verdicts.items():
            if name not in SPEED or v.status in ("new", "incomparable", "info", "missing"):
                continue
            c["speed"] += 1
            c["decided"] += v.status in DECIDED
            c["regressed"] += v.status == "regressed"
            c["improved"] += v.status == "improved"
    c["regressed"] += sum(s.verdict.status == "regressed" for s in judgement.shifts)
    c["lines_regressed"] += sum(s.verdict.status == "regressed" for s in judgement.shifts)
    left = candidates(results, entries, env)
    c["left_figures"] += len(left)
    tests = {r.nodeid for r, _, _ in left}
    c["left_tests"] += len(tests)
    secs: dict[str, float] = {}
    for r in results:
        if r.nodeid in tests:
            secs[r.nodeid] = secs.get(r.nodeid, 0.0) + (r.measure_s or 0.0) + (r.warmup_s or 0.0)
    c["left_s"] += sum(secs.values())
    per_round = sum(2 * drive.round_price(s) for s in secs.values())
    if secs:
        c["paired_s"] += ROUNDS * per_round + PAIRS * (drive.START_S + STOP_S)
    return c


def runs_table(variants: list[str]) -> list[str]:
    lines = ["| run | variant | speed figures decided | REGRESSED | IMPROVED | left to the "
             "paired stage: figures (tests) | their first-stage s | 6 rounds priced, s |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    total: dict[str, Counter] = {v: Counter() for v in variants}
    for run, (baseline, folder, parts) in RUNS.items():
        base = load(baseline)
        entries = base.entries if base is not None else {}
        for v in variants:
            c: Counter = Counter()
            for part in parts:
                results, j, env = judged(E / folder / part, entries, v)
                c.update(tally(results, j, entries, env))
            total[v].update(c)
            lines.append(_row(run, v, c))
    lines += [_row("runs 5-9", v, total[v]) for v in variants]
    return lines


def _row(run: str, v: str, c: Counter) -> str:
    return (f"| {run} | {v} | {c['decided']}/{c['speed']} ({c['decided'] / max(c['speed'], 1):.1%})"
            f" | {c['regressed']}{' (lines ' + str(c['lines_regressed']) + ')' if c['lines_regressed'] else ''}"
            f" | {c['improved']} | {c['left_figures']} ({c['left_tests']}) | {c['left_s']:.0f} | "
            f"{c['paired_s']:.0f} |")  # fmt: skip


def own_table(variants: list[str]) -> list[str]:
    """Each own-file run's speed figures per variant: slowed ones caught (regressed), read
    unchanged (a wrong pass) or left undecided; then every figure whose stage-1 verdict
    differs between the variants."""
    base = load(OWN_BASE)
    entries = base.entries if base is not None else {}
    lines = [
        "| run | slowed | variant | slowed figures: regressed / unchanged / undecided | "
        "others: regressed / improved / unchanged / undecided |",
        "|---|---|---|---|---|",
    ]
    differ = []
    for rel, slow in OWN_RUNS.items():
        per: dict[str, dict[str, str]] = {}
        for v in variants:
            results, _, _ = judged(E / rel, entries, v)
            for r in results:
                for name, verdict in r.verdicts.items():
                    if name in SPEED and verdict.status not in ("new", "incomparable", "info"):
                        per.setdefault(f"{r.nodeid.split('::')[-1]} {name}", {})[v] = verdict.status
        for v in variants:
            hit: Counter = Counter()
            for fig, got in per.items():
                slowed = slow > 0 and not fig.startswith(NEVER_SLOWED)
                hit[(slowed, got.get(v, "-"))] += 1
            und = {s: sum(n for (sl, st), n in hit.items() if sl == s and st not in DECIDED)
                   for s in (True, False)}  # fmt: skip
            lines.append(
                f"| {rel} | {slow:.0%} | {v} | {hit[(True, 'regressed')]} / "
                f"{hit[(True, 'unchanged')]} / {und[True]} | {hit[(False, 'regressed')]} / "
                f"{hit[(False, 'improved')]} / {hit[(False, 'unchanged')]} / {und[False]} |")  # fmt: skip
        differ += [f"{rel} {fig}: " + ", ".join(f"{v} {got.get(v)}" for v in variants)
                   for fig, got in per.items() if len(set(got.values())) > 1]  # fmt: skip
    lines.append("")
    lines.append(f"figures whose stage-1 verdict differs between the variants: {len(differ)}")
    return lines + [f"- {d}" for d in differ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=",".join(ablate.VARIANTS))
    ap.add_argument("--own", action="store_true", help="the own file's runs, figure by figure")
    args = ap.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in ablate.VARIANTS:
            ap.error(f"--variants: unknown {v!r}; one of {', '.join(ablate.VARIANTS)}")
    print("\n".join(own_table(variants) if args.own else runs_table(variants)))


if __name__ == "__main__":
    main()

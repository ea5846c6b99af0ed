"""What each stage-1 refinement is worth in the project's simulator (issue 60, point 1): the
simulated runs of tools/gate_sim_project.py (same draws, same seeds, the project's own
judge_run, confirmation and paired stage) judged with one refinement switched off
(tools/gatesim/ablate.py), beside the shipped rule. The baseline sessions, the run and its
confirmation are drawn before any judging, so every variant judges the SAME draws (paired);
the paired stage's own rounds are drawn as it asks for them (not paired across variants).

    nice -n 19 python tools/stage1_worth.py --runs 200 --variants shipped,no-offsets
    ... --variants shipped+alone      # "+alone": no paired stage (stage 1 + confirmation)
    ... --ks 3 --runs 2000 --first 2000 --out more.jsonl   # more runs of a cell
    python tools/stage1_worth.py --table a.jsonl more.jsonl   # the table, parts added up

Per variant and k: run-wide A/A false alarms (95% interval), the worst figure's rate, a 5%
slowdown caught and read unchanged (a wrong pass), a whole class caught, the share of speed
figures stage 1 decided (after the confirmation, before the paired stage), and the paired
stage's seconds per run: the wall time of the rounds it measured, priced as drive.SimLooks
prices them (each test's real first-stage seconds a round, process starts and stops), with
the tests it re-measured per run. One JSON line a cell to --out."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_sim_project as gsp
from gatesim import ablate, drive, model

from pytest_gpuperf.core import results as results_mod
from pytest_gpuperf.paired.looks import PAIRS
from pytest_gpuperf.paired.plan import STOP_S
from pytest_gpuperf.paired.stage import STAGE_SHARE


class CountingLooks(drive.SimLooks):
    """drive.SimLooks that adds up what the stage measured: wall seconds and tests."""

    spent: float = 0.0
    tests: int = 0
    need: float = 0.0  # the first look's seconds (its asked rounds, uncut by the budget)

    def measure(self, tests, rounds, pair0, left):  # type: ignore[no-untyped-def]
        got = super().measure(tests, rounds, pair0, left)
        self.spent += got.wall_s
        if pair0 == 0:
            self.tests += len(tests)
            self.need += PAIRS * (drive.START_S + STOP_S) + rounds * sum(
                2 * self.cost(t) for t in tests
            )
        return got


def stage1(noise, base, cur, again, *, tol, fa, name):  # type: ignore[no-untyped-def]
    """Stage 1 of one run and its confirmation (drive.first_stage) under variant `name`
    ("+alone": the whole budget, no paired stage after it): (results, judgement, entries)."""
    vname, alone = name.removesuffix("+alone"), name.endswith("+alone")
    with ablate.variant(vname):
        return drive.first_stage(noise, base, cur, again, tol=tol,
                                 false_alarm=fa * (1.0 if alone else 1 - STAGE_SHARE))  # fmt: skip


def paired_stage(noise, results, ent, level, change, rng, *, tol, fa, rounds):  # type: ignore[no-untyped-def]
    """The paired stage after stage 1 (drive.paired_stage): (seconds, tests, first look's
    seconds)."""
    _, sim = drive.paired_stage(noise, results, ent, level, change, rng, tol=tol,
                                false_alarm=fa * STAGE_SHARE, rounds=rounds,
                                looks=CountingLooks)  # fmt: skip
    return sim.spent, sim.tests, sim.need


def judge_all(noise, draw, rng, names, *, tol, fa, rounds) -> dict:  # type: ignore[no-untyped-def]
    """One run judged under each variant in `names`: per variant (stage-1 codes, stage-1
    shifts, stage-1 regressed, final codes, final regressed, paired seconds, paired tests).
    A variant whose stage-1 verdicts are all equal to an earlier variant's (same statuses,
    reasons, intervals) takes that variant's paired stage outcome: the stage sees the same
    input, and the shared outcome pairs them more tightly than a second draw of rounds."""
    base, cur, again, level, change = draw
    out: dict[str, tuple] = {}
    seen: list[tuple[tuple, tuple]] = []
    for name in names:
        results, first, ent = stage1(noise, base, cur, again, tol=tol, fa=fa, name=name)
        s1 = drive.codes_of(noise, results)
        shifts = {s.cls: drive.CODES.get(str(s.verdict.status), 3) for s in first.shifts}
        s1_reg = drive.regressed_of(results)
        if name.endswith("+alone"):
            out[name] = (s1, shifts, s1_reg, s1, s1_reg, 0.0, 0, 0.0)
            continue
        sig = tuple((r.key, tuple(sorted(r.verdicts.items()))) for r in results)
        done = next((o for s, o in seen if s == sig), None)
        if done is None:
            secs, tests, need = paired_stage(noise, results, ent, level, change, rng, tol=tol,
                                             fa=fa, rounds=rounds)  # fmt: skip
            done = (drive.codes_of(noise, results), drive.regressed_of(results), secs, tests, need)
            seen.append((sig, done))
        out[name] = (s1, shifts, s1_reg, *done)
    return out


def chunk(job: tuple) -> dict:
    """One worker's share of a cell: `n` runs of `kind` ('aa', 'det', 'class'), each
    judged under every variant."""
    names, kind, k, n, seed, tol, fa, rounds, slow = job
    t0 = time.process_time()
    # the rounds' dicts are the simulator's own (drive.SimLooks): reading them back
    # unchecked changes no verdict (the check only raises) and halves the stage's time
    mock.patch.object(results_mod, "_check_fields", lambda *_a: None).start()
    noise = model.load()
    rng = np.random.default_rng(seed)
    change, which = gsp._slowdown(kind, rng, n, noise, slow)
    base, cur, again = model.sessions(rng, n, k, noise, change)
    speed = np.concatenate(list(gsp.groups(noise).values()))
    cs: dict[str, Counter] = {v: Counter(runs=n) for v in names}
    figs: dict[str, Counter] = {v: Counter() for v in names}
    for i in range(n):
        draw = (base[i], cur[i], again[i], cur[i] - change[i], change[i])
        got = judge_all(noise, draw, rng, names, tol=tol, fa=fa, rounds=rounds)
        slowed = change[i] != 0
        ref = got[names[0]]  # the first variant's (shipped's) codes: how often each differs
        for name, (s1, shifts, s1_reg, final, reg, secs, tests, need) in got.items():
            c = cs[name]
            c["s1_diff_figs"] += int((s1 != ref[0]).sum())
            c["s1_diff_runs"] += bool((s1 != ref[0]).any())
            c["diff_runs"] += bool((final != ref[3]).any())
            c["diff_n"] += 1
            line_fa = any(v == 1 for v in shifts.values())
            c["run_fa"] += bool(reg) or line_fa
            c["s1_run_fa"] += bool(s1_reg) or line_fa
            c["line_fa"] += line_fa
            figs[name].update(reg)
            c["s1_improved"] += int((s1[speed] == 2).sum())
            c["improved"] += int((final[speed] == 2).sum())
            c["s1_decided"] += int((s1[speed] <= 2).sum())
            c["decided"] += int((final[speed] <= 2).sum())
            c["speed"] += len(speed)
            c["paired_s"] += secs
            c["paired_tests"] += tests
            c["paired_need"] += need
            c["paired_runs"] += tests > 0
            c["tries"] += int(slowed.sum())
            c["caught"] += int(((final == 1) & slowed).sum())
            c["passed"] += int(((final == 0) & slowed).sum())
            c["s1_caught"] += int(((s1 == 1) & slowed).sum())
            c["s1_passed"] += int(((s1 == 0) & slowed).sum())
            if which[i] is not None:
                hit = (final[slowed] == 1) | (shifts.get(which[i]) == 1)
                c["class_caught"] += int(hit.sum())
                c["class_tries"] += len(hit)
                c["class_all"] += bool(hit.all())
    cpu = time.process_time() - t0
    return {v: {"c": {**cs[v], "cpu_s": cpu}, "figs": figs[v]} for v in names}


def cell(args: argparse.Namespace, k: int, kind: str, runs: int, pool) -> dict:  # type: ignore[no-untyped-def]
    """A cell's tallies per variant; seeds as gate_sim_project.cell makes them (the same
    draws as its cells). cpu_s: the whole chunk's, shared by every variant."""
    first = args.first if kind == "aa" else args.first // 4
    jobs = [(args.variants, kind, k, min(gsp.CHUNK, first + runs - i),
             args.seed + 7919 * k + 104729 * len(kind) + i, args.tol, args.false_alarm,
             args.pair_rounds, args.slow)
            for i in range(first, first + runs, gsp.CHUNK)]  # fmt: skip
    parts = pool.imap(chunk, jobs) if pool is not None else map(chunk, jobs)
    out: dict[str, dict] = {v: {"c": Counter(), "figs": Counter()} for v in args.variants}
    for p in parts:
        for v, got in p.items():
            out[v]["c"].update(got["c"])
            out[v]["figs"].update(got["figs"])
    return {v: {"c": dict(x["c"]), "figs": dict(x["figs"])} for v, x in out.items()}


def summary(name: str, k: int, aa: dict, det: dict, cls: dict) -> dict:
    """The figures a table row reports, from a cell's tallies."""
    a, d, s = aa["c"], det["c"], cls["c"]
    n = a["runs"]
    worst_name, worst = max(aa["figs"].items(), key=lambda x: x[1], default=("none", 0))
    lo, hi = gsp.cp(a.get("run_fa", 0), n)
    return {
        "variant": name, "k": k, "aa_runs": n, "aa_fa": a.get("run_fa", 0),
        "aa_rate": a.get("run_fa", 0) / n, "aa_lo": lo, "aa_hi": hi,
        "s1_aa_fa": a.get("s1_run_fa", 0), "line_fa": a.get("line_fa", 0),
        "worst": worst_name, "worst_n": worst, "worst_hi": gsp.cp(worst, n)[1],
        "aa_improved_s1": a.get("s1_improved", 0), "aa_improved": a.get("improved", 0),
        "s1_decided": a.get("s1_decided", 0) / max(a.get("speed", 1), 1),
        "decided": a.get("decided", 0) / max(a.get("speed", 1), 1),
        "aa_paired_s": a.get("paired_s", 0.0) / n, "aa_paired_tests": a.get("paired_tests", 0) / n,
        "aa_paired_need": a.get("paired_need", 0.0) / n,
        "det_runs": d["runs"], "det_tries": d.get("tries", 0), "caught": d.get("caught", 0),
        "passed": d.get("passed", 0), "s1_caught": d.get("s1_caught", 0),
        "s1_passed": d.get("s1_passed", 0), "det_paired_s": d.get("paired_s", 0.0) / d["runs"],
        "class_runs": s["runs"], "class_tries": s.get("class_tries", 0),
        "class_caught": s.get("class_caught", 0), "class_all": s.get("class_all", 0),
        "class_passed": s.get("passed", 0), "s1_class_passed": s.get("s1_passed", 0),
        "s1_diff_runs": [a.get("s1_diff_runs"), d.get("s1_diff_runs"), s.get("s1_diff_runs")],
        "diff_runs": [a.get("diff_runs"), d.get("diff_runs"), s.get("diff_runs")],
        "diff_n": [a.get("diff_n"), d.get("diff_n"), s.get("diff_n")],
        "s1_diff_figs": [a.get("s1_diff_figs"), d.get("s1_diff_figs"), s.get("s1_diff_figs")],
        "cpu_s_per_run": (a["cpu_s"] + d["cpu_s"] + s["cpu_s"]) / (n + d["runs"] + s["runs"]),
    }  # fmt: skip


def row(x: dict) -> str:
    pct = lambda a, b: f"{a / max(b, 1):.1%}"  # noqa: E731
    return (f"| {x['variant']} | {x['k']} | {x['aa_fa']}/{x['aa_runs']} = {x['aa_rate']:.2%} "
            f"[{x['aa_lo']:.2%}, {x['aa_hi']:.2%}] | {x['worst_n']} (<= {x['worst_hi']:.2%}) | "
            f"{x['caught']}/{x['det_tries']} = {pct(x['caught'], x['det_tries'])} | "
            f"{x['passed']} | {pct(x['s1_caught'], x['det_tries'])}, {x['s1_passed']} | "
            f"{pct(x['class_caught'], x['class_tries'])} "
            f"({x['class_all']}/{x['class_runs']} runs), unchanged {x['class_passed']} "
            f"(stage 1 {x['s1_class_passed']}) | {x['s1_decided']:.1%} | "
            f"{x['aa_paired_s']:.0f} s ({x['aa_paired_tests']:.1f} tests, "
            f"{x.get('aa_paired_need', 0):.0f} s first look) | "
            f"{x['det_paired_s']:.0f} s |")  # fmt: skip


HEADER = (
    "| variant | k | A/A run-wide FA [95%] | worst figure (95% up) | 5% caught | 5% read "
    "unchanged | stage 1: 5% caught, unchanged | whole class caught (all runs), read unchanged | stage-1 decided (A/A) | paired s/run A/A "
    "(tests, first look) | paired s/run 5% |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default=",".join(ablate.VARIANTS),
                    help="comma-separated; a '+alone' suffix: no paired stage")  # fmt: skip
    ap.add_argument("--runs", type=int, default=200, help="A/A runs a cell")
    ap.add_argument("--det-runs", type=int, default=None, help="default --runs / 4")
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--tol", type=float, default=0.03)
    ap.add_argument("--false-alarm", type=float, default=0.01)
    ap.add_argument("--pair-rounds", type=int, default=6)
    ap.add_argument("--slow", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument(
        "--first",
        type=int,
        default=0,
        help="the cell's first run (a multiple of 100): more runs of a cell already "
        "run, to add to its tallies (the slowdowns start at --first / 4)",
    )
    ap.add_argument("--out", type=Path, default=None, help="append one JSON line a cell")
    args = ap.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in args.variants:
        if v.removesuffix("+alone") not in ablate.VARIANTS:
            ap.error(f"--variants: unknown {v!r}; one of {', '.join(ablate.VARIANTS)} (+alone)")
    try:
        args.ks = [int(x) for x in str(args.ks).split(",")]
    except ValueError:
        ap.error(f"--ks {args.ks!r}: give baseline session counts, e.g. 3,5,10")
    if args.first < 0 or args.first % (4 * gsp.CHUNK):
        ap.error(f"--first {args.first}: a multiple of {4 * gsp.CHUNK} (the chunks' seeds)")
    if args.runs < 1 or args.jobs < 1 or min(args.ks) < 2:
        ap.error("--runs and --jobs at least 1, --ks at least 2")
    args.det_runs = max(1, args.runs // 4) if args.det_runs is None else args.det_runs
    return args


def _logged(args: argparse.Namespace, k: int, kind: str, runs: int, pool) -> dict:  # type: ignore[no-untyped-def]
    """cell(), its raw tallies appended to --out as soon as it is done (a run cut short
    keeps what it finished)."""
    got = cell(args, k, kind, runs, pool)
    if args.out is not None:
        with args.out.open("a", encoding="utf-8") as f:
            f.write(
                json.dumps({"raw": kind, "k": k, "runs": runs, "seed": args.seed, "tallies": got})
                + "\n"
            )
    return got


def table(paths: list[Path]) -> list[dict]:
    """The rows of the raw tallies in `paths` (--out files), each cell's parts added up
    (a cell run in parts with --first); printed as main prints them."""
    sums: dict[tuple[int, str, str], dict] = {}
    for path in paths:
        for text in path.read_text(encoding="utf-8").splitlines():
            d = json.loads(text)
            if "raw" not in d:
                continue
            for v, got in d["tallies"].items():
                x = sums.setdefault((d["k"], d["raw"], v), {"c": Counter(), "figs": Counter()})
                x["c"].update(got["c"])
                x["figs"].update(got["figs"])
    rows = []
    print(HEADER)
    order = list(dict.fromkeys(v for _, _, v in sums))  # as the files list them
    for k, kind, v in sorted(sums, key=lambda x: (x[0], order.index(x[2]))):
        parts = [sums.get((k, kd, v)) for kd in ("aa", "det", "class")]
        if kind == "aa" and all(parts):
            rows.append(summary(v, k, *parts))  # type: ignore[arg-type]
            print(row(rows[-1]))
    print("\n| variant | k | runs whose stage-1 verdicts differ from the first variant's: "
          "A/A, 5%, whole class (speed figures differing) | whose final verdicts differ |"
          "\n|---|---|---|---|")  # fmt: skip
    for x in rows:
        n = x["diff_n"]  # the runs that counted it (since the k=5 cells)
        if None in n:
            continue
        s1 = ", ".join(f"{d}/{m}" for d, m in zip(x["s1_diff_runs"], n, strict=True))
        fin = ", ".join(f"{d}/{m}" for d, m in zip(x["diff_runs"], n, strict=True))
        print(f"| {x['variant']} | {x['k']} | {s1} ({', '.join(map(str, x['s1_diff_figs']))})"
              f" | {fin} |")  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    if argv is None and sys.argv[1:2] == ["--table"]:
        return table([Path(x) for x in sys.argv[2:]])
    args = parse(argv)
    drive.scratch_commit()  # made once, before the workers fork
    pool = Pool(args.jobs) if args.jobs > 1 else None
    rows = []
    print(HEADER, flush=True)
    try:
        for k in args.ks:
            aa, det, cls = (
                _logged(args, k, kind, runs, pool)
                for kind, runs in (
                    ("aa", args.runs),
                    ("det", args.det_runs),
                    ("class", args.det_runs),
                )
            )
            for name in args.variants:
                x = summary(name, k, aa[name], det[name], cls[name])
                rows.append(x)
                print(row(x), flush=True)
                if args.out is not None:
                    with args.out.open("a", encoding="utf-8") as f:
                        f.write(json.dumps({**x, "seed": args.seed}) + "\n")
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return rows


if __name__ == "__main__":
    main()

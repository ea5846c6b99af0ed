"""The project's verdict rule (pytest_gpuperf.judging.judge.judge_run, the shipped code) run
through ../shared/gate-sim's harness: each simulated run becomes baseline entries and
Results, judged as pytest would judge them, with the fresh-process confirmation when asked.

    python tools/gate_sim_project.py --sim-dir ../shared/gate-sim --runs 1000 [--confirm]
                                     [--ks 3,5,10] [--tol 0.05]
    python tools/gate_sim_project.py --sim-dir ../shared/gate-sim --aa-only --runs 4000 --jobs 16

Prints gate-sim's columns for the rule (run-wide false alarms, the worst metric's, detection
of 5% and 7.5% slowdowns, inconclusive shares). About 10 minutes per 1,000 runs and k on a
2-core machine. docs/performance.md has the figures.
"""

from __future__ import annotations

import argparse
import math
import sys
import types

import numpy as np

from pytest_gpuperf.core.results import Result, Throughput
from pytest_gpuperf.judging.confirmation import confirm, flagged_tests
from pytest_gpuperf.judging.judge import judge_run

CODES = {"unchanged": 0, "regressed": 1, "improved": 2}  # anything else: 3 (inconclusive)


def _entries(base_i, names):
    out = {}
    for j, name in enumerate(names):
        hist = [{"median": math.exp(x), "date": f"s{s}"} for s, x in enumerate(base_i[j])]
        out[f"m{j}"] = {"environment": {}, "metrics": {"throughput": {
            "unit": "tokens/s", "direction": "higher", "median": hist[-1]["median"],
            "noise_class": name, "history": hist}}}  # fmt: skip
    return out


def _results(cur_i, scur, names, tol, only=None):
    out = []
    for j, name in enumerate(names):
        if only is not None and f"m{j}" not in only:
            continue
        y = math.exp(cur_i[j])
        h = y * scur[j] * 1.959963984540054
        r = Result(f"m{j}", None, "tokens", 1.0, noise_class=name)
        r.time = types.SimpleNamespace(n=10)  # type: ignore[assignment]
        r.throughput = Throughput("tokens/s", y, y - h, y + h)
        r.config = {"tolerance": tol, "memory_tolerance": tol}
        out.append(r)
    return out


def rule(base, cur, scur, tol, names):
    """Verdict codes (runs x metrics) and class-shift codes, as gate-sim's rules return."""
    twice = isinstance(cur, tuple)
    first = cur[0] if twice else cur
    n, m, _ = base.shape
    codes = np.full((n, m), 3, dtype=np.int8)
    shifts = []
    for i in range(n):
        entries = _entries(base[i], names)
        results = _results(first[i], scur, names, tol)
        j = judge_run(results, entries, {})
        flagged = flagged_tests(results, j)
        if twice and flagged:  # the fresh process: the flagged tests only, this run's offsets
            again = _results(cur[1][i], scur, names, tol, only=set(flagged))
            confirm(
                results, j, again, judge_run(again, entries, {}, offsets=j.metric_offsets), None
            )
        for r in results:
            codes[i, int(r.nodeid[1:])] = CODES.get(r.verdicts["throughput"]["status"], 3)
        shifts.append([CODES.get(s.verdict.status, 3) for s in j.shifts])
    width = max((len(s) for s in shifts), default=0)
    sh = np.zeros((n, width), dtype=np.int8)
    for i, s in enumerate(shifts):
        sh[i, : len(s)] = s
    return codes, sh


def _aa_chunk(job: tuple) -> tuple:
    """One worker's share of A/A runs: per-metric 'regressed' counts, runs with any false
    alarm (a metric's or a class-shift verdict's), inconclusive counts."""
    sim_dir, k, n, tol, seed, confirm_ = job
    sys.path.insert(0, sim_dir)
    import sim

    _, cls, sigma, scur, tau = sim.load_model()
    names = [sim.CLASSES[c] for c in cls]
    rng = np.random.default_rng(seed)
    m = len(sigma)
    base, cur = sim.simulate(rng, n, k, cls, sigma, tau, np.zeros(m, bool), 0.0, "normal",
                             confirm_)  # fmt: skip
    v, sh = rule(base, cur, scur, tol, names)
    run_fa = int(((v == 1).any(axis=1) | (sh == 1).any(axis=1)).sum())
    tp = np.isin(cls, [0, 1, 2, 3])
    return (v == 1).sum(axis=0), run_fa, int((v == 3).sum()), int((v[:, tp] == 3).sum()), tp.sum()


def aa_only(args: argparse.Namespace) -> None:
    """A/A runs only (no slowdown), in parallel: the false-alarm columns with enough runs
    to see a single metric's rate near 0.1%."""
    import multiprocessing

    chunk = 50
    for k in (int(x) for x in args.ks.split(",")):
        jobs = [(args.sim_dir, k, min(chunk, args.runs - i), args.tol, args.seed + 7919 * k + i,
                 args.confirm) for i in range(0, args.runs, chunk)]  # fmt: skip
        with multiprocessing.Pool(args.jobs) as pool:
            parts = pool.map(_aa_chunk, jobs)
        per_metric = sum(p[0] for p in parts)
        run_fa = sum(p[1] for p in parts)
        inc, inc_tp, n_tp = sum(p[2] for p in parts), sum(p[3] for p in parts), parts[0][4]
        n, m = args.runs, len(per_metric)
        worst = int(per_metric.max())
        print(f"k={k} A/A runs={n} confirm={args.confirm}: run-wide false alarms {run_fa} "
              f"({run_fa / n:.3%}); worst metric {worst} ({worst / n:.3%}, metric m{int(per_metric.argmax())}); "
              f"metrics with any: {int((per_metric > 0).sum())} of {m}; all metrics' false "
              f"alarms {int(per_metric.sum())} of {n * m}; inconclusive {inc / (n * m):.1%} "
              f"(throughput {inc_tp / (n * n_tp):.1%})", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--tol", type=float, default=0.05)
    ap.add_argument("--confirm", action="store_true")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument(
        "--aa-only",
        action="store_true",
        help="A/A runs only, in parallel (--jobs): false alarms per metric",
    )
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if args.aa_only:
        aa_only(args)
        return
    sys.path.insert(0, args.sim_dir)
    import sim  # gate-sim's harness and fitted noise model

    ms, cls, sigma, scur, tau = sim.load_model()
    names = [sim.CLASSES[c] for c in cls]
    opts = argparse.Namespace(runs=args.runs, tol=args.tol, tails="normal", tau_scale=1.0,
                              confirm=args.confirm)  # fmt: skip
    # the rule confirms its own way (the flagged tests re-measured, judged with this run's
    # offsets): gate-sim's apply() must hand it both sessions rather than judge each alone
    sim.apply = lambda judged, base, cur: judged(base, cur)
    print("k  run-FA  max-metric-FA  det5%  det7.5%  det7.5%(tput)  inconcl(all)  inconcl(tput)")
    for k in (int(x) for x in args.ks.split(",")):

        def judged(b, c):
            return rule(b, c, scur, args.tol, names)

        rng = np.random.default_rng(args.seed + k)
        r = sim.evaluate(judged, opts, ms, cls, sigma, scur, tau, k, rng)
        print(f"{k:<2} {r['run_fa'] * 100:6.2f}% {r['metric_fa_max'] * 100:9.3f}%     "
              f"{r['det0.05'] * 100:5.1f}  {r['det0.075'] * 100:6.1f}   {r['det0.075_tp'] * 100:9.1f}"
              f"      {r['inconclusive'] * 100:6.1f}%       {r['inconclusive_tp'] * 100:6.1f}%",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

"""The project's verdict rule (pytest_gpuperf.baseline.judge.judge_run, the shipped code) run
through ../shared/gate-sim's harness: each simulated run becomes baseline entries and
Results, judged as pytest would judge them, with the fresh-process confirmation when asked.

    python tools/gate_sim_project.py --sim-dir ../shared/gate-sim --runs 1000 [--confirm]
                                     [--ks 3,5,10] [--tol 0.05]

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

from pytest_gpuperf.baseline.confirmation import confirm, flagged_tests
from pytest_gpuperf.baseline.judge import judge_run
from pytest_gpuperf.results import Result, Throughput

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
            confirm(results, j, again, judge_run(again, entries, {}, offsets=j.offsets), None)
        for r in results:
            codes[i, int(r.nodeid[1:])] = CODES.get(r.verdicts["throughput"]["status"], 3)
        shifts.append([CODES.get(s.verdict.status, 3) for s in j.shifts])
    width = max((len(s) for s in shifts), default=0)
    sh = np.zeros((n, width), dtype=np.int8)
    for i, s in enumerate(shifts):
        sh[i, : len(s)] = s
    return codes, sh


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--tol", type=float, default=0.05)
    ap.add_argument("--confirm", action="store_true")
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args()
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

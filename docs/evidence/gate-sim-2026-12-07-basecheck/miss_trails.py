"""Slowed figures a 5% slowdown left uncaught in the project's simulator (issue 60), with
their trails, and a tally by class and verdict code (1 regressed, 3 inconclusive) and by the
last rule of each miss. The same draws as tools/gate_sim_project.py's slowdown cell.

    python miss_trails.py RUNS SESSIONS [JOBS]
"""

import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import gate_sim_project as g
from gatesim import drive, model

SEED = 20261207


def chunk(args):
    i, n, k = args
    noise = model.load()
    rng = np.random.default_rng(SEED + 7919 * k + 104729 * len("det") + i)
    change, _ = g._slowdown("det", rng, n, noise, 0.05)
    base, cur, again = model.sessions(rng, n, k, noise, change)
    out, tally = [], Counter()
    for r in range(n):
        keep = []
        codes, *_ = drive.judge_one(
            noise, base[r], cur[r], again[r], cur[r] - change[r], change[r], rng,
            tol=0.03, false_alarm=0.01, rounds=6, paired=True, keep=keep)
        for j in np.where(change[r] != 0)[0]:
            kind = "kern" if noise.kern[j] else model.CLASSES[noise.cls[j]]
            tally[(kind, int(codes[j]))] += 1
            if codes[j] == 1:
                continue
            res = next(x for x in keep if x.nodeid == f"m{j}")
            name = drive.KERNELS if noise.kern[j] else "throughput"
            v = res.verdicts[name]
            rules = [s.rule for s in v.trail]
            tally[("last", kind, rules[-1][:50] if rules else "-")] += 1
            rec = [f"run {i + r} m{j}:{name} {kind} {v.status} chg {100 * (v.change or 0):+.2f} "
                   f"unc {100 * (v.uncertainty or 0):.2f} secs {noise.test_seconds[j]:.1f}"]
            out.append("\n".join(rec + ["      " + s.text()[:260] for s in v.trail]))
    return out, tally


if __name__ == "__main__":
    n, k = int(sys.argv[1]), int(sys.argv[2])
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    drive.scratch_commit()
    total = Counter()
    with Pool(jobs) as p:
        for out, tally in p.imap(chunk, [(i, min(25, n - i), k) for i in range(0, n, 25)]):
            total.update(tally)
            for o in out:
                print(o, flush=True)
    for key, c in sorted(total.items(), key=str):
        print("TALLY", key, c)

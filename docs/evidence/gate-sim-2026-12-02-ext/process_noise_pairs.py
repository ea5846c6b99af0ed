"""(python process_noise_pairs.py W P RUNS) A/A: one figure, per-round noise w, per-process noise p (each process draws a level), two
looks as run/paired.py: look 1 on 6 rounds in 2 pairs at share/2; if inconclusive, 12 more
in ONE pair or TWO pairs, judged on all 18 at share/2. One look: 6 rounds at share."""
import math, random, sys
from dataclasses import replace
from pytest_gpuperf.judging.stage2 import PairedFigure, judge_paired
w, p, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
def rounds(pairs_sizes, first):
    base, head, pair = [], [], []
    for k, size in enumerate(pairs_sizes):
        lb, lh = rng.gauss(0, p), rng.gauss(0, p)  # each process's own level
        for _ in range(size):
            base.append(math.exp(lb + rng.gauss(0, w))); head.append(math.exp(lh + rng.gauss(0, w))); pair.append(first + k)
    return base, head, pair
tol = {"k": 0.03}
hits = {"one": 0, "two-1pair": 0, "two-2pairs": 0}
for _ in range(n):
    b, h, pr = rounds([3, 3], 0)
    f = PairedFigure("k", "throughput", "compute", True, tuple(b), tuple(h), tuple(pr))
    hits["one"] += judge_paired([f], tol, 0.005)[0][("k", "throughput")].status == "regressed"
    v1 = judge_paired([f], tol, 0.0025)[0][("k", "throughput")]
    state = rng.getstate()
    for name, sizes in (("two-1pair", [12]), ("two-2pairs", [6, 6])):
        rng.setstate(state)
        if v1.status == "regressed":
            hits[name] += 1; continue
        if v1.status != "inconclusive":
            continue
        b2, h2, p2 = rounds(sizes, 2)
        g = replace(f, base=f.base + tuple(b2), head=f.head + tuple(h2), pair=f.pair + tuple(p2))
        hits[name] += judge_paired([g], tol, 0.0025, count=1)[0][("k", "throughput")].status == "regressed"
print(w, p, n, {k: f"{v / n:.3%}" for k, v in hits.items()})

"""One A/A (or slowed) figure with noise per process: per-round noise W (log sd, each side),
each process drawing its own level with sd P, judged by the project's judge_paired:
one look (6 rounds in 2 process pairs at the stage's share 0.5%), and two looks as
run/paired.py (6 rounds at half the share; if inconclusive, 12 more in 2 more pairs, all 18
at the other half), with the per-process screen's threshold for adding the pairs' spread at
look 2 varied (0.01: the shipped PROCESS_P). Prints the share of runs read REGRESSED.

    python process_noise.py W P RUNS SLOW     # e.g. 0.03 0.015 20000 0
"""
import math, random, sys
from dataclasses import replace
import pytest_gpuperf.judging.stage2 as s2
from pytest_gpuperf.judging.stage2 import PairedFigure, judge_paired
w, p, n, slow = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
P2S = [0.01, 0.1, 0.3, 1.01]
rng = random.Random(1)
def rounds(sizes, first):
    base, head, pair = [], [], []
    for k, size in enumerate(sizes):
        lb, lh = rng.gauss(0, p), rng.gauss(0, p)
        for _ in range(size):
            base.append(math.exp(lb + rng.gauss(0, w))); head.append(math.exp(lh + rng.gauss(0, w) + math.log1p(-slow))); pair.append(first + k)
    return base, head, pair
tol = {"k": 0.03}
hits = {"one": 0, **{f"two p2<{q}": 0 for q in P2S}}
for _ in range(n):
    b, h, pr = rounds([3, 3], 0)
    f = PairedFigure("k", "throughput", "compute", True, tuple(b), tuple(h), tuple(pr))
    hits["one"] += judge_paired([f], tol, 0.005)[0][("k", "throughput")].status == "regressed"
    v1 = judge_paired([f], tol, 0.0025)[0][("k", "throughput")]
    if v1.status == "regressed":
        for q in P2S: hits[f"two p2<{q}"] += 1
        continue
    if v1.status != "inconclusive":
        continue
    b2, h2, p2 = rounds([6, 6], 2)
    g = replace(f, base=f.base + tuple(b2), head=f.head + tuple(h2), pair=f.pair + tuple(p2))
    for q in P2S:
        old = s2.PROCESS_P; s2.PROCESS_P = q
        try:
            hits[f"two p2<{q}"] += judge_paired([g], tol, 0.0025, count=1)[0][("k", "throughput")].status == "regressed"
        finally:
            s2.PROCESS_P = old
print(w, p, n, slow, {k: f"{v / n:.3%}" for k, v in hits.items()})

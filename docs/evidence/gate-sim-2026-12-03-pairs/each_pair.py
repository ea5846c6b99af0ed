"""The check of a figure the first stage decided (a GPU kernel-time figure it found
regressed), where the paired stage's per-process screen takes it: before 6baeacb it then
read INCONCLUSIVE whatever the rounds said; since, the first stage's REGRESSED stands where
every process pair on its own measured it beyond the tolerance (judging/stage2
each_pair_beyond, run/paired.py _each_pair). This simulates one such figure, judged by the
project's own judge_paired, given that the first stage called it regressed: the share of
runs in which that verdict survives the check (A/A: a first-stage false alarm let through;
slowed: a real regression kept), under the old rule and the new.

Rounds: log(head/base) = -log1p(slow) + (head process level - base process level) + round
noise; each process draws its level once (sd P), each round its noise (sd W, each side), as
docs/evidence/gate-sim-2026-12-02-ext/process_noise.py draws them. 6 rounds in 2 process
pairs judged at the stage's share 0.5% over COUNT figures (one look); two looks: 6 rounds at
half the share, and where the written verdict is inconclusive 12 more in 2 more pairs, all
18 judged at the other half (run/paired.py), the check on all 4 pairs.

    python each_pair.py RUNS SLOW W P [COUNT]
"""
import math
import random
import sys
from dataclasses import replace

from pytest_gpuperf.judging.stage2 import PairedFigure, each_pair_beyond, judge_paired, screened

runs, slow, w, p = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
count = int(sys.argv[5]) if len(sys.argv) > 5 else 6
TOL = 0.03
rng = random.Random(20261203)


def rounds(sizes, first):
    base, head, pair = [], [], []
    for k, size in enumerate(sizes):
        lb, lh = rng.gauss(0, p), rng.gauss(0, p)
        for _ in range(size):
            base.append(math.exp(lb + rng.gauss(0, w)))
            head.append(math.exp(lh + rng.gauss(0, w) + math.log1p(-slow)))
            pair.append(first + k)
    return base, head, pair


def survives(f, v, new):
    if v.status == "regressed":
        return True
    if v.status != "inconclusive" or not new:
        return False
    return screened(f, TOL) is not None and each_pair_beyond(f, TOL, "regressed") is not None


hits = {"old one look": 0, "new one look": 0, "old two looks": 0, "new two looks": 0}
screened_n = 0
for _ in range(runs):
    b, h, pr = rounds([3, 3], 0)
    f = PairedFigure("k", "throughput_kernels", "compute", True, tuple(b), tuple(h), tuple(pr))
    key = ("k", "throughput_kernels")
    v = judge_paired([f], {"k": TOL}, 0.005, count=count)[0][key]
    screened_n += screened(f, TOL) is not None
    hits["old one look"] += survives(f, v, False)
    hits["new one look"] += survives(f, v, True)
    v1 = judge_paired([f], {"k": TOL}, 0.0025, count=count)[0][key]
    if v1.status != "inconclusive":
        hits["old two looks"] += v1.status == "regressed"
        hits["new two looks"] += v1.status == "regressed"
        continue
    b2, h2, p2 = rounds([6, 6], 2)
    g = replace(f, base=f.base + tuple(b2), head=f.head + tuple(h2), pair=f.pair + tuple(p2))
    v2 = judge_paired([g], {"k": TOL}, 0.0025, count=count)[0][key]
    hits["old two looks"] += survives(g, v2, False)
    hits["new two looks"] += survives(g, v2, True)
print(f"runs {runs} slow {slow} W {w} P {p} count {count}: screened (look 1) "
      f"{screened_n / runs:.2%}; the first stage's REGRESSED kept: "
      + ", ".join(f"{k} {v / runs:.3%}" for k, v in hits.items()))

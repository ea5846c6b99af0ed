"""Whole-class runs (a class 5% slower) that passed, or left a slowed figure UNCHANGED,
judged with the paired stage: run, class, slowed and caught figures, their verdict codes
(0 unchanged, 1 regressed, 3 inconclusive), the class line's code, FAILED or PASSED.

    python class_runs.py RUNS SESSIONS SEED
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import gate_sim_project as g
from gatesim import drive, model

n, k, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
drive.scratch_commit()
noise = model.load()
rng = np.random.default_rng(seed)
change, which = g._slowdown("class", rng, n, noise, 0.05)
base, cur, again = model.sessions(rng, n, k, noise, change)
for i in range(n):
    codes, shifts, regressed, _ = drive.judge_one(
        noise, base[i], cur[i], again[i], cur[i] - change[i], change[i], rng,
        tol=0.03, false_alarm=0.01, rounds=6, paired=True)  # fmt: skip
    slowed = change[i] != 0
    failed = bool(regressed) or any(c == 1 for c in shifts.values())
    if (codes[slowed] == 0).any() or not failed:
        print(i, which[i], "slowed", int(slowed.sum()), "caught", int((codes[slowed] == 1).sum()),
              "codes", dict(zip(*np.unique(codes[slowed], return_counts=True), strict=True)),
              "shift", shifts.get(which[i]), "FAILED" if failed else "PASSED",
              flush=True)  # fmt: skip

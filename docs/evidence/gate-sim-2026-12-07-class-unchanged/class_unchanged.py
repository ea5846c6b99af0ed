"""Slowed figures of a whole class 5% slower that read UNCHANGED, run by run (issue 60, 2a).

Draws the project's simulator's whole-class runs (tools/gate_sim_project.py's _slowdown and
model.sessions, seed given) and judges each with the project's judge, the paired stage only
with --paired (an UNCHANGED from stage 1 is never re-measured, so stage 1 alone counts
them). Prints each such figure: its run, class, verdict, its change and interval after the
class offset, its change against the mean of its sessions (approximate: the judge's level
is theirs in its own space), the class line's code (1 regressed, 3 inconclusive), its basis.
With --runs (the paired stage on), one line per run that passed or left a slowed figure
UNCHANGED instead: run, class, slowed and caught figures, their verdict codes (0 unchanged,
1 regressed, 3 inconclusive), the class line's code, FAILED or PASSED.

    python class_unchanged.py RUNS SESSIONS SEED [--paired | --runs]
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import gate_sim_project as g
from gatesim import drive, model


def figures(i: int, which: str, bad: list, keep: list, shifts: dict, raw: np.ndarray) -> None:
    for j in bad:
        for r in keep:
            if r.nodeid != f"m{j}":
                continue
            for name, v in (r.verdicts or {}).items():
                if name.startswith("peak"):
                    continue
                print(i, which, r.nodeid, name, v.status,
                      f"chg {100 * (v.change or 0):+.2f} unc {100 * (v.uncertainty or 0):.2f} "
                      f"raw~{100 * raw[j]:+.2f}", "shift", shifts.get(which), "|",
                      (v.basis or "")[:200], flush=True)  # fmt: skip


n, k, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
per_run = "--runs" in sys.argv[4:]
paired = per_run or "--paired" in sys.argv[4:]
drive.scratch_commit()
noise = model.load()
rng = np.random.default_rng(seed)
change, which = g._slowdown("class", rng, n, noise, 0.05)
base, cur, again = model.sessions(rng, n, k, noise, change)
total = 0
for i in range(n):
    keep: list = []
    codes, shifts, regressed, _ = drive.judge_one(
        noise, base[i], cur[i], again[i], cur[i] - change[i], change[i], rng,
        tol=0.03, false_alarm=0.01, rounds=6, paired=paired, keep=keep)  # fmt: skip
    slowed = change[i] != 0
    bad = [j for j in np.where(slowed)[0] if codes[j] == 0]
    total += len(bad)
    if not per_run:
        figures(i, which[i], bad, keep, shifts, cur[i] - base[i].mean(axis=1))
        continue
    failed = bool(regressed) or any(c == 1 for c in shifts.values())
    if bad or not failed:
        print(i, which[i], "slowed", int(slowed.sum()), "caught", int((codes[slowed] == 1).sum()),
              "codes", dict(zip(*np.unique(codes[slowed], return_counts=True), strict=True)),
              "shift", shifts.get(which[i]), "FAILED" if failed else "PASSED",
              flush=True)  # fmt: skip
if not per_run:
    print("total slowed unchanged", total)

"""Slowed figures of a whole class 5% slower that read UNCHANGED, with their trails: the 1,000
class runs of tools/gate_sim_project.py's 5-session cell (its seed and chunks), paired stage on.

    python class_cell.py
"""
import sys
from multiprocessing import Pool
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import gate_sim_project as g
from gatesim import drive, model

def chunk(args):
    i, n, k = args
    noise = model.load()
    rng = np.random.default_rng(20261207 + 7919 * k + 104729 * len("class") + i)
    change, which = g._slowdown("class", rng, n, noise, 0.05)
    base, cur, again = model.sessions(rng, n, k, noise, change)
    out = []
    for r in range(n):
        keep = []
        codes, shifts, regressed, line = drive.judge_one(noise, base[r], cur[r], again[r], cur[r] - change[r], change[r], rng,
            tol=0.03, false_alarm=0.01, rounds=6, paired=True, keep=keep)
        for j in np.where((change[r] != 0) & (codes == 0))[0]:
            res = next(x for x in keep if x.nodeid == f"m{j}")
            name = drive.KERNELS if noise.kern[j] else "throughput"
            v = res.verdicts[name]
            out.append(f"run {i+r} class {which[r]} m{j} {v.status} chg {100*(v.change or 0):+.2f} unc {100*(v.uncertainty or 0):.2f} shift {shifts.get(which[r])}\n" + "\n".join("   " + s.text()[:300] for s in v.trail))
    return out

if __name__ == "__main__":
    drive.scratch_commit()
    with Pool(2) as p:
        for out in p.imap(chunk, [(i, 25, 5) for i in range(0, 1000, 25)]):
            for o in out: print(o, flush=True)

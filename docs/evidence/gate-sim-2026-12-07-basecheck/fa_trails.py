"""A/A false alarms of the project's simulator with their trails (issue 60): the rules that
made each regressed figure. The same draws as tools/gate_sim_project.py's A/A cell (its seed,
its chunks of 25), so the first RUNS runs of a 20,000-run cell are these.

    python fa_trails.py RUNS SESSIONS [JOBS]
"""

import sys
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from gatesim import drive, model

SEED = 20261207


def figure(res, name, v, noise, cur, base) -> list[str]:
    j = int(res.nodeid[1:])
    head = (f"  {res.nodeid}:{name} cls={model.CLASSES[noise.cls[j]]} "
            f"kern={bool(noise.kern[j])} sigma={noise.sigma[j]:.4f} "
            f"chg {100 * (v.change or 0):+.2f} unc {100 * (v.uncertainty or 0):.2f} "
            f"raw {100 * (cur[j] - base[j].mean()):+.2f} sess_sd {100 * base[j].std(ddof=1):.2f}")
    return [head] + ["      " + s.text()[:300] for s in v.trail]


def chunk(args):
    i, n, k = args
    noise = model.load()
    rng = np.random.default_rng(SEED + 7919 * k + 104729 * len("aa") + i)
    change = np.zeros((n, noise.metrics))
    base, cur, again = model.sessions(rng, n, k, noise, change)
    out = []
    for r in range(n):
        keep = []
        _, shifts, regressed, line = drive.judge_one(
            noise, base[r], cur[r], again[r], cur[r] - change[r], change[r], rng,
            tol=0.03, false_alarm=0.01, rounds=6, paired=True, keep=keep)
        bad_shift = [c for c, s in shifts.items() if s == 1]
        if not regressed and not bad_shift:
            continue
        rec = [f"run {i + r}: regressed {regressed} shifts {bad_shift}"]
        for res in keep:
            for name, v in (res.verdicts or {}).items():
                if v.status == "regressed":
                    rec += figure(res, name, v, noise, cur[r], base[r])
        rec.append("  line: " + (line or "")[:300])
        out.append("\n".join(rec))
    return out


if __name__ == "__main__":
    n, k = int(sys.argv[1]), int(sys.argv[2])
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    drive.scratch_commit()
    with Pool(jobs) as p:
        for out in p.imap(chunk, [(i, min(25, n - i), k) for i in range(0, n, 25)]):
            for o in out:
                print(o, flush=True)

"""Where the new rule's A/A false alarms come from: class lines vs metrics, the top metrics,
and (for the top metrics) how their variance estimate compares with the true sigma.

    python3 breakdown.py --sim-dir .. --k 3 --tol 0.03 --runs 20000 [--fa 0.01]
"""
import argparse, sys
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--sim-dir", default="..")
ap.add_argument("--k", type=int, default=3)
ap.add_argument("--tol", type=float, default=0.03)
ap.add_argument("--runs", type=int, default=20000)
ap.add_argument("--fa", type=float, default=0.01)
ap.add_argument("--seed", type=int, default=4242)
a = ap.parse_args()
sys.path[:0] = [a.sim_dir, "."]
import sim, vecgate as vg

ms, cls, sigma, scur, tau = sim.load_model()
M = len(sigma)
for confirm in (False, True):
    rng = np.random.default_rng(a.seed)
    fa_run = np.zeros(0, bool)
    per = np.zeros(M)
    shc = {0: 0, 1: 0, 2: 0}
    n_runs = n_metric_runs = n_shift_runs = 0
    pooled_hits = np.zeros(M)
    for i0 in range(0, a.runs, 2000):
        n = min(2000, a.runs - i0)
        base, cur = sim.simulate(rng, n, a.k, cls, sigma, tau, np.zeros((n, M), bool), 0.0, "normal", confirm)
        c1, c2 = cur if confirm else (cur, None)
        m = vg.fit(base, cls, min_off=vg.NEW_MIN_OFF, screen=vg.SCREEN)
        code, sh = vg.new(base, c1, scur, a.tol, cls, cur2=c2, fa=a.fa, m=m)
        mreg = (code == 1).any(axis=1)
        sreg = np.zeros(n, bool)
        for c, s in sh.items():
            shc[c] += int((s == 1).sum())
            sreg |= s == 1
        n_metric_runs += int(mreg.sum())
        n_shift_runs += int((sreg & ~mreg).sum())
        n_runs += int((mreg | sreg).sum())
        per += (code == 1).sum(axis=0)
        pooled_hits += ((code == 1) & m["pooled"]).sum(axis=0)
    print(f"k={a.k} tol={a.tol} fa={a.fa} confirm={confirm}: run-wide {n_runs / a.runs:.3%}; runs with a metric "
          f"{n_metric_runs / a.runs:.3%}; runs with only a class line {n_shift_runs / a.runs:.3%}; "
          f"class lines regressed: bandwidth {shc[0]}, compute {shc[1]}, model {shc[2]} (of {a.runs})")
    for j in np.argsort(-per)[:6]:
        if per[j] == 0:
            break
        print(f"   m{j} {sim.CLASSES[cls[j]]:9s} sigma {sigma[j]:.4f} s_cur {scur[j]:.4f}: {per[j] / a.runs:.3%} "
              f"({int(per[j])}; {int(pooled_hits[j])} of them while pooled with its class)  {ms[j].get('name', '')[:60]}")

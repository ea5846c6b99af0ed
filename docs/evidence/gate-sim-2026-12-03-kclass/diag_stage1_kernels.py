"""2026-12-03: where the 8 kernel-time figures are decided. A/A runs (the same seeds as
evaluate_paired.py's "aa" rows, first --runs of them) at k = 3, 5, 10: stage 1's verdicts
(vecgate.new at 0.5% with the fresh-process confirmation) on the kernel figures, and their
half-width, with the kernel figures in the model class (before), in a class of their own
(--kclass), and in their own class with 3x the simulated session offsets (--ktau-scale 3).
Run from a copy of gate-sim's fast/ as run_fast.sh sets it up:  python3 diag_stage1_kernels.py --sim-dir .."""
import argparse, math, sys
import numpy as np
ap = argparse.ArgumentParser(); ap.add_argument("--sim-dir", default=".."); ap.add_argument("--runs", type=int, default=4000)
a = ap.parse_args()
sys.path.insert(0, a.sim_dir)
import sim, vecgate as vg, evaluate_paired as ep
ms, cls, sigma, scur, tau = sim.load_model()
ep.PRIOR_DF = np.array([max(2.0, float(m.get("n") or 0) - 1) for m in ms]); ep.PAIR_R, ep.EXT_R = 6, 12
lb = cls == 3
ep.KMASK = lb
sigma, scur, cls = sigma.copy(), scur.copy(), cls.copy()
sigma[lb], scur[lb], cls[lb] = 0.0073, np.minimum(scur[lb], 0.0073 / 2), 2
rk = cls.copy(); rk[lb] = ep.KCLASS
M = len(cls)
print(f"{a.runs} A/A runs a cell; stage 1 + confirmation on the 8 kernel figures: share UNCHANGED / REGRESSED+IMPROVED / INCONCLUSIVE, median half-width (log)")
for k in (3, 5, 10):
    for nm, rc, kt in (("before", cls, 1.0), ("kclass", rk, 1.0), ("kclass, 3x offsets", rk, 3.0)):
        ep.KTAU = kt
        rng = np.random.default_rng([20261201, k, 30, 1, 0])
        d = ep.simulate(rng, a.runs, k, cls, sigma, tau, np.zeros((a.runs, M), bool), 0.0)
        code, _, worse, half = vg.new(d["base"], d["cur"], scur, 0.03, rc, cur2=d["fresh"], fa=0.005, full=True)
        c = code[:, lb]
        print(f"k={k:2d} {nm:20s} unchanged {np.mean(c == 0):6.2%}  changed {np.mean((c == 1) | (c == 2)):6.3%}  "
              f"inconclusive {np.mean(c == 3):6.2%}  half {np.median(half[:, lb]):.2%} (tolerance {math.log1p(0.03):.2%})")
ep.KTAU = 1.0

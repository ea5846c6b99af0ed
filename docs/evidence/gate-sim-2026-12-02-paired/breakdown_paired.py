"""Where the two-stage gate's A/A false alarms come from (fast simulator, project's stage 2):
per metric, REGRESSED after stage 1 alone vs after stage 2, and how the stage-2 ones were
judged (own variance or pooled). evaluate_paired.py's simulate and seed scheme, tol 3%.

    python3 breakdown_paired.py --sim-dir .. --k 3 [--lb-gpu 0.011]   (from the fast/ copy)
"""
import argparse, math, sys
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--sim-dir", default="..")
ap.add_argument("--k", type=int, default=3)
ap.add_argument("--tol", type=float, default=0.03)
ap.add_argument("--aa", type=int, default=20000)
ap.add_argument("--chunk", type=int, default=2000)
ap.add_argument("--seed", type=int, default=20261201)
ap.add_argument("--lb-gpu", type=float, default=0.0)
a = ap.parse_args()
sys.path[:0] = [a.sim_dir, __file__.rsplit("/", 1)[0]]
import sim  # noqa: E402
import evaluate_paired as ev  # noqa: E402

ms, cls, sigma, scur, tau = sim.load_model()
ev.PAIR_R = 6
ev.PRIOR_DF = np.array([max(2.0, float(m.get("n") or 0) - 1) for m in ms])
ev.ARGS = argparse.Namespace(fa=0.005, fa2=0.005, sim_dir=a.sim_dir)
if a.lb_gpu:
    lb = cls == 3
    sigma, scur, cls = sigma.copy(), scur.copy(), cls.copy()
    sigma[lb], scur[lb], cls[lb] = a.lb_gpu, np.minimum(scur[lb], a.lb_gpu / 2), 2
M = len(sigma)
s1 = np.zeros(M, int); s2 = np.zeros(M, int); runs = 0
for i0 in range(0, a.aa, a.chunk):
    n = min(a.chunk, a.aa - i0)
    rng = np.random.default_rng([a.seed, a.k, int(a.tol * 1000), 1, i0])
    d = ev.simulate(rng, n, a.k, cls, sigma, tau, np.zeros((n, M), bool), 0.0)
    first = ev.r_new(d, scur, a.tol, cls, confirm="fresh")
    code, *_ = ev.paired_project(first, d, scur, a.tol, cls, sigma, r_fa=0.005)
    s1 += (first[0] == 1).sum(axis=0)
    s2 += ((code == 1) & (first[0] != 1)).sum(axis=0)
    runs += n
print(f"k={a.k} tol={a.tol} lb_gpu={a.lb_gpu}: {runs} A/A runs; REGRESSED from stage 1 {int(s1.sum())}, from stage 2 {int(s2.sum())}")
w = np.array([sigma[j] if (cls[j] == 3 or j in ev.PROCESS_LEVEL) else min(sigma[j], ev.W_CLASS.get(int(cls[j]), sigma[j])) for j in range(M)])
for j in np.argsort(-(s1 + s2))[:8]:
    if s1[j] + s2[j] == 0:
        break
    print(f"  m{j} ({sim.CLASSES[cls[j]]}, sigma {sigma[j]:.2%}, within-machine {w[j]:.2%}{', process-level' if j in ev.PROCESS_LEVEL else ''}): "
          f"stage 1 {s1[j]} ({s1[j] / runs:.3%}), stage 2 {s2[j]} ({s2[j] / runs:.3%})")

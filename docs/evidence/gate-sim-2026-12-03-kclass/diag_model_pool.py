"""2026-12-03: why --kclass lowers k = 3's A/A (0.265% -> 0.180%). The A/A runs of the k = 3
cell (the same seeds as evaluate_paired.py's "aa" rows), judged by the project's rule
(new+paired-projloo-kcheck-ext+confirm) with the kernel figures in the model class (before)
and in a class of their own (--kclass): per-metric A/A false alarms of the model-class
figures, and how often stage 1's pool takes each in (vecgate.fit's F screen).
Run from a copy of gate-sim's fast/ as run_fast.sh sets it up:  python3 diag_model_pool.py --sim-dir .."""
import argparse, sys
import numpy as np
ap = argparse.ArgumentParser(); ap.add_argument("--sim-dir", default=".."); ap.add_argument("--runs", type=int, default=20000)
ap.add_argument("--k", type=int, default=3)
a = ap.parse_args()
sys.path.insert(0, a.sim_dir)
import sim, vecgate as vg, evaluate_paired as ep
ms, cls, sigma, scur, tau = sim.load_model()
ep.PRIOR_DF = np.array([max(2.0, float(m.get("n") or 0) - 1) for m in ms]); ep.PAIR_R, ep.EXT_R = 6, 12
ep.ARGS = argparse.Namespace(fa=0.005, fa2=0.005, kpair="0.0103", kpool_kind=True, sim_dir=a.sim_dir)
lb = cls == 3
ep.KMASK = lb
sigma, scur, cls = sigma.copy(), scur.copy(), cls.copy()
sigma[lb], scur[lb], cls[lb] = 0.0073, np.minimum(scur[lb], 0.0073 / 2), 2
ep.SIM_CLS = cls
rk = cls.copy(); rk[lb] = ep.KCLASS
M = len(cls); model = np.where((cls == 2) & ~lb)[0]
out = {nm: dict(reg=np.zeros(M), reg1=np.zeros(M), pooled=np.zeros(M), runs=0) for nm in ("before", "kclass")}
for i0 in range(0, a.runs, 2000):
    n = min(2000, a.runs - i0)
    for nm, rc in (("before", cls), ("kclass", rk)):
        rng = np.random.default_rng([20261201, a.k, 30, 1, i0])
        d = ep.simulate(rng, n, a.k, cls, sigma, tau, np.zeros((n, M), bool), 0.0)
        code, sh, _, _ = ep.r_new_two_stage(d, scur, 0.03, rc, sigma=sigma, stage2="projloo-kcheck-ext", confirm="fresh")
        m = vg.fit(d["base"], rc, min_off=vg.NEW_MIN_OFF, screen=vg.SCREEN)
        c1, _ = vg.new(d["base"], d["cur"], scur, 0.03, rc, cur2=d["fresh"], fa=0.005)
        o = out[nm]
        o["reg"] += (code == 1).sum(0); o["reg1"] += (c1 == 1).sum(0); o["pooled"] += m["pooled"].sum(0); o["runs"] += n
print(f"k = {a.k}, {a.runs} A/A runs; model-class figures (20) with any A/A false alarm:")
print(f"{'metric':>6s} {'sigma':>6s} | {'before: final':>13s} {'stage1':>7s} {'in pool':>7s} | {'kclass: final':>13s} {'stage1':>7s} {'in pool':>7s}")
for j in model:
    b, kc = out["before"], out["kclass"]
    if b["reg"][j] + kc["reg"][j] + b["reg1"][j] + kc["reg1"][j] == 0:
        continue
    print(f"{'m%d' % j:>6s} {sigma[j]:6.2%} | {b['reg'][j]/b['runs']:13.3%} {b['reg1'][j]/b['runs']:7.3%} {b['pooled'][j]/b['runs']:7.1%} | "
          f"{kc['reg'][j]/kc['runs']:13.3%} {kc['reg1'][j]/kc['runs']:7.3%} {kc['pooled'][j]/kc['runs']:7.1%}")
print("model-class figures' sigma: median %.2f%%; kernel figures 0.73%%" % (100 * np.median(sigma[model])))
for nm in ("before", "kclass"):
    o = out[nm]
    print(f"{nm}: A/A false alarms summed over the model-class figures {o['reg'][model].sum()/o['runs']:.3%} a run (final), "
          f"{o['reg1'][model].sum()/o['runs']:.3%} (stage 1 + confirmation); over every figure {o['reg'].sum()/o['runs']:.3%}")

"""Where the whole-class 5% slowdown (evaluate.py's cw5: all 20 model-class metrics 5% slower)
is caught or lost under c2cb344's bounded_by_class_line: same draws as evaluate.py (same seed
scheme), rule new+confirm (and new), with BOUNDED_BY_LINE on and off.

    python cw_diag.py --ks 3,5,10 --tol 0.03 --det 4000
"""
import argparse, sys
from pathlib import Path
import numpy as np
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE)); sys.path.insert(0, str(HERE.parent))
import sim, vecgate as vg, evaluate as ev  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--ks", default="3,5,10"); ap.add_argument("--tol", type=float, default=0.03)
ap.add_argument("--det", type=int, default=4000); ap.add_argument("--chunk", type=int, default=2000)
ap.add_argument("--seed", type=int, default=20261201); ap.add_argument("--fa", type=float, default=0.01)
a = ap.parse_args()
ms, cls, sigma, scur, tau = sim.load_model()
M = len(sigma); model = cls == 2
ev.PRIOR_DF = np.array([max(2.0, float(m.get("n") or 0) - 1) for m in ms])  # as evaluate.main sets it
print(f"cw5: the {model.sum()} model-class metrics 5% slower; tol {a.tol:.0%}; {a.det} runs; budget {a.fa}")
for k in map(int, a.ks.split(",")):
    for confirm in (None, "fresh"):
        for bl in (True, False):
            vg.BOUNDED_BY_LINE = bl
            c = dict(n=0, fail=0, line=0, metric=0, metric_noline=0, bounded=0)
            for i0 in range(0, a.det, a.chunk):
                n = min(a.chunk, a.det - i0)
                rng = np.random.default_rng([a.seed, k, int(a.tol * 1000), 5, i0])
                mask = np.zeros((n, M), bool); mask[:, model] = True
                d = ev.simulate(rng, n, k, cls, sigma, tau, mask, 0.05)
                cur2 = None if confirm is None else d[confirm]
                code, sh = vg.new(d["base"], d["cur"], scur, a.tol, cls, cur2=cur2, fa=a.fa)
                line = sh[2] == 1
                anym = (code[:, model] == 1).any(axis=1)
                c["n"] += n; c["line"] += int(line.sum()); c["metric"] += int(anym.sum())
                c["metric_noline"] += int((anym & ~line).sum())
                c["fail"] += int(((code == 1).any(axis=1) | np.stack([s == 1 for s in sh.values()], 1).any(axis=1)).sum())
            n = c["n"]
            print(f"k={k:<2} {'new+confirm' if confirm else 'new':11s} bounded_by_line={bl!s:5s}: run fails {c['fail']/n:6.1%}  "
                  f"model line REGRESSED {c['line']/n:6.1%}  a model metric REGRESSED {c['metric']/n:6.1%} "
                  f"(without the line {c['metric_noline']/n:5.1%})", flush=True)

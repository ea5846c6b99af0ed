"""vecgate.new (the rule of 4be77c1, with c2cb344's bounded_by_class_line unless --rule is older, with dc03e3e's leave-one-out class-pool screen unless --screen self, and 3e41962's log-unit verdict and launch-bound floor unless --rule dc03e3e) against the project's judge_run + confirm, through
tools/gate_sim_project.py, verdict by verdict on the same gate-sim draws.

    python3 check_new.py --sim-dir .. --repo /work/main [--runs 200] [--fa 0.01]

Scenarios: A/A; 5% slowdown of 10 random metrics; a whole class 5% slower (a third of the
runs each: model, bandwidth, compute). Every cell: k 3/5/10, tolerance 3/5%, confirmation
off/on. Mismatches are printed run by run (first few) so they can be explained.
"""
import argparse, sys, time
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--sim-dir", default=__file__.rsplit("/", 2)[0])
ap.add_argument("--repo", default=".")
ap.add_argument("--runs", type=int, default=200)
ap.add_argument("--seed", type=int, default=11)
ap.add_argument("--ks", default="3,5,10")
ap.add_argument("--tols", default="0.03,0.05")
ap.add_argument("--scen", default="aa,d5,cw5")
ap.add_argument("--fa", type=float, default=0.01, help="run-wide false-alarm budget")
ap.add_argument("--show", type=int, default=5)
ap.add_argument("--screen", default="loo", help="vecgate.new's class-pool screen: loo (dc03e3e) or self (4be77c1)")
ap.add_argument("--rule", default="eaa6c9e", choices=["eaa6c9e", "c2cb344", "3e41962", "dc03e3e", "log-only", "floor-only"],
                help="vecgate.new's verdict: eaa6c9e (c2cb344 + c268191's rests-on-the-bound re-judge, SHIFT_SHARE 0.5), c2cb344 (3e41962 + bounded_by_class_line), 3e41962 (log units, "
                     "launch-bound floor), dc03e3e (relative, no floor), or one of 3e41962's two changes alone "
                     "(to show the check sees each)")
a = ap.parse_args()
sys.path[:0] = [a.sim_dir, a.repo + "/tools", __file__.rsplit("/", 1)[0]]
import sim  # noqa: E402
import gate_sim_project as gsp  # noqa: E402
import vecgate as vg  # noqa: E402

vg.SCREEN = a.screen
vg.LOG_UNITS = a.rule in ("eaa6c9e", "c2cb344", "3e41962", "log-only")
vg.LAUNCH_FLOOR = 0.30 if a.rule in ("eaa6c9e", "c2cb344", "3e41962", "floor-only") else None
vg.BOUNDED_BY_LINE = a.rule in ("eaa6c9e", "c2cb344")
vg.RESTS_ON_BOUND = a.rule == "eaa6c9e"
vg.SHIFT_SHARE = 0.5 if a.rule == "eaa6c9e" else 0.25
print(f"project: {gsp.judge_run.__module__} from {sys.modules['pytest_gpuperf'].__file__}; numpy screen {vg.SCREEN}; "
      f"numpy LOG_UNITS={vg.LOG_UNITS} LAUNCH_FLOOR={vg.LAUNCH_FLOOR} BOUNDED_BY_LINE={vg.BOUNDED_BY_LINE} RESTS_ON_BOUND={vg.RESTS_ON_BOUND} SHIFT_SHARE={vg.SHIFT_SHARE}", flush=True)

if a.fa != 0.01:  # the adapter calls judge_run with the default budget: hand it ours
    import functools
    gsp.judge_run = functools.partial(gsp.judge_run, false_alarm=a.fa)

ms, cls, sigma, scur, tau = sim.load_model()
names = [sim.CLASSES[c] for c in cls]
M = len(sigma)
rng = np.random.default_rng(a.seed)
tot = bad = 0
rt = lambda x: None if x is None else np.log(np.exp(x))  # the adapter's exp/log round trip
for k in map(int, a.ks.split(",")):
    for tol in map(float, a.tols.split(",")):
        for confirm in (False, True):
            for scen in a.scen.split(","):
                n = a.runs
                mask = np.zeros((n, M), bool)
                slow = 0.0 if scen == "aa" else 0.05
                if scen == "d5":
                    for i in range(n):
                        mask[i, rng.choice(M, 10, replace=False)] = True
                elif scen == "cw5":
                    for i in range(n):
                        mask[i, cls == (2, 0, 1)[i % 3]] = True
                base, cur = sim.simulate(rng, n, k, cls, sigma, tau, mask, slow, "normal", confirm)
                t0 = time.time()
                ref, sh_ref = gsp.rule(base, cur, scur, tol, names)
                t1 = time.time()
                c1, c2 = (cur if confirm else (cur, None))
                mine, sh = vg.new(rt(base), rt(c1), scur, tol, cls, cur2=rt(c2), fa=a.fa)
                t2 = time.time()
                sh_mine = np.stack([np.where(sh[c] < 0, 0, sh[c]) for c in sorted(sh)], axis=1)
                w = min(sh_ref.shape[1], sh_mine.shape[1])
                nb = int((ref != mine).sum())
                nbs = int((sh_ref[:, :w] != sh_mine[:, :w]).sum()) + n * abs(sh_ref.shape[1] - sh_mine.shape[1])
                tot += ref.size + sh_ref.size
                bad += nb + nbs
                print(f"k={k} tol={tol} confirm={confirm} {scen}: metric mismatches {nb}/{ref.size}, "
                      f"shift mismatches {nbs}/{sh_ref.size}; project: regressed {int((ref == 1).sum())}, "
                      f"unchanged {int((ref == 0).sum())}, shifts regressed {int((sh_ref == 1).sum())}; "
                      f"project {t1 - t0:.1f}s numpy {t2 - t1:.2f}s", flush=True)
                shown = 0
                for i, j in zip(*np.where(ref != mine)):
                    if shown >= a.show:
                        break
                    print(f"   run {i} m{j} (class {names[j]}): project {ref[i, j]} numpy {mine[i, j]}")
                    shown += 1
                for i, j in zip(*np.where(sh_ref[:, :w] != sh_mine[:, :w])):
                    if shown >= 2 * a.show:
                        break
                    print(f"   run {i} shift {j}: project {sh_ref[i, j]} numpy {sh_mine[i, j]}")
                    shown += 1
print(f"TOTAL mismatches {bad} of {tot} verdicts")

"""The two-stage gate in numpy (vecgate.new at half the budget + evaluate_paired.paired_project)
against the project's (tools/gate_sim_project.py rule with pair_x: judge_run + confirm, then
run.paired.candidates + judging.stage2.judge_paired), verdict by verdict on the same draws.

    python3 check_paired.py --sim-dir .. --repo /work/wt-gs [--runs 200] [--fa 0.01] [--loo] [--more 2]

--more M (2026-12-02, fourth session): the two-look rule on both sides (the adapter's
--more, the numpy paired_project_ext), the screen's attribution at either look.

Run from a copy of gate-sim's fast/ holding the 2026-12-01 vecgate.py and evaluate_paired.py.
Scenarios: A/A; 5% slowdown of 10 random metrics; a whole class 5% slower (model, bandwidth,
compute by thirds). Cells: k 3/5/10 x tolerance 3/5% x confirmation off/on. Each mismatch is
attributed: the per-process screen (ANOVA over the process pairs, p < 1%, the one intended
difference) fired on the figure itself, or on a class-mate re-measured in the same run (it
leaves the class pool), or neither (unexplained: printed).
"""
import argparse, math, sys, time
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--sim-dir", default=__file__.rsplit("/", 2)[0])
ap.add_argument("--repo", default=".")
ap.add_argument("--runs", type=int, default=200)
ap.add_argument("--seed", type=int, default=13)
ap.add_argument("--ks", default="3,5,10")
ap.add_argument("--tols", default="0.03,0.05")
ap.add_argument("--confirms", default="0,1")
ap.add_argument("--scen", default="aa,d5,cw5")
ap.add_argument("--fa", type=float, default=0.01, help="the run's budget (split 0.5/0.5)")
ap.add_argument("--show", type=int, default=5)
ap.add_argument("--loo", action="store_true", help="the leave-one-out class screen (2026-12-02)")
ap.add_argument("--more", type=int, default=0, help="added 2026-12-02 (gate-sim-2026-12-02-ext): "
                "the two-look rule, MORE times the rounds again for the figures look 1 leaves "
                "inconclusive (the project's: 2; tools/gate_sim_project.py --more, numpy "
                "paired_project_ext); 0: one look, as before")
a = ap.parse_args()
sys.path[:0] = [a.sim_dir, a.repo + "/tools", __file__.rsplit("/", 1)[0]]
import sim  # noqa: E402
import gate_sim_project as gsp  # noqa: E402
import vecgate as vg  # noqa: E402
import evaluate_paired as ev  # noqa: E402
from pytest_gpuperf.judging.stage2 import PROCESS_P, PairedFigure, per_process  # noqa: E402

assert gsp.W_CLASS == ev.W_CLASS and tuple(gsp.PROCESS_LEVEL) == tuple(ev.PROCESS_LEVEL)
print(f"project: {sys.modules['pytest_gpuperf'].__file__}; stage-1 budget {a.fa * (1 - gsp.STAGE_SHARE)}, "
      f"stage 2 {a.fa * gsp.STAGE_SHARE}, rounds {gsp.PAIR_R} in {gsp.PAIRS} process pairs", flush=True)
ev.PAIR_R = gsp.PAIR_R
ev.EXT_R = a.more * gsp.PAIR_R
ev.KMASK = np.zeros(len(sim.load_model()[1]), bool)  # no kernel-time figures here
gsp.LOOK1 = gsp.PAIR_R
ev.ARGS = argparse.Namespace(fa=a.fa * (1 - gsp.STAGE_SHARE), fa2=a.fa * gsp.STAGE_SHARE)
ms, cls, sigma, scur, tau = sim.load_model()
names = [sim.CLASSES[c] for c in cls]
M = len(sigma)
R = gsp.PAIR_R
pair = tuple(p for p in range(gsp.PAIRS) for _ in range(R // gsp.PAIRS))
E = a.more * R  # the second look's rounds, in PAIRS more pairs (as the adapter labels them)
pair2 = pair + tuple(gsp.PAIRS + p for p in range(gsp.PAIRS) for _ in range(E // gsp.PAIRS))
rng = np.random.default_rng(a.seed)
tot = bad = fired_tot = sel_tot = 0
why = {"self": 0, "classmate": 0, "unexplained": 0}
rt = lambda x: None if x is None else np.log(np.exp(x))  # the adapter's exp/log round trip
for k in map(int, a.ks.split(",")):
    for tol in map(float, a.tols.split(",")):
        for confirm in (c == "1" for c in a.confirms.split(",")):
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
                slog = np.where(mask, math.log1p(-slow), 0.0)
                x = gsp.pair_draws(rng, n, cls, sigma, slog, R)
                if E:  # drawn after the first look's, as the adapter draws them
                    x = np.concatenate([x, gsp.pair_draws(rng, n, cls, sigma, slog, E)], axis=2)
                t0 = time.time()
                ref, sh_ref = gsp.rule(base, cur, scur, tol, names, false_alarm=a.fa, pair_x=x)
                t1 = time.time()
                c1, c2 = (cur if confirm else (cur, None))
                first = vg.new(rt(base), rt(c1), scur, tol, cls, cur2=rt(c2), fa=ev.ARGS.fa, full=True)
                # paired_project draws x from d["slow"] and d["pair"]: hand it these very rounds
                w = gsp.within_sd(cls, sigma)
                ws = np.where(w > 0, math.sqrt(2) * w, 1.0)  # w = 0: figures never re-measured
                z = (x - slog[:, :, None]) / ws[None, :, None]
                d = {"slow": slog, "pair": z[:, :, :R], "pair_ext": z[:, :, R:]}
                if E:
                    mine, sh, _, _ = ev.paired_project_ext(first, d, scur, tol, cls, sigma,
                                                           r_fa=ev.ARGS.fa2, loo=a.loo, kcheck=False)
                else:
                    mine, sh, _, _ = ev.paired_project(first, d, scur, tol, cls, sigma, r_fa=ev.ARGS.fa2, loo=a.loo)
                t2 = time.time()
                sh_mine = np.stack([np.where(sh[c] < 0, 0, sh[c]) for c in sorted(sh)], axis=1)
                w_ = min(sh_ref.shape[1], sh_mine.shape[1])
                # the per-process screen on the figures the numpy stage 2 re-measured
                sel = (first[0] == 3) & np.isin(cls, (0, 1, 2))[None, :]
                fired = np.zeros((n, M), bool)
                for i, j in zip(*np.where(sel)):
                    f = PairedFigure(f"m{j}", "throughput", names[j], True, (1.0,) * R,
                                     tuple(math.exp(v) for v in x[i, j, :R]), pair)
                    p = per_process(f)
                    fired[i, j] = p is not None and p < PROCESS_P
                    if E and not fired[i, j]:  # the screen at look 2, over all the rounds
                        g = PairedFigure(f"m{j}", "throughput", names[j], True, (1.0,) * (R + E),
                                         tuple(math.exp(v) for v in x[i, j]), pair2)
                        q = per_process(g)
                        fired[i, j] = q is not None and q < PROCESS_P
                nb = int((ref != mine).sum())
                nbs = int((sh_ref[:, :w_] != sh_mine[:, :w_]).sum()) + n * abs(sh_ref.shape[1] - sh_mine.shape[1])
                tot += ref.size + sh_ref.size
                bad += nb + nbs
                fired_tot += int(fired.sum()); sel_tot += int(sel.sum())
                cell_why = {"self": 0, "classmate": 0, "unexplained": 0}
                shown = 0
                for i, j in zip(*np.where(ref != mine)):
                    if fired[i, j]:
                        cause = "self"
                    elif (fired[i] & (cls == cls[j])).any():
                        cause = "classmate"
                    else:
                        cause = "unexplained"
                    cell_why[cause] += 1
                    if cause == "unexplained" and shown < a.show:
                        print(f"   UNEXPLAINED run {i} m{j} (class {names[j]}): project {ref[i, j]} numpy {mine[i, j]} "
                              f"stage-1 numpy {first[0][i, j]} rounds {np.round(x[i, j], 4)}")
                        shown += 1
                for key in why:
                    why[key] += cell_why[key]
                print(f"k={k} tol={tol} confirm={confirm} {scen}: metric mismatches {nb}/{ref.size} "
                      f"(ANOVA on the figure {cell_why['self']}, on a class-mate {cell_why['classmate']}, "
                      f"unexplained {cell_why['unexplained']}), shift mismatches {nbs}/{sh_ref.size}; "
                      f"re-measured {int(sel.sum())}, ANOVA p<{PROCESS_P} {int(fired.sum())}; project: "
                      f"regressed {int((ref == 1).sum())}, unchanged {int((ref == 0).sum())}, shifts regressed "
                      f"{int((sh_ref == 1).sum())}; project {t1 - t0:.1f}s numpy {t2 - t1:.2f}s", flush=True)
print(f"TOTAL mismatches {bad} of {tot} verdicts: ANOVA on the figure {why['self']}, on a class-mate "
      f"{why['classmate']}, unexplained {why['unexplained']}; ANOVA fired on {fired_tot} of {sel_tot} "
      f"re-measured figures ({fired_tot / max(1, sel_tot):.2%})")

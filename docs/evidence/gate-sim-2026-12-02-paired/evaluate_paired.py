"""docs/evidence/gate-sim-2026-12-01/evaluate.py extended for the two-stage gate of a5ee751
(stage 1 = vecgate.new at --fa, stage 2 = `paired_project`, the rule of
pytest_gpuperf.judging.stage2.judge_paired less its per-process screen, checked verdict by
verdict by check_paired.py). Rules added: new+paired+confirm (evaluate.py's paired_stage as
it was: launch-bound re-measured, pooled over every class member, relative units),
new+paired-exlb+confirm (the same, launch-bound left to stage 1), new+paired-proj+confirm
(the project's rule). Run from a copy of gate-sim's fast/ holding the 2026-12-01 vecgate.py.

The statistics audit's simulation table: the shipped gate (vecgate.shipped, verified
verdict-for-verdict against judge_run by check.py), an ORACLE bound and the candidate rule,
on gate-sim's fitted H200 noise model, all on the same draws (same seeds).

    python3 evaluate.py --sim-dir .. --aa 20000 --det 2000 [--ks 3,5,10]

Columns (per rule, k baseline sessions, tolerance): A/A run-wide false alarms (any metric
or class-shift 'regressed') with its Clopper-Pearson 95% interval; the worst metric's rate;
throughput verdicts decided (gate-sim's 40 throughput metrics: bandwidth, compute, model,
launch-bound); UNCHANGED verdicts whose interval crosses the tolerance; detection of a 5%
and 10% slowdown (10 random metrics per run, throughput ones counted); a class-wide 5%
slowdown of all 20 model-step metrics (run fails / each metric UNCHANGED).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import vecgate as vg  # noqa: E402

TP = (0, 1, 2, 3)  # throughput classes of gate-sim (launch-bound included)
PAIR_R = 6  # paired rounds per re-measured benchmark
EXT_R = 0  # the two-look rule's extra rounds (--ext-r)
# within-machine, process-to-process sd of a session median, by gate-sim class (evidence:
# docs/evidence/h200x2-2026-11-30-f gate-power call 3, six sessions on one GPU: casts
# 0.07-0.13%, MLP blocks 0.30-0.67%; the LoRA step, 8 sessions in one lease, -0.13..+0.39%);
# launch-bound and process-level metrics (autotuned decoder m60, realistic lengths m54, the
# 70B step m70): as noisy within a machine as between (same-GPU sessions in lease 4-6: the
# launch-bound prefill 25-36%)
W_CLASS = {0: 0.0013, 1: 0.0067, 2: 0.0040}
PROCESS_LEVEL = (54, 60, 70)
PRIOR_DF = None  # set in main: n_m - 1 of each metric in noise_model.json (at least 2)


def cp(x, n, a=0.05):
    lo = stats.beta.ppf(a / 2, x, n - x + 1) if x > 0 else 0.0
    hi = stats.beta.ppf(1 - a / 2, x + 1, n - x) if x < n else 1.0
    return lo, hi


def simulate(rng, n, k, cls, sigma, tau, mask, x, rho=None, env=False):
    """gate-sim's simulate() (same draw order, so the same seed gives the same runs), plus
    the confirmation session: 'fresh' = a fresh machine (gate-sim's --confirm); with rho,
    also 'same' = the same machine state (class offsets kept) and a residual correlated rho
    with the first measurement's (a card-level effect repeats in a fresh process)."""
    M, C = len(sigma), int(max(cls)) + 1
    C = max(C, 6)
    a_base = rng.standard_normal((n, C, k)) * tau[None, :, None]
    a_cur = rng.standard_normal((n, C)) * tau[None, :]
    base = a_base[:, cls, :] + rng.standard_normal((n, M, k)) * sigma[None, :, None]
    e = rng.standard_normal((n, M))
    slow = np.where(mask, math.log1p(-x), 0.0)
    cur = a_cur[:, cls] + e * sigma[None, :] + slow
    a2 = rng.standard_normal((n, C)) * tau[None, :]
    fresh = a2[:, cls] + rng.standard_normal((n, M)) * sigma[None, :] + slow
    out = dict(base=base, cur=cur, fresh=fresh)
    # an independent per-metric noise estimate from a longer history (the evidence's n_m
    # sessions of each metric, as gate-sim's fit used): sigma^2 chi2(d0)/d0, d0 = n_m - 1
    d0 = PRIOR_DF[None, :]
    out["prior_var"] = sigma[None, :] ** 2 * rng.chisquare(d0, size=(n, M)) / d0
    # paired rounds (stage 2): R rounds of head vs the stored base artefact, alternating in
    # fresh processes on this machine; standard normals, scaled by the within-machine sd
    out["pair"] = rng.standard_normal((n, M, PAIR_R))
    out["slow"] = 0.0 * slow if env else slow  # env: the machine/driver, not the code: the artefact slows too
    if rho is not None:
        e2 = rho * e + math.sqrt(1 - rho * rho) * rng.standard_normal((n, M))
        out["same"] = a_cur[:, cls] + e2 * sigma[None, :] + slow
    if EXT_R:  # added 2026-12-02 (gate-sim-2026-12-02-ext): the extension's rounds, drawn last
        out["pair_ext"] = rng.standard_normal((n, M, EXT_R))
    return out


# ---------------------------------------------------------------- rules (codes, shifts, half, worse)

def r_shipped(d, scur, tol, cls, confirm=None, **_):
    cur2 = None if confirm is None else d[confirm]
    code, sh = vg.shipped(d["base"], d["cur"], scur, tol, cls, cur2=cur2)
    m = vg.fit(d["base"], cls)
    n_off = sum(1 for f in m["classes"].values() if f["b"] is not None)
    conf = max(0.99, 1 - vg.RUN_FA / (len(scur) + n_off))
    _, worse, half, _, _, _ = vg._judge(m, d["cur"], scur, tol, conf)
    return code, sh, worse, half


def r_new(d, scur, tol, cls, confirm=None, **_):
    """The gate at c2cb344 (vecgate.new, verified against judge_run by check_new.py; set
    vecgate.BOUNDED_BY_LINE/LOG_UNITS/LAUNCH_FLOOR for the rules before it), at the run-wide
    budget --fa."""
    cur2 = None if confirm is None else d[confirm]
    return vg.new(d["base"], d["cur"], scur, tol, cls, cur2=cur2, fa=ARGS.fa, full=True)


def r_oracle(d, scur, tol, cls, var_d=None, **_):
    """Known variance of this very statistic (the shipped d, after this run's offsets;
    its Monte-Carlo variance under A/A), z at the shipped Bonferroni level: what no rule
    that must estimate the spreads from k sessions can beat (no class-shift verdicts)."""
    m = vg.fit(d["base"], cls)
    n_off = sum(1 for f in m["classes"].values() if f["b"] is not None)
    conf = 1 - vg.RUN_FA / (len(scur) + n_off)
    _, _, _, dd, _, _ = vg._judge(m, d["cur"], scur, tol, conf)
    half = vg.zq(conf) * np.sqrt(var_d)[None, :] * np.ones_like(dd)
    worse = -np.expm1(dd)
    reg = (worse > tol) & (worse > half)
    imp = (-worse > tol) & (-worse > half)
    inc = (half > tol) | (np.abs(worse) > tol)
    code = np.where(reg, 1, np.where(imp, 2, np.where(inc, 3, 0))).astype(np.int8)
    return code, {}, worse, half


def eb_moderate(v, df, cls_idx_list, aside, guard_p=0.01):
    """limma squeezeVar per class on the non-set-aside metrics; a metric whose own variance
    fails the F test against the prior keeps its own (and own df)."""
    sys.path.insert(0, ARGS.sim_dir)
    import sim
    post = v.copy()
    dfp = np.broadcast_to(np.asarray(df, float), v.shape).copy()
    for idx in cls_idx_list:
        x = v[:, idx]
        s0, d0 = sim.fit_fdist(x, df)
        s0 = s0[:, None]
        d0 = np.minimum(d0, 1e6)[:, None]
        p = (d0 * s0 + df * x) / (d0 + df)
        out = stats.f.sf(x / s0, df, d0) < guard_p
        out |= aside[:, idx]
        post[:, idx] = np.where(out, x, p)
        dfp[:, idx] = np.where(out, df, d0 + df)
    return post, dfp


def r_cand(d, scur, tol, cls, confirm=None, min_off=4, prior=True, loo=True, shift_share=0.25,
           honest=False, cur_term="max", eb=False, **_):
    """Candidate rule C (same measurements as the shipped gate, one more input):
    - class offsets for every throughput class with >= min_off metrics (compute's 4 too);
    - prior=True: each throughput metric's residual variance is its own k-1 df combined with
      an independent estimate from the metric's longer history (d0 = n_m - 1 df, the evidence
      sessions of that metric): (d0 s0^2 + (k-1) s^2) / (d0 + k - 1), t with d0 + k - 1 df;
      no class pool (a noisy member no longer widens its quiet class-mates); prior=False:
      the shipped pooled spread;
    - cur_term="max": the current session counts once, max(t^2 var, z^2 s_cur^2), not both
      (var is already the spread of a whole session's median);
    - loo: this run's offset for metric i is the median of the OTHER metrics of its class;
    - weighted Bonferroni: shift_share of the 1% to the class-shift verdicts, whose spread is
      pooled over every offset class; a shift is confirmed only by the fresh process's own
      class median (not by re-judging this run's offset);
    - honest=True: UNCHANGED only when the whole interval lies within the tolerance."""
    base, cur = d["base"], d["cur"]
    n, M, k = base.shape
    save = vg.MIN_OFF
    vg.MIN_OFF = min_off
    try:
        m = vg.fit(base, cls)
    finally:
        vg.MIN_OFF = save
    var, df = m["var"].copy(), m["df"].copy()
    tpm = np.broadcast_to(np.isin(cls, TP)[None, :], var.shape)
    if eb:  # limma squeezeVar toward each throughput class (F guard), in place of the pool
        idxs = [np.where(cls == c)[0] for c in np.unique(cls) if c in TP and (cls == c).sum() >= 3]
        v2, d2 = eb_moderate(m["own_var"], k - 1.0, idxs, m["aside"])
        var, df = np.where(tpm, v2, var), np.where(tpm, d2, df)
    if prior:
        d0 = PRIOR_DF[None, :]
        own, od = m["own_var"], m["k"] - 1
        var = np.where(tpm, (d0 * d["prior_var"] + od * own) / (d0 + od), var)
        df = np.where(tpm, d0 + od, df)
    off_classes = [c for c, f in m["classes"].items() if f["b"] is not None]
    n_shift = len(off_classes)
    a_metric = vg.RUN_FA * (1 - shift_share if n_shift else 1.0)
    conf = 1 - a_metric / M
    conf_s = 1 - vg.RUN_FA * shift_share / max(1, n_shift)
    z, t = vg.zq(conf), vg.tq(conf, df)

    def judge(curv, offs=None):
        dd = curv - m["level"]
        extra = np.zeros((n, M))
        est = {}
        for c in off_classes:
            idx = m["classes"][c]["idx"]
            x = dd[:, idx]
            if offs is not None:
                o = np.broadcast_to(offs[c][:, None], x.shape)
            elif loo:
                o = np.stack([np.median(np.delete(x, i, axis=1), axis=1) for i in range(len(idx))], axis=1)
            else:
                o = np.broadcast_to(np.median(x, axis=1)[:, None], x.shape)
            est[c] = np.median(x, axis=1) if offs is None else offs[c]
            dd[:, idx] = x - o
            pool = np.median(var[:, idx], axis=1, keepdims=True)
            extra[:, idx] = (math.pi / 2) * pool / (len(idx) - (1 if loo else 0))
        kk = np.maximum(1, m["k"])
        if cur_term == "max":
            h2 = t ** 2 * (var / kk + extra) + np.maximum(t ** 2 * var, (z * scur[None, :]) ** 2)
        else:
            h2 = (z * scur[None, :]) ** 2 + t ** 2 * (var * (1 + 1 / kk) + extra)
        half = np.sqrt(h2)
        worse = -np.expm1(dd)
        reg = (worse > tol) & (worse > half)
        imp = (-worse > tol) & (-worse > half)
        inc = (half > tol) | (np.abs(worse) > tol)
        code = np.where(reg, 1, np.where(imp, 2, np.where(inc, 3, 0))).astype(np.int8)
        asd = m["aside"] & (dd * np.nan_to_num(m["aside_dev"]) > 0) & (np.abs(dd) >= np.abs(np.nan_to_num(m["aside_dev"])) / 2)
        code = np.where(asd, 3, code).astype(np.int8)
        if honest:
            code = np.where((code == 0) & (np.abs(worse) + half > tol), 3, code).astype(np.int8)
        return code, worse, half, dd, est

    code, worse, half, dd, est = judge(cur)
    ss, dfo = np.zeros(n), 0
    for c in off_classes:
        ss = ss + (m["classes"][c]["b"] ** 2).sum(axis=1)
        dfo += k - 1

    def shift_codes(dd_all):
        out = {}
        for c in off_classes:
            idx = m["classes"][c]["idx"]
            pool = np.median(var[:, idx], axis=1)
            sc, _, _ = vg.decide(np.median(dd_all[:, idx], axis=1), 0.0, ss / max(dfo, 1), dfo, k,
                                 (math.pi / 2) * pool / len(idx), tol, conf_s)
            out[c] = sc
        return out

    shifts = shift_codes(cur - m["level"])
    if confirm is not None:
        c2, _, h2_, dd2, _ = judge(d[confirm], offs=est)
        apart = np.abs(dd - dd2) > np.hypot(half, h2_)
        code = np.where((code == 1) & ~((c2 == 1) & ~apart), 3, code).astype(np.int8)
        again = shift_codes(d[confirm] - m["level"])
        for c in off_classes:
            shifts[c] = np.where((shifts[c] == 1) & (again[c] != 1), 3, shifts[c]).astype(np.int8)
    return code, shifts, worse, half


def paired_stage(first, d, scur, tol, cls, sigma, r_fa=0.005, only_tp=True, honest=False):
    """Stage 2: every metric the first stage left inconclusive (throughput classes) is
    re-measured in PAIR_R paired rounds against the stored base artefact on this machine;
    the per-round log ratios' variance is pooled over the class (F screen as the shipped
    pool), Bonferroni at r_fa over the metrics re-measured in this run. The first stage ran
    at the other half of the 1%."""
    code1, sh, worse1, half1 = first
    n, M = code1.shape
    w = pair_w(cls, sigma)
    x = d["slow"][:, :, None] + math.sqrt(2) * w[None, :, None] * d["pair"]  # log(head/base) per round
    mean = x.mean(axis=-1)
    s2 = x.var(axis=-1, ddof=1)
    sel = (code1 == 3) | ((code1 == 0) & (np.abs(worse1) + half1 > tol) if honest else False)
    sel = sel & (np.isin(cls, TP)[None, :] if only_tp else True)
    STATS["paired"] = STATS.get("paired", 0) + int(sel.sum()); STATS["runs"] = STATS.get("runs", 0) + n
    nsel = np.maximum(sel.sum(axis=1), 1)
    conf2 = (1 - r_fa / nsel)[:, None]
    var = s2.copy()
    dfm = np.full((n, M), PAIR_R - 1.0)
    for c in np.unique(cls):
        idx = np.where(cls == c)[0]
        if c not in TP or len(idx) < 3:
            continue
        v = s2[:, idx]
        keep = np.ones_like(v, bool)
        for _ in range(10):
            nk = keep.sum(axis=1)
            sp = (v * keep).sum(axis=1) / np.maximum(nk, 1)
            crit = sp * vg.fdtri(PAIR_R - 1, (PAIR_R - 1) * np.maximum(nk, 1), 1 - 0.01)
            new = v <= crit[:, None]
            if (new == keep).all():
                break
            keep = np.where((new.sum(axis=1) >= 3)[:, None], new, keep)
        nk = keep.sum(axis=1)
        sp = (v * keep).sum(axis=1) / np.maximum(nk, 1)
        var[:, idx] = np.where(keep, np.maximum(v, sp[:, None]), v)
        dfm[:, idx] = np.where(keep, ((PAIR_R - 1) * nk)[:, None], PAIR_R - 1)
    half = vg.tq(conf2, dfm) * np.sqrt(var / PAIR_R)
    worse = -np.expm1(mean)
    reg = (worse > tol) & (worse > half)
    imp = (-worse > tol) & (-worse > half)
    inc = (half > tol) | (np.abs(worse) > tol)
    code2 = np.where(reg, 1, np.where(imp, 2, np.where(inc, 3, 0))).astype(np.int8)
    if honest:
        code2 = np.where((code2 == 0) & (np.abs(worse) + half > tol), 3, code2).astype(np.int8)
    code = np.where(sel, code2, code1).astype(np.int8)
    worse_o = np.where(sel, worse, worse1)
    half_o = np.where(sel, half, half1)
    return code, sh, worse_o, half_o


def paired_project(first, d, scur, tol, cls, sigma, r_fa=0.005, exclude=(3,), loo=False, kcheck=False, nsel_of=None):
    """Stage 2 as pytest_gpuperf.judging.stage2.judge_paired (a5ee751) judges it, less the
    per-process screen (one-way ANOVA over the process pairs; no process effect here): the
    figures stage 1 left INCONCLUSIVE in a throughput class (launch-bound excluded, as
    run.paired.candidates), d = log(head/base) per round, each figure's variance pooled over
    the RE-MEASURED figures of its class (at least 3; F screen at 1%, max(own, pool) with
    the pool's df), Bonferroni at r_fa over the figures re-measured (floor 0.99), the verdict
    in log units, UNCHANGED only with the whole interval inside the tolerance (status_of)."""
    code1, sh, worse1, half1 = first
    n, M = code1.shape
    x = pair_x(d, cls, sigma)
    R = x.shape[-1]
    mean = x.mean(axis=-1)
    s2 = x.var(axis=-1, ddof=1)
    tpc = [c for c in TP if c not in exclude]
    sel = (code1 == 3) & np.isin(cls, tpc)[None, :]
    if kcheck:  # added 2026-12-02 (gate-sim-2026-12-02-kcheck): the GPU kernel-time figures
        # (--lb-gpu's) that stage 1 found changed are re-measured too, the paired verdict final
        sel = sel | (np.isin(code1, (1, 2)) & KMASK[None, :] & np.isin(cls, tpc)[None, :])
    STATS["paired"] = STATS.get("paired", 0) + int(sel.sum()); STATS["runs"] = STATS.get("runs", 0) + n
    nsel = np.maximum(sel.sum(axis=1) if nsel_of is None else nsel_of, 1)
    conf2 = np.maximum(0.99, 1 - r_fa / nsel)[:, None]
    var = s2.copy()
    dfm = np.full((n, M), R - 1.0)
    groups = [(c, None) for c in tpc]
    if getattr(ARGS, "kpool_kind", False):  # added 2026-12-02 (gate-sim-2026-12-02-kpair): kernel-time figures
        # pool only with kernel-time figures of their class, wall-time figures with wall-time
        groups = [(c, k) for c in tpc for k in (False, True)]
    for c, kind in groups:
        idx = np.where((cls == c) & ((KMASK == kind) if kind is not None else True))[0]
        if len(idx) == 0:
            continue
        v, s = s2[:, idx], sel[:, idx]
        ok = s.sum(axis=1) >= 3
        keep = s.copy()
        done = ~ok
        for _ in range(10):
            nk = keep.sum(axis=1)
            if loo:  # added 2026-12-02 (gate-sim-2026-12-02-loo): each member against the
                # pool of the OTHER kept members; a screen leaving fewer than 3 leaves no pool
                nk_o = nk[:, None] - keep
                sp_o = ((v * keep).sum(axis=1)[:, None] - v * keep) / np.maximum(nk_o, 1)
                crit_o = sp_o * vg.fdtri(R - 1, (R - 1) * np.maximum(nk_o, 1), 1 - 0.01)
                new = s & ((v <= crit_o) | (nk_o <= 0))
            else:
                sp = (v * keep).sum(axis=1) / np.maximum(nk, 1)
                crit = sp * vg.fdtri(R - 1, (R - 1) * np.maximum(nk, 1), 1 - 0.01)
                new = s & (v <= crit[:, None])
            stop = (new.sum(axis=1) < 3) | (new == keep).all(axis=1)
            keep = np.where((done if loo else done | stop)[:, None], keep, new)
            done = done | stop
            if done.all():
                break
        nk = keep.sum(axis=1)
        sp = (v * keep).sum(axis=1) / np.maximum(nk, 1)
        pk = keep & ok[:, None]
        if loo:
            pk = pk & (keep.sum(axis=1) >= 3)[:, None]
        var[:, idx] = np.where(pk, np.maximum(v, sp[:, None]), v)
        dfm[:, idx] = np.where(pk, ((R - 1) * nk)[:, None], R - 1)
    half = vg.tq(conf2, dfm) * np.sqrt(var / R)
    tl = math.log1p(tol)
    wl = -mean  # higher is better: the worse direction in log units
    reg = (wl > tl) & (wl > half)
    imp = (-wl > tl) & (-wl > half)
    inc = (half > tl) | (np.abs(wl) > tl)
    code2 = np.where(reg, 1, np.where(imp, 2, np.where(inc, 3, 0))).astype(np.int8)
    # UNCHANGED only when the whole interval is within the tolerance (verdict._status)
    code2 = np.where((code2 == 0) & (np.abs(wl) + half > tl), 3, code2).astype(np.int8)
    code = np.where(sel, code2, code1).astype(np.int8)
    return code, sh, np.where(sel, -np.expm1(mean), worse1), np.where(sel, half, half1)


def paired_project_ext(first, d, scur, tol, cls, sigma, r_fa=0.005, loo=True, kcheck=True):
    """Added 2026-12-02 (gate-sim-2026-12-02-ext): the project's stage 2 in two looks. Look 1
    judges every re-measured figure on the PAIR_R rounds at half the stage's share (Bonferroni
    over the N figures re-measured); a figure still INCONCLUSIVE gets EXT_R more rounds (its
    test alone) and look 2 judges it on all PAIR_R + EXT_R rounds at the other half, still
    over N (so the two looks together spend the stage's share), pooled only with the other
    extended figures. EXT_R 0: the one look at the whole share (paired_project)."""
    if not EXT_R:
        return paired_project(first, d, scur, tol, cls, sigma, r_fa=r_fa, loo=loo, kcheck=kcheck)
    code1 = first[0]
    tpc = [c for c in TP if c != 3]
    sel = (code1 == 3) & np.isin(cls, tpc)[None, :]
    if kcheck:
        sel = sel | (np.isin(code1, (1, 2)) & KMASK[None, :] & np.isin(cls, tpc)[None, :])
    nsel = sel.sum(axis=1)
    a = paired_project(first, d, scur, tol, cls, sigma, r_fa=r_fa / 2, loo=loo, kcheck=kcheck)
    ext = sel & (a[0] == 3)
    STATS["ext"] = STATS.get("ext", 0) + int(ext.sum())
    hide = np.where(ext, np.int8(3), np.int8(4))  # only the extended figures are selected
    d2 = dict(d, pair=np.concatenate([d["pair"], d["pair_ext"]], axis=-1))
    counted = (STATS["paired"], STATS["runs"])  # look 2 re-measures no new benchmark
    b = paired_project((hide, first[1], first[2], first[3]), d2, scur, tol, cls, sigma,
                       r_fa=r_fa / 2, loo=loo, kcheck=False, nsel_of=nsel)
    STATS["paired"], STATS["runs"] = counted
    return (np.where(ext, b[0], a[0]).astype(np.int8), a[1],
            np.where(ext, b[2], a[2]), np.where(ext, b[3], a[3]))


def pair_w(cls, sigma):
    """Each metric's within-machine spread of one paired round: its class's (W_CLASS, at
    most its own sigma), its own sigma for launch-bound wall time and per-process figures,
    and --kpair for the kernel-time figures where that is given (measured on the H200:
    0.3% for a launch-bound step of 200 small kernels, 2-3% for a near-launch-bound matmul)."""
    w = np.array([sigma[j] if (cls[j] == 3 or j in PROCESS_LEVEL) else min(sigma[j], W_CLASS.get(int(cls[j]), sigma[j]))
                  for j in range(len(sigma))])
    if getattr(ARGS, "kpair", ""):  # one spread, or a comma list given to the kernel-time figures in turn
        spreads = [float(x) for x in str(ARGS.kpair).split(",")]
        kidx = np.where(KMASK)[0]
        w = w.copy()
        for n, j in enumerate(kidx):
            w[j] = spreads[n % len(spreads)]
    return w


def pair_x(d, cls, sigma):
    """log(head/base) per round (runs x metrics x PAIR_R), as paired_stage draws it."""
    w = pair_w(cls, sigma)
    return d["slow"][:, :, None] + math.sqrt(2) * w[None, :, None] * d["pair"]


def r_new_two_stage(d, scur, tol, cls, sigma=None, stage2="proj", **kw):
    """Stage 1 = vecgate.new at --fa (with confirmation when asked), then stage 2 at
    --fa2: 'proj' the project's rule, 'sim' evaluate.py's paired_stage, 'sim-exlb' the
    same with launch-bound left to stage 1."""
    first = r_new(d, scur, tol, cls, **kw)
    if stage2 == "projloo-kcheck-ext":
        return paired_project_ext(first, d, scur, tol, cls, sigma, r_fa=ARGS.fa2)
    if stage2 in ("proj", "projloo", "projloo-kcheck"):
        return paired_project(first, d, scur, tol, cls, sigma, r_fa=ARGS.fa2,
                              loo=stage2.startswith("projloo"), kcheck=stage2.endswith("kcheck"))
    return paired_stage(first, d, scur, tol, cls, sigma, r_fa=ARGS.fa2,
                        only_tp=True) if stage2 == "sim" else _paired_exlb(first, d, scur, tol, cls, sigma)


def _paired_exlb(first, d, scur, tol, cls, sigma):
    """evaluate.py's paired_stage with launch-bound figures never selected."""
    code1, sh, worse1, half1 = first
    hide = np.where(cls[None, :] == 3, np.int8(4), code1)  # not INCONCLUSIVE: not selected
    code, sh, worse, half = paired_stage((hide, sh, worse1, half1), d, scur, tol, cls, sigma, r_fa=ARGS.fa2)
    return np.where(cls[None, :] == 3, code1, code).astype(np.int8), sh, worse, half


def r_two_stage(d, scur, tol, cls, first="cand-pool", sigma=None, honest=False, **kw):
    save = vg.RUN_FA
    vg.RUN_FA = 0.005
    try:
        if first == "shipped":
            res = r_shipped(d, scur, tol, cls, **kw)
        else:
            res = r_cand(d, scur, tol, cls, prior=False, honest=honest, **kw)
    finally:
        vg.RUN_FA = save
    return paired_stage(res, d, scur, tol, cls, sigma, honest=honest)


STATS = {}


# ---------------------------------------------------------------- harness

def run_cell(rule, draws, scur, tol, cls, kw):
    code, sh, worse, half = rule(draws, scur, tol, cls, **kw)
    shreg = np.zeros(code.shape[0], bool)
    for c, s in sh.items():
        shreg |= s == 1
    return code, shreg, worse, half


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-dir", default=str(HERE.parent))
    ap.add_argument("--aa", type=int, default=20000)
    ap.add_argument("--det", type=int, default=4000)
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--tols", default="0.03,0.05")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--chunk", type=int, default=2000)
    ap.add_argument("--fa2", type=float, default=0.005, help="stage 2's share of the run's budget")
    ap.add_argument("--pair-r", type=int, default=6, help="paired rounds per re-measured benchmark")
    ap.add_argument("--ext-r", type=int, default=0, help="rule ...-ext: more rounds for a figure "
                    "look 1 leaves inconclusive (0: none drawn, every earlier output as it was)")
    ap.add_argument("--lb-gpu", type=float, default=0.0, help="scenario: launch-bound metrics timed on the GPU with this sigma")
    ap.add_argument("--fa", type=float, default=0.01, help="run-wide false-alarm budget of the new rule")
    ap.add_argument("--scens", default="aa,d5,d10,sub2,cw5,env5")
    ap.add_argument("--kstate", type=float, default=0.05, help="scenario kst: an A/A run whose "
                    "kernel-time figures (and its confirmation's) share a state offset of this sd "
                    "that the baseline's sessions and the paired rounds do not")
    ap.add_argument("--kpair", default="", help="the kernel-time figures' within-machine "
                    "spread of one paired round, or a comma list given to them in turn (empty: "
                    "their class's, as before)")
    ap.add_argument("--kpool-kind", action="store_true", help="stage 2 pools kernel-time "
                    "figures only with kernel-time figures of their class")
    ap.add_argument("--rules", default="shipped,shipped+confirm,shipped+confirm-same0.5,shipped+confirm-same1,oracle,cand,cand+confirm,cand-honest")
    global ARGS
    ARGS = ap.parse_args()
    sys.path.insert(0, ARGS.sim_dir)
    import sim
    ms, cls, sigma, scur, tau = sim.load_model()
    global PRIOR_DF, PAIR_R, EXT_R
    PAIR_R = ARGS.pair_r
    EXT_R = ARGS.ext_r
    PRIOR_DF = np.array([max(2.0, float(m.get("n") or 0) - 1) for m in ms])
    cls_orig = cls.copy()
    global KMASK
    KMASK = (cls == 3) if ARGS.lb_gpu else np.zeros(len(cls), bool)  # the kernel-time figures
    if ARGS.lb_gpu:  # launch-bound benchmarks timed on the GPU: quiet, model-step class
        lb = cls == 3
        sigma, scur, cls = sigma.copy(), scur.copy(), cls.copy()
        sigma[lb], scur[lb], cls[lb] = ARGS.lb_gpu, np.minimum(scur[lb], ARGS.lb_gpu / 2), 2
        print(f"ASSUMED: the {lb.sum()} launch-bound metrics timed on the GPU: sigma {ARGS.lb_gpu:.2%}, model class")
    M = len(sigma)
    tp = np.isin(cls, TP)
    tp3 = np.isin(cls_orig, (0, 1, 2))  # launch-bound excluded (as measured: with --lb-gpu they are model class)
    rules = {
        "shipped": (r_shipped, {}),
        "shipped+confirm": (r_shipped, {"confirm": "fresh"}),
        "shipped+confirm-same0.5": (r_shipped, {"confirm": "same"}),
        "shipped+confirm-same1": (r_shipped, {"confirm": "same"}),
        "oracle": (r_oracle, {}),
        "new": (r_new, {}),
        "new+confirm": (r_new, {"confirm": "fresh"}),
        "cand": (r_cand, {}),
        "cand+confirm": (r_cand, {"confirm": "fresh"}),
        "cand+confirm-same0.5": (r_cand, {"confirm": "same"}),
        "cand-honest": (r_cand, {"honest": True}),
        "cand-honest+confirm": (r_cand, {"honest": True, "confirm": "fresh"}),
        "cand-noloo": (r_cand, {"loo": False}),
        "cand-pool": (r_cand, {"prior": False}),
        "shipped-eb": (r_cand, {"prior": False, "eb": True, "min_off": 6, "loo": False, "shift_share": 0.0, "cur_term": "sum"}),
        "shipped-prior": (r_cand, {"prior": True, "min_off": 6, "loo": False, "shift_share": 0.0, "cur_term": "sum"}),
        "cand-pool-honest": (r_cand, {"prior": False, "honest": True}),
        "cand-pool+confirm": (r_cand, {"prior": False, "confirm": "fresh"}),
        "cand-pool+confirm-same0.5": (r_cand, {"prior": False, "confirm": "same"}),
        "shipped+paired": (r_two_stage, {"first": "shipped"}),
        "cand+paired": (r_two_stage, {"first": "cand-pool"}),
        "cand+paired-honest": (r_two_stage, {"first": "cand-pool", "honest": True}),
        "cand+paired+confirm": (r_two_stage, {"first": "cand-pool", "confirm": "fresh"}),
        "cand+paired-honest+confirm": (r_two_stage, {"first": "cand-pool", "honest": True, "confirm": "fresh"}),
        "cand+paired+confirm-same0.5": (r_two_stage, {"first": "cand-pool", "confirm": "same"}),
        "new+paired+confirm": (r_new_two_stage, {"stage2": "sim", "confirm": "fresh"}),
        "new+paired-exlb+confirm": (r_new_two_stage, {"stage2": "sim-exlb", "confirm": "fresh"}),
        "new+paired-proj+confirm": (r_new_two_stage, {"stage2": "proj", "confirm": "fresh"}),
        "new+paired-projloo+confirm": (r_new_two_stage, {"stage2": "projloo", "confirm": "fresh"}),
        "new+paired-projloo-kcheck+confirm": (r_new_two_stage, {"stage2": "projloo-kcheck", "confirm": "fresh"}),
        "new+paired-projloo-kcheck-ext+confirm": (r_new_two_stage, {"stage2": "projloo-kcheck-ext", "confirm": "fresh"}),
        "new+paired-proj": (r_new_two_stage, {"stage2": "proj"}),
        "cand-sum": (r_cand, {"cur_term": "sum"}),
        "cand-off6": (r_cand, {"min_off": 6}),
        "cand-plain": (r_cand, {"min_off": 6, "loo": False, "shift_share": 0.0, "prior": False, "cur_term": "sum"}),
    }
    names = ARGS.rules.split(",")
    print(f"run-wide budget of the new rule (stage 1): {ARGS.fa}; stage 2: {ARGS.fa2}; PAIR_R {PAIR_R}")
    print(f"gate-sim model: {M} metrics, throughput (incl. launch-bound) {tp.sum()}; seed {ARGS.seed}")
    for k in (int(x) for x in ARGS.ks.split(",")):
        for tol in (float(x) for x in ARGS.tols.split(",")):
            # ORACLE's variances: Monte-Carlo variance of the shipped statistic under A/A
            var_d = None
            if "oracle" in names:
                rng = np.random.default_rng([ARGS.seed, k, 999])
                dv = simulate(rng, 20000, k, cls, sigma, tau, np.zeros(M, bool), 0.0)
                mm = vg.fit(dv["base"], cls)
                _, _, _, ddv, _, _ = vg._judge(mm, dv["cur"], scur, tol, 0.999)
                var_d = ddv.var(axis=0)
                del dv, mm, ddv
            res = {nm: dict(fa=0, pm=np.zeros(M), dec=0, dec3=0, unx=0, un=0, n=0) for nm in names}
            for scen, N, x in (("aa", ARGS.aa, 0.0), ("d5", ARGS.det, 0.05), ("d10", ARGS.det, 0.10),
                               ("sub2", ARGS.det, 0.02), ("cw5", ARGS.det, 0.05), ("env5", ARGS.det, 0.05),
                               ("kst", ARGS.aa, 0.0)):
                if scen not in ARGS.scens.split(","):
                    continue
                sid = {"aa": 1, "d5": 2, "d10": 3, "sub2": 4, "cw5": 5, "env5": 6, "kst": 7}[scen]
                acc = {nm: dict(hit=0, tries=0, un=0, fail=0, n=0, shift=0, cwun=0, cwreg=0) for nm in names}
                for i0 in range(0, N, ARGS.chunk):
                    n = min(ARGS.chunk, N - i0)
                    rng = np.random.default_rng([ARGS.seed, k, int(tol * 1000), sid, i0])
                    mask = np.zeros((n, M), bool)
                    if scen in ("d5", "d10", "sub2"):
                        for i in range(n):
                            mask[i, rng.choice(M, 10, replace=False)] = True
                    elif scen in ("cw5", "env5"):
                        mask[:, cls == 2] = True
                    base_state = rng.bit_generator.state
                    for nm in names:
                        rule, kw = rules[nm]
                        rho = float(nm.split("same")[1]) if "same" in nm else 0.0
                        rng.bit_generator.state = base_state  # every rule sees the same runs
                        dd = simulate(rng, n, k, cls, sigma, tau, mask, x, rho=rho, env=scen == "env5")
                        if scen == "kst":  # its own generator: the other draws stay as they were
                            st = np.random.default_rng([ARGS.seed, k, int(tol * 1000), 77, i0]).standard_normal((n, M))
                            off = np.where(KMASK[None, :], st * ARGS.kstate, 0.0)
                            dd["cur"] = dd["cur"] + off
                            dd["fresh"] = dd["fresh"] + off
                        kw = dict(kw, var_d=var_d) if nm == "oracle" else kw
                        kw = dict(kw, sigma=sigma) if "paired" in nm else kw
                        code, shreg, worse, half = run_cell(rule, dd, scur, tol, cls, kw)
                        a = acc[nm]
                        if scen == "aa":
                            r = res[nm]
                            r["fa"] += int(((code == 1).any(axis=1) | shreg).sum())
                            r["pm"] += (code == 1).sum(axis=0)
                            dec = (code[:, tp] <= 2)
                            r["dec"] += int(dec.sum())
                            r["dec3"] += int((code[:, tp3] <= 2).sum())
                            un = code[:, tp] == 0
                            r["un"] += int(un.sum())
                            if nm.startswith("new") and vg.LOG_UNITS:  # 3e41962: the interval in log units
                                wl = np.abs(np.log1p(-worse[:, tp]))
                                r["unx"] += int((un & (wl + half[:, tp] > math.log1p(tol))).sum())
                            else:
                                r["unx"] += int((un & (np.abs(worse[:, tp]) + half[:, tp] > tol)).sum())
                            r["n"] += n
                        elif scen == "kst":
                            a["fail"] += int(((code == 1).any(axis=1) | shreg).sum())
                            a["hit"] += int(np.isin(code[:, KMASK], (1, 2)).sum())
                            a["tries"] += int(n * max(1, KMASK.sum()))
                            a["n"] += n
                        elif scen in ("cw5", "env5"):
                            a["fail"] += int(((code == 1).any(axis=1) | shreg).sum())
                            a["shift"] += int(shreg.sum())
                            a["cwun"] += int((code[:, cls == 2] == 0).sum())
                            a["cwreg"] += int((code[:, cls == 2] == 1).sum())
                            a["n"] += n
                        else:
                            sel = mask & tp[None, :]
                            a["hit"] += int(((code == 1) & sel).sum())
                            a["un"] += int(((code == 0) & sel).sum())
                            a["tries"] += int(sel.sum())
                            a["fail"] += int(((code == 1).any(axis=1) | shreg).sum())
                            a["n"] += n
                if scen != "aa":
                    for nm in names:
                        res[nm][scen] = acc[nm]
            print(f"\n== k={k} tol={tol:.0%}  (A/A {ARGS.aa} runs; detection {ARGS.det} runs per row)")
            print(f"{'rule':26s} {'run FA':>7s} {'95% CP':>17s} {'worst metric':>13s} {'tput decided':>12s} {'excl.LB':>7s} "
                  f"{'UNCH crossing':>13s} {'det5%':>6s} {'det10%':>6s} {'UNCH@5%':>7s} {'reg@2%':>6s} {'cw5%: fails':>11s} {'model UNCH':>10s} {'env5% fails':>11s}"
                  + (f" {'kst fails':>9s} {'kst chg':>7s}" if "kst" in ARGS.scens.split(",") else ""))
            if STATS:
                print(f"   paired stage: {STATS['paired'] / STATS['runs']:.1f} benchmarks re-measured per run (all scenarios, all paired rules)"
                      + (f"; extended: {STATS['ext'] / STATS['runs']:.2f} per run" if STATS.get("ext") else ""))
                STATS.clear()
            for nm in names:
                r = res[nm]
                n = r["n"]
                lo, hi = cp(r["fa"], n)
                wm = r["pm"].max()
                wlo, whi = cp(int(wm), n)
                nil = dict(hit=0, tries=1, un=0, fail=0, n=1, shift=0, cwun=0, cwreg=0)
                d5, d10, s2, cw, en, ks = (r.get(x, nil) for x in ("d5", "d10", "sub2", "cw5", "env5", "kst"))
                print(f"{nm:26s} {r['fa']/n:7.3%} [{lo:6.3%},{hi:6.3%}] {wm/n:7.3%} m{int(r['pm'].argmax()):<3d} "
                      f"{r['dec']/(n*tp.sum()):11.1%} {r['dec3']/(n*tp3.sum()):7.1%} {r['unx']/max(1,r['un']):12.2%} "
                      f"{d5['hit']/d5['tries']:6.1%} {d10['hit']/d10['tries']:6.1%} {d5['un']/d5['tries']:7.1%} "
                      f"{s2['hit']/s2['tries']:6.2%} {cw['fail']/cw['n']:11.1%} {cw['cwun']/(cw['n']*(cls==2).sum()):10.1%} {en['fail']/en['n']:11.1%}"
                      + (f" {ks['fail']/ks['n']:9.3%} {ks['hit']/ks['tries']:7.2%}" if "kst" in ARGS.scens.split(",") else ""), flush=True)


if __name__ == "__main__":
    main()

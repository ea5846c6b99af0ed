"""The shipped verdict rule (pytest_gpuperf.baseline.judge.judge_run + confirmation.confirm,
as tools/gate_sim_project.py feeds it gate-sim runs) re-written in numpy over many runs at
once, so that A/A false-alarm rates near 0.1% can be resolved in minutes on 2 cores.
check.py verifies it verdict by verdict against the shipped code. Also: the candidate rules
of the statistics audit (cand_*), on the same arrays.

All arrays in log units: base (n, M, k), cur (n, M), cur2 (n, M) the fresh-process
re-measurement; scur (M,) the run's own relative s.e.; cls (M,) gate-sim class indices.
Codes: 0 unchanged, 1 regressed, 2 improved, 3 inconclusive.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import fdtri, ndtri, stdtrit

CLASSES = ["bandwidth", "compute", "model", "launch-bound", "memory", "recorded"]
OFFSET_CLASSES = (0, 1, 2)
UNPOOLED = (5,)
MIN_OFF, MIN_POOL, SCREEN_P = 6, 3, 0.01
SET_ASIDE_MIN, SET_ASIDE_SDS, MIN_SET_ASIDE = 0.05, 10.0, 4
RUN_FA = 0.01
SCREEN = "loo"  # new()'s class-pool screen: dc03e3e's leave-one-out ("self": 4be77c1's)


def zq(conf):
    return ndtri(1 - (1 - np.asarray(conf, float)) / 2)


def tq(conf, df):
    df = np.asarray(df, float)
    safe = np.where(np.isfinite(df), np.maximum(1, np.round(df)), 1.0)
    out = stdtrit(safe, 1 - (1 - np.asarray(conf, float)) / 2)
    return np.where(~np.isfinite(df) | (df > 1e6), zq(conf), out)


def _offsets(L):
    """noise._offsets: alternating medians, 20 iterations, per-run convergence at 1e-9."""
    n, mc, k = L.shape
    mu = np.median(L, axis=-1)
    b = None
    done = np.zeros(n, bool)
    for _ in range(20):
        dev = np.median(L - mu[..., None], axis=1)
        new = dev - dev.mean(axis=1, keepdims=True)
        mu_new = (L - new[:, None, :]).mean(axis=-1)
        if b is None:
            b, mu = new, mu_new
            continue
        conv = np.abs(new - b).max(axis=1) < 1e-9
        upd = ~done
        b = np.where(upd[:, None], new, b)
        mu = np.where(upd[:, None], mu_new, mu)
        done |= conv
        if done.all():
            break
    return b


def fit(base, cls, offsets=True, set_aside=True, min_off=None, screen="self"):
    """NoiseModel.fit for gate-sim's aligned sessions. Returns a dict of (n, M) arrays:
    level, var, df, k, aside, aside_dev, and per class: b (n, k) offsets, pooled var/df.
    screen: "self" (up to 4be77c1: each metric F-tested against the pool of the kept
    metrics, itself included) or "loo" (dc03e3e's noise._screened: against the pool of the
    OTHER kept metrics)."""
    n, M, k = base.shape
    out = dict(level=np.empty((n, M)), var=np.empty((n, M)), df=np.empty((n, M)),
               k=np.empty((n, M)), aside=np.zeros((n, M), bool), aside_dev=np.full((n, M), np.nan),
               own_var=np.empty((n, M)), pooled=np.zeros((n, M), bool),
               classes={})  # fmt: skip
    for c in np.unique(cls):
        idx = np.where(cls == c)[0]
        L = base[:, idx, :]
        mc = len(idx)
        b = _offsets(L) if (offsets and c in OFFSET_CLASSES and mc >= (MIN_OFF if min_off is None else min_off)) else None
        R = L - b[:, None, :] if b is not None else L
        level = R.mean(axis=-1)
        var = R.var(axis=-1, ddof=1)
        nn = np.full((n, mc), float(k))
        aside = np.zeros((n, mc), bool)
        adev = np.full((n, mc), np.nan)
        if set_aside and k >= MIN_SET_ASIDE:
            tsd = np.sqrt(np.median(var, axis=1))
            bound = np.maximum(math.log1p(SET_ASIDE_MIN), SET_ASIDE_SDS * tsd)
            devs = np.empty((n, mc, k))
            for i in range(k):
                devs[..., i] = R[..., i] - np.median(np.delete(R, i, axis=-1), axis=-1)
            far = np.argmax(np.abs(devs), axis=-1)
            dev = np.take_along_axis(devs, far[..., None], axis=-1)[..., 0]
            aside = np.abs(dev) > bound[:, None]
            keepm = np.ones((n, mc, k), bool)
            np.put_along_axis(keepm, far[..., None], False, axis=-1)
            Ro = R[keepm].reshape(n, mc, k - 1)
            level = np.where(aside, Ro.mean(axis=-1), level)
            var = np.where(aside, Ro.var(axis=-1, ddof=1), var)
            nn = np.where(aside, k - 1.0, nn)
            adev = np.where(aside, dev, np.nan)
        scale = mc / (mc - 1) if (b is not None and mc > 1) else 1.0
        v = var * scale
        d = nn - 1
        keep = np.zeros((n, mc), bool)
        pooled_var = np.full(n, np.nan)
        pooled_df = np.zeros(n)
        if c not in UNPOOLED:
            voters = ~aside
            can = voters.sum(axis=1) >= MIN_POOL
            keep = voters & can[:, None]
            active = can.copy()
            for _ in range(10):
                if screen == "loo":
                    new = voters & _loo_pass(v, keep, k)
                else:
                    nk = keep.sum(axis=1)
                    dfp = (k - 1) * np.maximum(nk, 1)
                    sp = (v * keep).sum(axis=1) / np.maximum(nk, 1)
                    crit = sp * fdtri(k - 1, dfp, 1 - SCREEN_P)
                    new = voters & (v <= crit[:, None])
                stop = (new == keep).all(axis=1) | (new.sum(axis=1) < MIN_POOL)
                upd = active & ~stop
                keep = np.where(upd[:, None], new, keep)
                active &= ~stop
                if not active.any():
                    break
            nk = keep.sum(axis=1)
            pooled_df = np.where(can, (k - 1) * nk, 0.0)
            pooled_var = np.where(can, (v * keep).sum(axis=1) / np.maximum(nk, 1), np.nan)
        pv = pooled_var[:, None]
        out["level"][:, idx] = level
        out["var"][:, idx] = np.where(keep, np.maximum(v, pv), v)
        out["df"][:, idx] = np.where(keep, pooled_df[:, None], d)
        out["k"][:, idx] = nn
        out["aside"][:, idx] = aside
        out["aside_dev"][:, idx] = adev
        out["own_var"][:, idx] = v
        out["pooled"][:, idx] = keep
        out["classes"][int(c)] = dict(idx=idx, b=b, pooled_var=pooled_var, pooled_df=pooled_df)
    return out


def _loo_pass(v, keep, k):
    """One pass of noise._screened: metric j passes when its variance is within the F
    bound (SCREEN_P) of the pool of the OTHER kept metrics (keep minus j); a metric with no
    other kept metric passes. Every voter has k - 1 df here (gate-sim: aligned sessions, the
    set-aside ones are not voters)."""
    mc = v.shape[1]
    others = 1.0 - np.eye(mc)
    vk = np.where(keep, v, 0.0)
    cnt = keep.astype(float) @ others  # (n, mc): kept metrics other than j
    sp = (vk @ others) / np.maximum(cnt, 1)
    crit = sp * fdtri(k - 1, (k - 1) * np.maximum(cnt, 1), 1 - SCREEN_P)
    return (cnt <= 0) | (v <= crit)


def decide(d, scur, var, df, k, extra, tol, conf):
    """verdict.decide, vectorised: codes, worse, half."""
    z = zq(conf)
    t = tq(conf, df)
    half = np.hypot(z * scur, t * np.sqrt(var * (1 + 1 / np.maximum(1, k)) + extra))
    worse = -np.expm1(d)
    reg = (worse > tol) & (worse > half)
    imp = (-worse > tol) & (-worse > half)
    inc = (half > tol) | (np.abs(worse) > tol)
    code = np.where(reg, 1, np.where(imp, 2, np.where(inc, 3, 0))).astype(np.int8)
    return code, worse, half


def _judge(m, cur, scur, tol, conf, offs=None, mine=None):
    """judge_run's per-item and class-shift verdicts given a fitted model `m`.
    offs: {class: (n,) run offsets} given (a confirmation run), else estimated from cur.
    mine: (n, M) bool, the items present (a confirmation run judges the flagged only)."""
    n, M = cur.shape
    d = cur - m["level"]
    extra = np.zeros((n, M))
    off_classes = [c for c, f in m["classes"].items() if f["b"] is not None]
    est = {}
    for c in off_classes:
        f = m["classes"][c]
        idx = f["idx"]
        off = offs[c] if offs is not None else np.median(d[:, idx], axis=1)
        est[c] = off
        d[:, idx] -= off[:, None]
        pool = np.where(np.isnan(f["pooled_var"])[:, None], m["var"][:, idx], f["pooled_var"][:, None])
        extra[:, idx] = (math.pi / 2) * pool / len(idx)
    code, worse, half = decide(d, scur[None, :], m["var"], m["df"], m["k"], extra, tol, conf)
    asd = m["aside"] & (d * np.nan_to_num(m["aside_dev"]) > 0) & (np.abs(d) >= np.abs(np.nan_to_num(m["aside_dev"])) / 2)
    code = np.where(asd, 3, code).astype(np.int8)
    # class shifts
    ss, dfo = np.zeros(n), 0
    for c in off_classes:
        b = m["classes"][c]["b"]
        ss = ss + (b**2).sum(axis=1)
        dfo += b.shape[1] - 1
    shifts = {}
    for c in off_classes:
        f = m["classes"][c]
        kk = f["b"].shape[1]
        cnt = len(f["idx"]) if mine is None else mine[:, f["idx"]].sum(axis=1)
        pool = np.nan_to_num(f["pooled_var"], nan=0.0)
        ex = (math.pi / 2) * pool / np.maximum(cnt, 1)
        conf_s = np.asarray(conf, float).reshape(-1) if np.ndim(conf) else conf
        sc, _, _ = decide(est[c], 0.0, ss / dfo, dfo, kk, ex, tol, conf_s)
        if mine is not None:
            sc = np.where(cnt > 0, sc, -1)  # no verdict
        shifts[c] = sc
    return code, worse, half, d, shifts, est


def shipped(base, cur, scur, tol, cls, cur2=None, m=None):
    """The shipped gate. Returns codes (n, M), shift codes {class: (n,)}."""
    n, M, k = base.shape
    if m is None:
        m = fit(base, cls)
    n_off = sum(1 for f in m["classes"].values() if f["b"] is not None)
    conf = max(0.99, 1 - RUN_FA / (M + n_off))
    code, worse, half, d, shifts, est = _judge(m, cur, scur, tol, conf)
    if cur2 is None:
        return code, shifts
    flagged = code == 1
    for c, sc in shifts.items():
        flagged[:, m["classes"][c]["idx"]] |= (sc == 1)[:, None]
    nflag = flagged.sum(axis=1)
    conf2 = np.maximum(0.99, 1 - RUN_FA / (nflag + n_off))[:, None]
    code2, worse2, half2, d2, shifts2, _ = _judge(m, cur2, scur, tol, conf2, offs=est, mine=flagged)
    apart = np.abs(d - d2) > np.hypot(half, half2)
    ok = (code2 == 1) & ~apart
    final = np.where((code == 1) & ~ok, 3, code).astype(np.int8)
    fshift = {}
    for c, sc in shifts.items():
        fshift[c] = np.where((sc == 1) & (shifts2[c] != 1), 3, sc).astype(np.int8)
    return final, fshift


# ============================================================================ the rule of 4be77c1
# judge_run + confirmation.confirm at commit 4be77c1 (tools/gate_sim_project.py's feed: every
# figure higher-is-better, one GPU, no derived or per-clock figures). check_new.py verifies it
# verdict by verdict against the project's adapter.

NEW_MIN_OFF = 4  # noise.MIN_OFFSET_METRICS: classes of 4-5 figures get offsets too
SHIFT_SHARE = 0.5  # judge.SHIFT_SHARE at eaa6c9e (0.25 up to c268191): of the run's budget, for the class-shift lines
MIN_FRESH_OTHERS = 6  # judge.MIN_FRESH_OTHERS
MIN_RUN_OTHERS = NEW_MIN_OFF - 1  # noise.MIN_RUN_OTHERS
Z99 = float(zq(0.99))  # judge.clamp_offsets: z at verdict.CONFIDENCE
LAUNCH = 3  # gate-sim's launch-bound class (noise.LAUNCH)
# 3e41962: verdict._status compares in log units; noise.NoiseModel floors every launch-bound
# spread at LAUNCH_FLOOR between processes (df infinite where floored). Set both to the
# dc03e3e values (False, None) to get the rule before it.
LOG_UNITS = True
LAUNCH_FLOOR = 0.30  # noise.LAUNCH_FLOOR
# c2cb344: offsets.bounded_by_class_line (False gives 3e41962's rule). c2cb344's confirmation
# change (_merge reports the smaller figure without the "apart" condition) moves no status:
# at 3e41962 too, a regression held in the fresh process stood REGRESSED, apart or not.
BOUNDED_BY_LINE = True
# c268191: only a figure whose verdict RESTS on the bound defers to its line: a bounded
# REGRESSED/IMPROVED figure re-judged with the unclamped offsets (the leave-one-out median,
# or the given offset in a confirmation run, before clamp_offsets) gets another status.
# False gives c2cb344's rule (every bounded REGRESSED/IMPROVED figure defers).
RESTS_ON_BOUND = True


def floor_launch(m):
    """noise.NoiseModel at 3e41962: a launch-bound figure's spread (var, df) becomes
    (log1p(LAUNCH_FLOOR)^2, inf) where its var is below that (finite vars only). Only the
    per-figure spread: the class fit's pooled_var is not floored (the launch-bound class
    has no offsets, so it is not used). Returns a copy of m; m is not changed."""
    if LAUNCH_FLOOR is None:
        return m
    fv = math.log1p(LAUNCH_FLOOR) ** 2
    out = dict(m)
    lb = np.zeros(m["var"].shape[1], bool)
    if LAUNCH in m["classes"]:
        lb[m["classes"][LAUNCH]["idx"]] = True
    low = lb[None, :] & np.isfinite(m["var"]) & (m["var"] < fv)
    out["var"] = np.where(low, fv, m["var"])
    out["df"] = np.where(low, np.inf, m["df"])
    out["floored"] = low
    return out


def decide_new(d, scur, var, df, k, extra, tol, conf):
    """verdict.decide at 4be77c1: the current session counts once (max with t^2 var), and
    UNCHANGED only when the whole interval is inside the tolerance. With LOG_UNITS
    (3e41962's verdict._status) the change is compared in log units: worse_log = -d (every
    gate-sim figure is higher-is-better) against log1p(tol) and the half-width; else (up
    to dc03e3e) the relative change worse = -expm1(d) against tol and the half-width.
    Returns the relative `worse` either way (as Verdict.worse)."""
    z = zq(conf)
    t = tq(conf, df)
    ref = t * np.sqrt(var / np.maximum(1, k) + extra)
    half = np.hypot(ref, np.maximum(t * np.sqrt(var), z * scur))
    worse = -np.expm1(d)
    w, tl = (-np.asarray(d, float), math.log1p(tol)) if LOG_UNITS else (worse, tol)
    reg = (w > tl) & (w > half)
    imp = (-w > tl) & (-w > half)
    inc = (half > tl) | (np.abs(w) > tl) | (np.abs(w) + half > tl)
    code = np.where(reg, 1, np.where(imp, 2, np.where(inc, 3, 0))).astype(np.int8)
    return code, worse, half


def offset_var(m, k):
    """judge._offset_var for every offset class: {class: (var, df)}; a class whose session
    offsets are clearly larger than the others' (F at SCREEN_P) keeps its own."""
    own = {c: ((f["b"] ** 2).sum(axis=1) / (k - 1), k - 1) for c, f in m["classes"].items()
           if f["b"] is not None and k >= 2}  # fmt: skip
    out = {}
    louder = {}
    for c in own:
        rest = [o for o in own if o != c]
        if not rest:
            louder[c] = np.zeros_like(own[c][0], bool)
            continue
        dfr = sum(own[o][1] for o in rest)
        vr = sum(own[o][0] * own[o][1] for o in rest) / dfr
        louder[c] = (vr > 0) & (own[c][0] > vr * fdtri(own[c][1], dfr, 1 - SCREEN_P))
    for c in own:
        # pooled over the classes that are not louder (per run), never below its own
        inpool = {o: ~louder[o] for o in own}
        dfp = sum(np.where(inpool[o], own[o][1], 0) for o in own)
        vp = sum(np.where(inpool[o], own[o][0] * own[o][1], 0.0) for o in own) / np.maximum(dfp, 1)
        mine_v, mine_df = own[c]
        var = np.where(louder[c], mine_v, np.maximum(vp, mine_v))
        df = np.where(louder[c], mine_df, dfp)
        out[c] = (var, df)
    return out


def _loo(x):
    """noise.leave_one_out along axis 1: the median of the other columns."""
    mc = x.shape[1]
    if mc - 1 < MIN_RUN_OTHERS:
        return None
    return np.stack([np.median(np.delete(x, i, axis=1), axis=1) for i in range(mc)], axis=1)


def _judge_new(m, cur, scur, tol, fa, ov, mine=None, given=None):
    """judge_run at 4be77c1 on `cur` (n, M). mine: (n, M) bool, the figures present (a
    confirmation run judges the flagged only); given: the first run's removed offsets
    (n, M) (a confirmation run). Returns code, worse, half, g_after, removed, shifts
    {class: codes (n,), -1 where no line}."""
    n, M = cur.shape
    k = m["k"].max()
    if mine is None:
        mine = np.ones((n, M), bool)
    g = cur - m["level"]  # better space: every figure of gate-sim is higher-is-better
    off = np.zeros((n, M))
    off_unb = np.zeros((n, M))
    cnt = np.ones((n, M))
    has = np.zeros((n, M), bool)
    extra = np.zeros((n, M))
    off_classes = [c for c, f in m["classes"].items() if f["b"] is not None]
    est, est_n = {}, {}
    for c in off_classes:
        f = m["classes"][c]
        idx = f["idx"]
        mc = len(idx)
        pres = mine[:, idx]
        nc = pres.sum(axis=1)
        gi = g[:, idx]
        # the class line's estimate: median of the present figures (>= MIN_OFFSET_METRICS)
        gm = np.where(pres, gi, np.nan)
        with np.errstate(all="ignore"):
            med = np.nanmedian(np.where(nc[:, None] > 0, gm, 0.0), axis=1)
        est[c] = np.where(nc >= NEW_MIN_OFF, med, np.nan)
        est_n[c] = nc
        # run offsets: leave-one-out over the present figures (own), else the given ones
        o = np.full((n, mc), np.nan)
        on = np.zeros((n, mc))
        if given is None:
            lo = _loo(gi)
            if lo is not None:
                o, on = lo, np.full((n, mc), mc - 1.0)
        else:
            own_runs = (nc - 1 >= MIN_FRESH_OTHERS)
            for nn in np.unique(nc[own_runs]):
                rows = np.where(own_runs & (nc == nn))[0]
                # the present figures of these runs, in column order
                sub = pres[rows]
                cols = np.argsort(~sub, axis=1, kind="stable")[:, :nn]
                xs = np.take_along_axis(gi[rows], cols, axis=1)
                lo = _loo(xs)
                if lo is None:
                    continue
                tmp = np.full((len(rows), mc), np.nan)
                np.put_along_axis(tmp, cols, lo, axis=1)
                o[rows] = tmp
                on[rows] = np.where(np.isnan(tmp), 0.0, nn - 1.0)
            gv, gn, gb = given["off"][:, idx], given["n"][:, idx], given["bounded"][:, idx]
            use = ~own_runs[:, None] & np.broadcast_to(True, (n, mc))
            o = np.where(use, gv, o)
            on = np.where(use, gn, on)
        bounded = np.zeros((n, mc), bool) if given is None else np.where(
            ~(nc - 1 >= MIN_FRESH_OTHERS)[:, None], given["bounded"][:, idx], False)
        # clamp_offsets: only within the range of the baseline sessions' offsets
        b = f["b"]
        pool = np.where(np.isnan(f["pooled_var"])[:, None], m["var"][:, idx], f["pooled_var"][:, None])
        u = Z99 * np.sqrt((math.pi / 2) * pool / np.maximum(1, on))
        lo_b = b.min(axis=1)[:, None] - u
        hi_b = b.max(axis=1)[:, None] + u
        ok = ~np.isnan(o)
        off_unb[:, idx] = np.where(ok, o, 0.0)  # judge_run's `unbounded`: before clamp_offsets
        clip = ok & ~bounded & ((o < lo_b) | (o > hi_b))
        o = np.where(clip, np.minimum(np.maximum(o, lo_b), hi_b), o)
        bounded = bounded | clip
        off[:, idx] = np.where(ok, o, 0.0)
        cnt[:, idx] = np.where(ok, on, 1.0)
        has[:, idx] = ok
        extra[:, idx] = np.where(ok, (math.pi / 2) * pool / np.maximum(1, on), 0.0)
        m.setdefault("_removed_bounded", {})[c] = bounded
    # budget: the figures judged and the class lines estimated in this run
    n_shift = sum((est_n[c] >= NEW_MIN_OFF).astype(int) for c in off_classes) if off_classes else np.zeros(n, int)
    n_shift = np.asarray(n_shift)
    nj = mine.sum(axis=1)
    share = np.where(n_shift > 0, SHIFT_SHARE, 0.0)
    conf = np.maximum(0.99, 1 - fa * (1 - share) / np.maximum(1, nj))[:, None]
    conf_s = np.where(n_shift > 0, np.maximum(0.99, 1 - fa * share / np.maximum(1, n_shift)), 0.99)
    def verdict(offs):
        """judge_run's verdict(it, offs): decide, the set-aside check, never_by_the_offset."""
        ga = g - offs
        code, worse, half = decide_new(ga, scur[None, :], m["var"], m["df"], m["k"], extra, tol, conf)
        adev = np.nan_to_num(m["aside_dev"])
        asd = m["aside"] & (ga * adev > 0) & (np.abs(ga) >= np.abs(adev) / 2)
        # never by the offset: not UNCHANGED where the figure moved beyond the tolerance, not
        # IMPROVED where it did not improve beyond it (only figures an offset was removed from)
        raw_worse = -np.expm1(g)
        flip = has & (((code == 0) & (np.abs(raw_worse) > tol)) | ((code == 2) & (-raw_worse <= tol)))
        code = np.where(asd | flip, 3, code).astype(np.int8)
        return np.where(mine, code, -1).astype(np.int8), worse, half, ga

    code, worse, half, ga = verdict(off)
    code_unb = verdict(off_unb)[0] if RESTS_ON_BOUND else None
    removed = dict(off=off, n=cnt, bounded=np.zeros((n, M), bool))
    for c in off_classes:
        removed["bounded"][:, m["classes"][c]["idx"]] = m["_removed_bounded"][c]
    del m["_removed_bounded"]
    shifts = {}
    for c in off_classes:
        f = m["classes"][c]
        v, dfo = ov[c]
        pool = np.nan_to_num(f["pooled_var"], nan=0.0)
        nc = est_n[c]
        ex = (math.pi / 2) * pool / np.maximum(nc, 1)
        sc, _, _ = decide_new(np.nan_to_num(est[c]), 0.0, v, dfo, k, ex, tol, conf_s)
        shifts[c] = np.where(nc >= NEW_MIN_OFF, sc, -1).astype(np.int8)
    if BOUNDED_BY_LINE:
        rests = removed["bounded"]
        if RESTS_ON_BOUND:  # c268191: only where the unclamped verdict's status differs
            rests = rests & ((code == 1) | (code == 2)) & (code_unb != code)
        code = bounded_by_line(m, code, rests, shifts)
    return code, worse, half, ga, removed, shifts


def bounded_by_line(m, code, bounded, shifts):
    """offsets.bounded_by_class_line at c2cb344: a REGRESSED or IMPROVED figure whose run
    offset was clamped (bounded) becomes INCONCLUSIVE unless its class line (this run's,
    before any confirmation) has the same status; no line (fewer than MIN_OFFSET_METRICS
    present, code -1) counts as "not judged". Runs after never_by_the_offset and the
    set-aside check (both only make INCONCLUSIVE), as judge_run does. Returns a new array."""
    out = code.copy()
    for c, sc in shifts.items():
        idx = m["classes"][c]["idx"]
        cd = code[:, idx]
        drop = bounded[:, idx] & ((cd == 1) | (cd == 2)) & (sc[:, None] != cd)
        out[:, idx] = np.where(drop, 3, cd)
    return out.astype(np.int8)


def new(base, cur, scur, tol, cls, cur2=None, m=None, fa=RUN_FA, full=False):
    """The gate at eaa6c9e (c268191's RESTS_ON_BOUND, SHIFT_SHARE 0.5) on top of c2cb344 (4be77c1's judge_run, dc03e3e's screen, 3e41962's log-unit
    verdict and launch-bound floor, c2cb344's bounded_by_class_line; see LOG_UNITS,
    LAUNCH_FLOOR, SCREEN, BOUNDED_BY_LINE): codes (n, M), shift codes {class: (n,)}; with cur2, the fresh
    process re-measures the flagged figures (regressed ones, and every figure of a class
    whose line regressed) and a regression stands only where it regresses there too."""
    n, M, k = base.shape
    if m is None:
        m = fit(base, cls, min_off=NEW_MIN_OFF, screen=SCREEN)
    m = floor_launch(m)
    ov = offset_var(m, k)
    code, worse, half, ga, removed, shifts = _judge_new(m, cur, scur, tol, fa, ov)
    if cur2 is None:
        return (code, shifts, worse, half) if full else (code, shifts)
    flagged = code == 1
    for c, sc in shifts.items():
        flagged[:, m["classes"][c]["idx"]] |= (sc == 1)[:, None]
    code2, _, _, _, _, shifts2 = _judge_new(m, cur2, scur, tol, fa, ov, mine=flagged, given=removed)
    final = np.where((code == 1) & (code2 != 1), 3, code).astype(np.int8)
    fshift = {c: np.where((sc == 1) & (shifts2[c] != 1), 3, sc).astype(np.int8) for c, sc in shifts.items()}
    return (final, fshift, worse, half) if full else (final, fshift)

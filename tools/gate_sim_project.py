"""The project's verdict rule (pytest_gpuperf.judging.judge.judge_run, the shipped code) run
through ../shared/gate-sim's harness: each simulated run becomes baseline entries and
Results, judged as pytest would judge them, with the fresh-process confirmation when asked.

    python tools/gate_sim_project.py --sim-dir ../shared/gate-sim --runs 1000 [--confirm]
                                     [--ks 3,5,10] [--tol 0.05]
    python tools/gate_sim_project.py --sim-dir ../shared/gate-sim --aa-only --runs 4000 --jobs 16
    python tools/gate_sim_project.py --sim-dir ../shared/gate-sim --aa-only --runs 20000 \
        --confirm --paired [--pair-rounds 6] [--lb-gpu 0.011] --tol 0.03 --jobs 2

Prints gate-sim's columns for the rule (run-wide false alarms, the worst metric's, detection
of 5% and 7.5% slowdowns, inconclusive shares). About 10 minutes per 1,000 runs and k on a
2-core machine. docs/performance.md has the figures.

--paired adds stage 2 (paired/stage.py) after stage 1 and its confirmation: the figures
paired.stage.candidates picks (throughput classes left inconclusive or found changed,
launch-bound wall time excluded)
are judged by paired.judge.judge_paired on simulated paired rounds, log(head/base) per
round = the run's true change + sqrt(2) * the figure's within-machine spread (W_CLASS, as
gate-sim's fast/evaluate.py `paired_stage`) * a standard normal, in PAIRS process pairs with
no process effect. The run's budget (--false-alarm) is split as the plugin splits it:
stage 1 at (1 - STAGE_SHARE), stage 2 at STAGE_SHARE.

--kernels (with --lb-gpu): the launch-bound figures are what the plugin makes of such work,
a launch-bound wall-time `throughput` (floored, never re-measured) beside a GPU kernel-time
`throughput_kernels` with the simulated values, simulated in the model class (its session
offsets) and judged, as the plugin judges every kernel-time figure since 2026-12-03, in the
kernel-time class (no offsets; core.figures.KERNEL_TIME); the kernel figure is the one
counted (as fast/evaluate.py's --lb-gpu counts it). --kpair S: the kernel figures' within-machine spread
of one paired round (default their class's, W_CLASS), as evaluate_paired.py's --kpair.

--same-card RHO (with --confirm): the confirmation on the run's own card, as the plugin
confirms (a fresh process on the same GPU): its class offsets the run's, its residual
correlated RHO with the run's (measured 0.3-0.8 by class, docs/evidence/same-card-2026-12-06);
without it the confirmation draws a fresh machine (gate-sim's). The runs' other draws are the
same either way.

--more M (default paired.looks.MORE, as the plugin): stage 2 in two looks, each at half of its
share over all the figures it re-measured; a figure the first look (--pair-rounds) leaves
inconclusive gets M times as many rounds more, in PAIRS more process pairs (drawn after the
first look's, so the first look sees the draws --more 0 sees), and is judged on all of
them. --more 0: one look at the whole share, the rule before 2026-12-02 (fourth session).
"""

from __future__ import annotations

import argparse
import math
import sys
import types
from dataclasses import replace

import numpy as np

from pytest_gpuperf.core.results import Result, Throughput
from pytest_gpuperf.core.verdict import Rule, amend
from pytest_gpuperf.judging.confirmation import confirm, flagged_tests
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.judging.pairedrounds import PairedFigure
from pytest_gpuperf.judging.verdict import CHANGED, INCONCLUSIVE, INCONCLUSIVE_POWER
from pytest_gpuperf.paired.figures import second_look
from pytest_gpuperf.paired.judge import PER_PROCESS, PROCESS_P, judge_paired, per_process
from pytest_gpuperf.paired.stage import MORE, PAIRS, STAGE_SHARE, _each_pair, candidates

SIM = Rule.LADDER  # the simulated rounds' verdict, as the stage's ladder gives it
STAGE = "paired stage (simulated)"

CODES = {"unchanged": 0, "regressed": 1, "improved": 2}  # anything else: 3 (inconclusive)

# stage 2's simulated rounds: gate-sim fast/evaluate.py's within-machine, process-to-process
# sd of a session median by gate-sim class (bandwidth, compute, model); launch-bound and
# the process-level figures (PROCESS_LEVEL) as noisy within a machine as between (sigma)
W_CLASS = {0: 0.0013, 1: 0.0067, 2: 0.0040}
PROCESS_LEVEL = (54, 60, 70)
PAIR_R = 6  # run/options.py's default --gpuperf-paired-rounds
PAIRED_STATS = {"remeasured": 0, "per_process": 0, "held": 0, "runs": 0, "more": 0}
LOOK1 = PAIR_R  # the first look's rounds (--pair-rounds); x holds more where --more > 0
KERNELS = "throughput_kernels"
KERN: frozenset[int] = frozenset()  # --kernels: the figures made kernel-time figures
KPAIR = 0.0  # --kpair: their paired spread a round (0: their class's)


def within_sd(cls, sigma):
    """Each figure's within-machine sd of a session median (evaluate.py paired_stage's w)."""
    return np.array([
        KPAIR if (KPAIR and j in KERN)
        else sigma[j] if (cls[j] == 3 or j in PROCESS_LEVEL)
        else min(sigma[j], W_CLASS.get(int(cls[j]), sigma[j]))
        for j in range(len(sigma))
    ])  # fmt: skip


def pair_draws(rng, n, cls, sigma, slow, rounds=PAIR_R):
    """log(head / base) of each run's paired rounds (runs x metrics x rounds): the true
    change `slow` (log units, runs x metrics) plus the difference of two independent
    within-machine draws; no process effect."""
    z = rng.standard_normal((n, len(sigma), rounds))
    return slow[:, :, None] + math.sqrt(2) * within_sd(cls, sigma)[None, :, None] * z


def _pair_labels(rounds, first):
    """Each round's process pair: `rounds` split over PAIRS pairs numbered from `first`, in
    order, as paired/rounds.measure_rounds splits them."""
    per = [rounds // PAIRS + (1 if p < rounds % PAIRS else 0) for p in range(PAIRS)]
    return tuple(first + p for p, c in enumerate(per) for _ in range(c))


def paired(results, x, tol, false_alarm):
    """Stage 2 on one run: the project's candidates re-measured as the rounds `x` (metrics x
    rounds, log ratios), judged by judge_paired; a decided verdict replaces stage 1's, and
    a checked figure (one stage 1 found changed) it cannot decide becomes inconclusive
    unless each process pair bears stage 1 out (paired/stage.py `_each_pair`), as `_apply`
    writes them. Where `x` holds more than LOOK1 rounds, in two looks as `_apply` judges them."""
    todo = candidates(results)
    PAIRED_STATS["runs"] += 1
    if not todo:
        return
    rounds, total = LOOK1, x.shape[1]
    pair = _pair_labels(rounds, 0)
    figs = [
        PairedFigure(r.key, metric, cls, r.higher_is_better, (1.0,) * rounds,
                     tuple(math.exp(v) for v in x[int(r.nodeid[1:])][:rounds]), pair)
        for r, metric, cls in todo
    ]  # fmt: skip
    tols = {f.key: tol for f in figs}
    share = false_alarm / 2 if total > rounds else false_alarm
    verdicts, _ = judge_paired(figs, tols, share)
    final = {(f.key, f.metric): f for f in figs}  # each figure as its last look judged it
    if total > rounds:  # the second look: the undecided figures on all their rounds, the
        # extra ones in PAIRS more process pairs (in order, as paired/stage.py measures them)
        pair2 = _pair_labels(total - rounds, PAIRS)
        more = [replace(f, base=(1.0,) * total,
                        head=tuple(math.exp(v) for v in x[int(f.key[1:])]), pair=pair + pair2)
                for f in second_look(todo, figs, verdicts)]  # fmt: skip
        PAIRED_STATS["more"] += len(more)
        final.update({(f.key, f.metric): f for f in more})
        verdicts.update(judge_paired(more, tols, share, count=len(figs))[0])
    PAIRED_STATS["remeasured"] += len(figs)
    PAIRED_STATS["per_process"] += sum(1 for f in figs if (per_process(f) or 1.0) < PROCESS_P)
    for r, metric, _ in todo:
        v = verdicts[(r.key, metric)]
        if v.reason.startswith(PER_PROCESS):
            PAIRED_STATS["held"] += 1
        first = r.verdicts[metric]
        if v.status in (INCONCLUSIVE, INCONCLUSIVE_POWER):  # a checked one: not borne out
            if first.status in CHANGED and not _each_pair(final[(r.key, metric)], tol,
                                                           first, v.basis):  # fmt: skip
                r.verdicts = {**r.verdicts, metric: amend(first, SIM, STAGE, status=INCONCLUSIVE)}
            continue
        r.verdicts = {**r.verdicts, metric: amend(first, SIM, STAGE, status=v.status)}


def _entries(base_i, names):
    out = {}
    for j, name in enumerate(names):
        hist = [{"median": math.exp(x), "date": f"s{s}"} for s, x in enumerate(base_i[j])]
        metric = {"unit": "tokens/s", "direction": "higher", "median": hist[-1]["median"],
                  "noise_class": name, "history": hist}  # fmt: skip
        if j not in KERN:
            out[f"m{j}"] = {"environment": {}, "metrics": {"throughput": metric}}
            continue
        # launch-bound work: its wall time the host's (a fifth of the kernels' rate, flagged)
        wall = [{**h, "median": h["median"] / 5, "flags": ["launch-bound"]} for h in hist]
        out[f"m{j}"] = {"environment": {}, "flags": {"launch_bound": True}, "metrics": {
            "throughput": {**metric, "median": wall[-1]["median"], "noise_class": "launch-bound",
                           "history": wall},
            KERNELS: metric}}  # fmt: skip
    return out


def _results(cur_i, scur, names, tol, only=None):
    out = []
    for j, name in enumerate(names):
        if only is not None and f"m{j}" not in only:
            continue
        y = math.exp(cur_i[j])
        h = y * scur[j] * 1.959963984540054
        r = Result(f"m{j}", None, "tokens", 1.0, noise_class=name)
        r.time = types.SimpleNamespace(n=10)  # type: ignore[assignment]
        r.throughput = Throughput("tokens/s", y, y - h, y + h)
        r.config = {"tolerance": tol, "memory_tolerance": tol}
        if j in KERN:  # launch-bound: wall time a fifth of the kernels' rate, kernel time y
            r.noise_class, r.launch_bound, r.bound = None, True, "memory"
            r.throughput = Throughput("tokens/s", y / 5, (y - h) / 5, (y + h) / 5)
            r.kernel_time = types.SimpleNamespace(  # type: ignore[assignment]
                n=10, median=1 / y, ci_low=1 / (y + h), ci_high=1 / (y - h) if y > h else 1e9)
        out.append(r)
    return out


def rule(base, cur, scur, tol, names, false_alarm=0.01, pair_x=None):
    """Verdict codes (runs x metrics) and class-shift codes, as gate-sim's rules return;
    with `pair_x` (runs x metrics x rounds), stage 2 after stage 1, the budget split."""
    fa1 = false_alarm * (1 - STAGE_SHARE) if pair_x is not None else false_alarm
    twice = isinstance(cur, tuple)
    first = cur[0] if twice else cur
    n, m, _ = base.shape
    codes = np.full((n, m), 3, dtype=np.int8)
    shifts = []
    for i in range(n):
        entries = _entries(base[i], names)
        results = _results(first[i], scur, names, tol)
        j = judge_run(results, entries, {}, false_alarm=fa1)
        flagged = flagged_tests(results, j)
        if twice and flagged:  # the fresh process: the flagged tests only, this run's offsets
            again = _results(cur[1][i], scur, names, tol, only=set(flagged))
            confirm(
                results, j, again,
                judge_run(again, entries, {}, false_alarm=fa1, offsets=j.metric_offsets), None,
            )  # fmt: skip
        if pair_x is not None:
            paired(results, pair_x[i], tol, false_alarm * STAGE_SHARE)
        for r in results:
            col = int(r.nodeid[1:])
            figure = KERNELS if col in KERN else "throughput"
            codes[i, col] = CODES.get(r.verdicts[figure].status, 3)
        shifts.append([CODES.get(s.verdict.status, 3) for s in j.shifts])
    width = max((len(s) for s in shifts), default=0)
    sh = np.zeros((n, width), dtype=np.int8)
    for i, s in enumerate(shifts):
        sh[i, : len(s)] = s
    return codes, sh


def _model(sim_dir, lb_gpu=0.0):
    """gate-sim's fitted noise model; with `lb_gpu`, the launch-bound figures timed on the GPU
    with that spread in the model class (fast/evaluate.py's --lb-gpu)."""
    sys.path.insert(0, sim_dir)
    import sim

    ms, cls, sigma, scur, tau = sim.load_model()
    if lb_gpu:
        lb = cls == 3
        sigma, scur, cls = sigma.copy(), scur.copy(), cls.copy()
        sigma[lb], scur[lb], cls[lb] = lb_gpu, np.minimum(scur[lb], lb_gpu / 2), 2
    return sim, ms, cls, sigma, scur, tau


def _simulate(sim, rng, n, k, cls, sigma, tau, confirm_, same_card):
    """gate-sim's simulate (A/A), or with `same_card` its draws in its order and a
    confirmation on the run's card: the run's class offsets, its residual correlated
    `same_card` with the run's."""
    m = len(sigma)
    if not (confirm_ and same_card is not None):
        return sim.simulate(rng, n, k, cls, sigma, tau, np.zeros(m, bool), 0.0, "normal",
                            confirm_)  # fmt: skip
    c = len(sim.CLASSES)
    a_base = rng.standard_normal((n, c, k)) * tau[None, :, None]
    a_cur = rng.standard_normal((n, c)) * tau[None, :]
    base = a_base[:, cls, :] + rng.standard_normal((n, m, k)) * sigma[None, :, None]
    e = rng.standard_normal((n, m))
    rng.standard_normal((n, c))  # gate-sim's fresh machine's class offsets: drawn, kept in step
    e2 = same_card * e + math.sqrt(1 - same_card**2) * rng.standard_normal((n, m))
    return base, (a_cur[:, cls] + e * sigma[None, :], a_cur[:, cls] + e2 * sigma[None, :])


def _aa_chunk(job: tuple) -> tuple:
    """One worker's share of A/A runs: per-metric 'regressed' counts, runs with any false
    alarm (a metric's or a class-shift verdict's), inconclusive and decided counts."""
    (sim_dir, k, n, tol, seed, confirm_, fa, paired_, rounds, lb_gpu, kernels, kpair, more,
     same_card) = job
    sim, _, cls, sigma, scur, tau = _model(sim_dir, lb_gpu)
    global KERN, KPAIR
    if kernels:  # the --lb-gpu figures, as evaluate_paired.py's KMASK
        _, _, cls0, _, _, _ = _model(sim_dir, 0.0)
        KERN, KPAIR = frozenset(int(j) for j in np.where(cls0 == 3)[0]), kpair
    names = [sim.CLASSES[c] for c in cls]
    rng = np.random.default_rng(seed)
    m = len(sigma)
    base, cur = _simulate(sim, rng, n, k, cls, sigma, tau, confirm_, same_card)
    x = pair_draws(rng, n, cls, sigma, np.zeros((n, m)), rounds) if paired_ else None
    global LOOK1
    LOOK1 = rounds
    if x is not None and more:  # the second look's rounds, drawn after the first look's
        x = np.concatenate([x, pair_draws(rng, n, cls, sigma, np.zeros((n, m)), more * rounds)],
                           axis=2)  # fmt: skip
    for key in PAIRED_STATS:
        PAIRED_STATS[key] = 0
    v, sh = rule(base, cur, scur, tol, names, false_alarm=fa, pair_x=x)
    run_fa = int(((v == 1).any(axis=1) | (sh == 1).any(axis=1)).sum())
    tp, tp3 = np.isin(cls, [0, 1, 2, 3]), np.isin(cls, [0, 1, 2])
    return ((v == 1).sum(axis=0), run_fa, int((v == 3).sum()), int((v[:, tp] == 3).sum()),
            int(tp.sum()), int((v[:, tp] <= 2).sum()), int((v[:, tp3] <= 2).sum()),
            int(tp3.sum()), dict(PAIRED_STATS))  # fmt: skip


def _cp(x, n):
    """Clopper-Pearson 95% interval of x in n."""
    from scipy.stats import beta

    lo = beta.ppf(0.025, x, n - x + 1) if x > 0 else 0.0
    hi = beta.ppf(0.975, x + 1, n - x) if x < n else 1.0
    return f"[{lo:.3%}, {hi:.3%}]"


def aa_only(args: argparse.Namespace) -> None:
    """A/A runs only (no slowdown), in parallel: the false-alarm columns with enough runs
    to see a single metric's rate near 0.1%."""
    import multiprocessing

    chunk = 50
    for k in (int(x) for x in args.ks.split(",")):
        jobs = [(args.sim_dir, k, min(chunk, args.runs - i), args.tol, args.seed + 7919 * k + i,
                 args.confirm, args.false_alarm, args.paired, args.pair_rounds, args.lb_gpu,
                 args.kernels, args.kpair, args.more, args.same_card)
                for i in range(0, args.runs, chunk)]  # fmt: skip
        with multiprocessing.Pool(args.jobs) as pool:
            parts = pool.map(_aa_chunk, jobs)
        per_metric = sum(p[0] for p in parts)
        run_fa = sum(p[1] for p in parts)
        inc, inc_tp, n_tp = sum(p[2] for p in parts), sum(p[3] for p in parts), parts[0][4]
        dec, dec3, n_tp3 = sum(p[5] for p in parts), sum(p[6] for p in parts), parts[0][7]
        st = {key: sum(p[8][key] for p in parts) for key in PAIRED_STATS}
        n, m = args.runs, len(per_metric)
        worst = int(per_metric.max())
        stage2 = (f"; stage 2: {st['remeasured'] / n:.1f} figures re-measured per run, "
                  f"process pairs disagree (p < {PROCESS_P}) {st['per_process']} "
                  f"(held at stage 1: {st['held']}) of {st['remeasured']}; more={args.more}: "
                  f"{st['more'] / n:.2f} figures a second look per run"
                  if args.paired else "")  # fmt: skip
        print(f"k={k} tol={args.tol} A/A runs={n} confirm={args.confirm} paired={args.paired} "
              f"budget={args.false_alarm} lb_gpu={args.lb_gpu}"
              f"{f' same_card={args.same_card}' if args.same_card is not None else ''}"
              f"{f' kernels kpair={args.kpair}' if args.kernels else ''}: run-wide false alarms {run_fa} "
              f"({run_fa / n:.3%} {_cp(run_fa, n)}); worst metric {worst} ({worst / n:.3%} "
              f"{_cp(worst, n)}, metric m{int(per_metric.argmax())}); metrics with any: "
              f"{int((per_metric > 0).sum())} of {m}; all metrics' false alarms "
              f"{int(per_metric.sum())} of {n * m}; inconclusive {inc / (n * m):.1%} "
              f"(throughput {inc_tp / (n * n_tp):.1%}); throughput decided {dec / (n * n_tp):.1%} "
              f"(launch-bound excluded {dec3 / (n * n_tp3):.1%}){stage2}", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim-dir", required=True)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--ks", default="3,5,10")
    ap.add_argument("--tol", type=float, default=0.05)
    ap.add_argument("--confirm", action="store_true")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument(
        "--aa-only",
        action="store_true",
        help="A/A runs only, in parallel (--jobs): false alarms per metric",
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--false-alarm", type=float, default=0.01, help="the run's budget")
    ap.add_argument(
        "--paired",
        action="store_true",
        help="stage 2 (judge_paired) after stage 1, the budget split (--aa-only)",
    )
    ap.add_argument("--pair-rounds", type=int, default=PAIR_R)
    ap.add_argument("--more", type=int, default=MORE,
                    help="the second look's rounds, times --pair-rounds (0: one look)")  # fmt: skip
    ap.add_argument(
        "--lb-gpu",
        type=float,
        default=0.0,
        help="launch-bound figures timed on the GPU with this spread (--aa-only)",
    )
    ap.add_argument("--kernels", action="store_true",
                    help="with --lb-gpu: those figures as kernel-time figures beside a "
                         "launch-bound wall time (--aa-only)")  # fmt: skip
    ap.add_argument("--kpair", type=float, default=0.0,
                    help="with --kernels: their paired spread a round")  # fmt: skip
    ap.add_argument("--same-card", type=float, default=None,
                    help="with --confirm: the confirmation on the run's card, its residual "
                         "correlated this much with the run's (--aa-only)")  # fmt: skip
    args = ap.parse_args()
    if args.same_card is not None and not (args.confirm and args.aa_only
                                           and 0.0 <= args.same_card <= 1.0):
        ap.error("--same-card RHO (0 to 1) is for --aa-only runs with --confirm")
    if args.kernels and not args.lb_gpu:
        ap.error("--kernels needs --lb-gpu (the spread of the kernel figures between sessions)")
    if args.aa_only:
        aa_only(args)
        return
    if args.paired or args.lb_gpu:
        ap.error("--paired and --lb-gpu are for --aa-only runs")
    sys.path.insert(0, args.sim_dir)
    import sim  # gate-sim's harness and fitted noise model

    ms, cls, sigma, scur, tau = sim.load_model()
    names = [sim.CLASSES[c] for c in cls]
    opts = argparse.Namespace(runs=args.runs, tol=args.tol, tails="normal", tau_scale=1.0,
                              confirm=args.confirm)  # fmt: skip
    # the rule confirms its own way (the flagged tests re-measured, judged with this run's
    # offsets): gate-sim's apply() must hand it both sessions rather than judge each alone
    sim.apply = lambda judged, base, cur: judged(base, cur)
    print("k  run-FA  max-metric-FA  det5%  det7.5%  det7.5%(tput)  inconcl(all)  inconcl(tput)")
    for k in (int(x) for x in args.ks.split(",")):

        def judged(b, c):
            return rule(b, c, scur, args.tol, names, false_alarm=args.false_alarm)

        rng = np.random.default_rng(args.seed + k)
        r = sim.evaluate(judged, opts, ms, cls, sigma, scur, tau, k, rng)
        print(f"{k:<2} {r['run_fa'] * 100:6.2f}% {r['metric_fa_max'] * 100:9.3f}%     "
              f"{r['det0.05'] * 100:5.1f}  {r['det0.075'] * 100:6.1f}   {r['det0.075_tp'] * 100:9.1f}"
              f"      {r['inconclusive'] * 100:6.1f}%       {r['inconclusive_tp'] * 100:6.1f}%",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

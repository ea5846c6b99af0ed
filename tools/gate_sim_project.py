"""The project's simulator of its gate: simulated runs judged by the project's own code
(judge_run, the confirmation on the same card, the paired stage's run_stage) on noise
fitted to the real sessions and rounds in docs/evidence (tools/gatesim/: model.py, drive.py;
fit_rounds.py rewrites rounds.json from the evidence). Needs nothing outside the repository.

    python tools/gate_sim_project.py --runs 200 --jobs 2            # a smoke: ~30 CPU-s a cell
    nice -n 19 python tools/gate_sim_project.py --runs 20000 --jobs 2 > sim.txt &

Per cell (baseline sessions k = --ks): the run-wide A/A false-alarm rate with its 95%
interval (a run with any figure or class shift REGRESSED), the worst single figure's rate
with its 95% upper bound, the speed figures decided, a 5% slowdown of a random 10% of the
speed figures caught (per figure; and how many read unchanged: a wrong pass), and a whole
class 5% slower (each run one class: the share of its figures caught, by their own verdict
or the class's shift verdict, and of runs catching all of them); for either slowdown, the
runs that failed (any figure or class shift REGRESSED); with the CPU seconds the
cell took per 1,000 A/A runs. Clopper-Pearson intervals. --zero-noise: every sd 0 (a
structural check, tests/test_gatesim.py)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gatesim import drive, model

CHUNK = 25


def groups(noise: model.Noise) -> dict[str, np.ndarray]:
    """The speed figures by the class they are judged in (kernel figures their own)."""
    out = {model.CLASSES[c]: np.where((noise.cls == c) & ~noise.kern)[0] for c in model.THROUGHPUT}
    out[model.KERNEL_CLASS] = np.where(noise.kern)[0]
    return {c: ix for c, ix in out.items() if len(ix)}


def _slowdown(kind: str, rng: np.random.Generator, n: int, noise: model.Noise,
              slow: float) -> tuple:  # fmt: skip
    """Each run's true change (n x metrics, log units, `slow` slower) and its slowed class
    (None unless `kind` is 'class')."""
    x = math.log1p(-slow)
    change, which = np.zeros((n, noise.metrics)), [None] * n
    speed = np.concatenate(list(groups(noise).values()))
    for i in range(n):
        if kind == "det":
            change[i, rng.choice(speed, max(1, round(0.1 * len(speed))), replace=False)] = x
        elif kind == "class":
            names = sorted(groups(noise))
            which[i] = names[int(rng.integers(len(names)))]
            change[i, groups(noise)[which[i]]] = x
    return change, which


def chunk(job: tuple) -> dict:
    """One worker's share of a cell: `n` runs of `kind` ('aa', 'det', 'class')."""
    kind, k, n, seed, tol, fa, rounds, paired, zero, slow = job
    t0 = time.process_time()
    noise = model.load(zero=zero)
    rng = np.random.default_rng(seed)
    change, which = _slowdown(kind, rng, n, noise, slow)
    base, cur, again = model.sessions(rng, n, k, noise, change)
    speed = np.concatenate(list(groups(noise).values()))
    out = {"runs": n, "run_fa": 0, "figs": Counter(), "caught": 0, "tries": 0, "decided": 0,
           "speed": 0, "class_caught": 0, "class_tries": 0, "class_all": 0,
           "passed": 0}  # fmt: skip
    for i in range(n):
        codes, shifts, regressed, _ = drive.judge_one(
            noise, base[i], cur[i], again[i], cur[i] - change[i], change[i], rng,
            tol=tol, false_alarm=fa, rounds=rounds, paired=paired)  # fmt: skip
        slowed = change[i] != 0
        out["run_fa"] += bool(regressed) or any(c == 1 for c in shifts.values())
        out["figs"].update(regressed)
        out["decided"] += int((codes[speed] <= 2).sum())
        out["speed"] += len(speed)
        out["caught"] += int(((codes == 1) & slowed).sum())
        out["tries"] += int(slowed.sum())
        out["passed"] += int(((codes == 0) & slowed).sum())  # a wrong pass: slowed, unchanged
        if which[i] is not None:
            hit = (codes[slowed] == 1) | (shifts.get(which[i]) == 1)
            out["class_caught"] += int(hit.sum())
            out["class_tries"] += len(hit)
            out["class_all"] += bool(hit.all())
    out["cpu_s"] = time.process_time() - t0
    return out


def cp(x: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of x in n."""
    from scipy.stats import beta

    lo = float(beta.ppf(0.025, x, n - x + 1)) if x > 0 else 0.0
    hi = float(beta.ppf(0.975, x + 1, n - x)) if x < n else 1.0
    return lo, hi


def cell(args: argparse.Namespace, k: int, kind: str, runs: int, pool: Pool | None) -> dict:
    jobs = [(kind, k, min(CHUNK, runs - i), args.seed + 7919 * k + 104729 * len(kind) + i,
             args.tol, args.false_alarm, args.pair_rounds, not args.no_paired, args.zero_noise,
             args.slow)
            for i in range(0, runs, CHUNK)]  # fmt: skip
    parts = pool.map(chunk, jobs) if pool is not None else [chunk(j) for j in jobs]
    total: dict = {"figs": Counter()}
    for p in parts:
        for key, v in p.items():
            total[key] = total.get(key, 0) + v if key != "figs" else total["figs"] + v
    return total


def line(k: int, aa: dict, det: dict | None, cls: dict | None, slow: float) -> str:
    n = aa["runs"]
    lo, hi = cp(aa["run_fa"], n)
    name, worst = (aa["figs"].most_common(1) or [("none", 0)])[0]
    kern = sum(c for f, c in aa["figs"].items() if f.endswith(":" + drive.KERNELS))
    text = (f"k={k}: A/A runs {n}: run-wide false alarms {aa['run_fa']} ({aa['run_fa'] / n:.3%}"
            f" [{lo:.3%}, {hi:.3%}]); worst figure {name} {worst} ({worst / n:.3%}, 95% upper"
            f" bound {cp(worst, n)[1]:.3%}); false alarms by figure: {kern} kernel-time, "
            f"{sum(aa['figs'].values()) - kern} other; speed figures decided "
            f"{aa['decided'] / max(aa['speed'], 1):.1%}")  # fmt: skip
    if det:
        text += (f"; {slow:.0%} slowdown caught {det['caught']} of {det['tries']} figures "
                 f"({det['caught'] / max(det['tries'], 1):.1%}), called unchanged "
                 f"{det['passed']}, the run failing in {det['run_fa']} of {det['runs']}")  # fmt: skip
    if cls:
        text += (f"; a whole class {slow:.0%} slower: {cls['class_caught']} of {cls['class_tries']} "
                 f"figures caught ({cls['class_caught'] / max(cls['class_tries'], 1):.1%}), all "
                 f"of them in {cls['class_all']} of {cls['runs']} runs, called unchanged "
                 f"{cls['passed']}, the run failing in {cls['run_fa']}")  # fmt: skip
    return text + f"; CPU {1000 * aa['cpu_s'] / n:.0f} s per 1,000 A/A runs"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="A/A runs a cell")
    ap.add_argument(
        "--det-runs",
        type=int,
        default=None,
        help="runs a cell of each slowdown (default: --runs / 4; 0: none)",
    )
    ap.add_argument("--ks", default="3,5,10", help="baseline sessions, one cell each")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--tol", type=float, default=0.03, help="the tolerance (the plugin's 3%%)")
    ap.add_argument("--false-alarm", type=float, default=0.01, help="the run's budget")
    ap.add_argument("--pair-rounds", type=int, default=6, help="--gpuperf-paired-rounds")
    ap.add_argument("--slow", type=float, default=0.05, help="the slowdown simulated (0.05: 5%%)")
    ap.add_argument("--no-paired", action="store_true", help="no paired stage (stage 1 alone)")
    ap.add_argument("--zero-noise", action="store_true", help="every sd 0 (a structural check)")
    ap.add_argument("--seed", type=int, default=20261207)
    args = ap.parse_args(argv)
    if args.runs < 1 or args.jobs < 1 or (args.det_runs or 0) < 0:
        ap.error("--runs and --jobs must be at least 1, --det-runs at least 0")
    if not 0 < args.slow < 1:
        ap.error(f"--slow {args.slow}: a fraction between 0 and 1 (0.05 for 5% slower)")
    try:
        args.ks = [int(x) for x in str(args.ks).split(",")]
    except ValueError:
        ap.error(f"--ks {args.ks!r}: give baseline session counts, e.g. 3,5,10")
    if min(args.ks) < 2:
        ap.error("--ks: a baseline needs at least 2 sessions")
    if args.det_runs is None:
        args.det_runs = max(1, args.runs // 4)
    return args


def main(argv: list[str] | None = None) -> list[tuple[int, dict, dict | None, dict | None]]:
    """Each cell's (k, A/A, slowdown, whole class) tallies; prints a line a cell."""
    args = parse(argv)
    cells = []
    drive.scratch_commit()  # made once, before the workers fork: the parent removes it
    pool = Pool(args.jobs) if args.jobs > 1 else None
    try:
        for k in args.ks:
            aa = cell(args, k, "aa", args.runs, pool)
            det = cell(args, k, "det", args.det_runs, pool) if args.det_runs else None
            cls = cell(args, k, "class", args.det_runs, pool) if args.det_runs else None
            cells.append((k, aa, det, cls))
            print(line(k, aa, det, cls, args.slow), flush=True)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return cells


if __name__ == "__main__":
    main()

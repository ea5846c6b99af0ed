"""How often `gpuperf history`'s change finding (pytest_gpuperf/history/changes.py) is right
on made-up nightly series (docs/performance.md, "The nightly history"): issue 61's targets.

Each night's value is the figure's level times (1 + noise), the noise one draw a night of a
Student t with 3 degrees of freedom (heavy tails: a machine now and then far off) scaled to
the noise class's spread between machines (history.changes.CLASS_SD: bandwidth 0.57%,
model steps 0.74%, compute 1.21%), or to 2% (a noisier figure than any class says).

- flat: SERIES series of 200 nights with no change: the share reporting any change
  (target: at most 1%);
- step: a 5% slowdown at night 100, the series read 1, 2 and 3 nights after it: the share
  found by then (target: 90% by the third night), the share whose range holds the true
  commit (target: 95%), the median range in runs (target: at most 2);
- creep: 0.5% a night over 10 nights, read 5 nights after it ends: the share found as creep.

    python tools/history_detection_rates.py [--series 200] [--seed 1]

`--real` draws each night's offset from the recorded sessions instead (issue 61's evidence):
every baseline file under docs/evidence (the GPU sessions recorded there), each figure's session medians as
deviations from the figure's mean, in log "better" space, scaled by sqrt(n / (n - 1)) (a
deviation from a mean of n understates the spread), pooled by noise class and resampled as
they are (machine offsets between sessions, heavy tails and all: no Gaussian is fitted). A
figure's sessions held by two files count once; sessions flagged power-state, gpu-shared
or busy-host (left out of a history's series) are left out here too; memory (0 spread) and
recorded figures (a user's value, no class of noise) are not simulated.

    python tools/history_detection_rates.py --real [--series 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from array import array
from collections.abc import Callable
from pathlib import Path

from pytest_gpuperf.history.changes import CLASS_SD, series_changes
from pytest_gpuperf.history.store import Run, Series

CARD = {"name": "H200", "driver": "580", "cuda": "13.0", "torch": "2.11"}


def noise(rng: random.Random, sd: float) -> float:
    """One night's relative offset: t(3), scaled to sd (t(3)'s sd is sqrt(3))."""
    z = rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3)
    return sd * z / math.sqrt(3)


def changes(values: list[float], cls: str) -> list:
    s = Series("h200", "b.py::test_x", "throughput", noise_class=cls, tolerance=0.03)
    s.runs, s.median = array("i", range(len(values))), array("d", values)
    runs = [Run(f"n{i}", f"2026-01-01T{i}", f"c{i}", False, "h200", False, "run", CARD)
            for i in range(len(values))]  # fmt: skip
    return series_changes(s, runs)


def rates(cls: str, sd: float, series: int, rng: random.Random,
          draw: Callable[[random.Random], float] | None = None) -> str:  # fmt: skip
    """One row: `draw` gives a night's relative offset (default: t(3) at `sd`)."""
    if draw is None:
        draw = lambda r: noise(r, sd)  # noqa: E731
    false = sum(bool(changes([1000 * (1 + draw(rng)) for _ in range(200)], cls))
                for _ in range(series))  # fmt: skip
    by_night, held, widths = [0, 0, 0], 0, []
    for _ in range(series):
        night = [1000 * (1 + draw(rng)) for _ in range(103)]
        steps = [v * (0.95 if i >= 100 else 1) for i, v in enumerate(night)]
        for after in (1, 2, 3):
            found = [c for c in changes(steps[: 100 + after], cls) if c.kind == "step"
                     and c.first_bad >= 95]  # fmt: skip
            if found:
                by_night[after - 1] += 1
                if after == 3:
                    c = found[0]
                    held += c.last_good < 100 <= c.first_bad
                    widths.append(c.first_bad - c.last_good)
    creep = 0
    for _ in range(series):
        v = [1000 * (1 + draw(rng)) * (1 - 0.005 * min(max(i - 99, 0), 10))
             for i in range(115)]  # fmt: skip
        creep += any(c.kind == "creep" for c in changes(v, cls))
    pct = [f"{100 * n / series:.0f}%" for n in by_night]
    width = f"{statistics.median(widths):.0f}" if widths else "-"
    inside = f"{100 * held / len(widths):.0f}%" if widths else "- (none found)"
    return (f"{cls:<9} sd {sd * 100:.2f}%: flat {100 * false / series:.1f}% with a change; "
            f"5% step found {', '.join(pct)} after 1, 2, 3 nights; true commit in range "
            f"{inside}, median range {width} runs; "
            f"creep found {100 * creep / series:.0f}%")  # fmt: skip


SIMULATED = ("bandwidth", "model", "compute", "kernel-time", "per-clock", "launch-bound")


def recorded_files() -> list[Path]:
    """Every baseline file under docs/evidence."""
    root = Path(__file__).resolve().parent.parent
    paths = [*root.glob("docs/evidence/*/*.json"), *root.glob("docs/evidence/*/*/*.json")]
    return sorted(p for p in paths if '"pytest-gpuperf/baseline"' in p.read_text("utf-8"))


def recorded_pools(files: list[Path]) -> tuple[dict[str, list[float]], dict[str, int], int]:
    """(class -> the deviations of its figures' sessions, class -> figures, sessions left
    out as flagged) from the baseline files."""
    from pytest_gpuperf.baseline.history import metric_class, session_key
    from pytest_gpuperf.baseline.store import load
    from pytest_gpuperf.history.record import LEFT_OUT

    pools: dict[str, list[float]] = {}
    figures: dict[str, int] = {}
    seen, flagged = set(), 0
    for path in files:
        base = load(path)
        assert base is not None
        for key, entry in base.entries.items():
            for name, m in entry["metrics"].items():
                items = [h for h in m["history"] if h["median"] > 0]
                kept = [h for h in items if not set(h.get("flags") or ()) & set(LEFT_OUT)]
                flagged += len(items) - len(kept)
                ident = (base.profile, key, name, tuple(sorted(map(session_key, kept))))
                if len(kept) < 2 or ident in seen:
                    continue
                seen.add(ident)
                sign = -1.0 if m.get("direction") == "lower" else 1.0
                x = [sign * math.log(h["median"]) for h in kept]
                mean, scale = statistics.fmean(x), math.sqrt(len(x) / (len(x) - 1))
                cls = metric_class(name, m, entry)
                pools.setdefault(cls, []).extend((v - mean) * scale for v in x)
                figures[cls] = figures.get(cls, 0) + 1
    return pools, figures, flagged


def real(series: int, rng: random.Random) -> None:
    """The rows of --real: each class's pool, then its rates."""
    files = recorded_files()
    pools, figures, flagged = recorded_pools(files)
    print(f"{len(files)} baseline files; {flagged} flagged sessions left out")
    for cls in SIMULATED:
        pool = pools.get(cls) or []
        if not pool:
            continue
        mags = sorted(abs(v) for v in pool)
        sd = math.sqrt(statistics.fmean(v * v for v in pool))
        print(f"{cls}: {len(pool)} deviations of {figures[cls]} figures, rms {sd * 100:.2f}%, "
              f"median |d| {mags[len(mags) // 2] * 100:.2f}%, largest {mags[-1] * 100:.2f}%")
        print("  " + rates(cls, sd, series, rng, lambda r, p=pool: math.expm1(r.choice(p))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--real", action="store_true",
                    help="draw the noise from the recorded sessions of docs/evidence")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if args.real:
        real(args.series, rng)
        return 0
    for cls in ("bandwidth", "model", "compute"):
        print(rates(cls, CLASS_SD[cls], args.series, rng))
    print(rates("bandwidth", 0.02, args.series, rng).replace("bandwidth", "2% noise"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

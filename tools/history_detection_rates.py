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
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from array import array

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


def rates(cls: str, sd: float, series: int, rng: random.Random) -> str:
    false = sum(bool(changes([1000 * (1 + noise(rng, sd)) for _ in range(200)], cls))
                for _ in range(series))  # fmt: skip
    by_night, held, widths = [0, 0, 0], 0, []
    for _ in range(series):
        night = [1000 * (1 + noise(rng, sd)) for _ in range(103)]
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
        v = [1000 * (1 + noise(rng, sd)) * (1 - 0.005 * min(max(i - 99, 0), 10))
             for i in range(115)]  # fmt: skip
        creep += any(c.kind == "creep" for c in changes(v, cls))
    pct = [f"{100 * n / series:.0f}%" for n in by_night]
    width = statistics.median(widths) if widths else math.nan
    return (f"{cls:<9} sd {sd * 100:.2f}%: flat {100 * false / series:.1f}% with a change; "
            f"5% step found {', '.join(pct)} after 1, 2, 3 nights; true commit in range "
            f"{100 * held / max(1, len(widths)):.0f}%, median range {width:.0f} runs; "
            f"creep found {100 * creep / series:.0f}%")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for cls in ("bandwidth", "model", "compute"):
        print(rates(cls, CLASS_SD[cls], args.series, rng))
    print(rates("bandwidth", 0.02, args.series, rng).replace("bandwidth", "2% noise"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

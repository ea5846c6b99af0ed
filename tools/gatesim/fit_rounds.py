"""Fit the simulator's paired-stage noise from the real rounds in docs/evidence, and write
tools/gatesim/rounds.json:

    python tools/gatesim/fit_rounds.py [--evidence docs/evidence] [--out tools/gatesim/rounds.json]

The real rounds: every `--gpuperf-json` file under docs/evidence whose verdicts keep a paired
record with its rounds (`paired.base_rounds`, `head_rounds`, `round_pairs`), each figure once
(the same rounds copied into two files count once). Per figure, d = log(head / base) a round:
its spread a round (sd of d), and a one-way ANOVA over its process pairs (the within-pair sd,
the per-process sd sqrt((MSB - MSW) / rounds a pair), the screen's p). The simulator draws a
figure's (within-pair sd, per-process sd) jointly from the real figures of its class.

Also fitted here: the same-card correlation of a confirmation's residual by class, read from
docs/evidence/same-card-2026-12-06/samecard.txt (its H100 block less the per-process modules),
and each test's first-stage seconds (measure + warm-up) of the real 103-metric suite run
(docs/evidence/h200x2-2026-11-30-e/n2-cold/suite-n2-cold.json), which set the stage's budget
as the plugin sets it."""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SUITE = "h200x2-2026-11-30-e/n2-cold/suite-n2-cold.json"
SAME_CARD = "same-card-2026-12-06/samecard.txt"
SCREEN_P = 0.01


def _class_of(r: dict[str, Any], metric: str) -> str | None:
    from pytest_gpuperf.core.figures import KERNEL_FIGURES, KERNEL_TIME, metrics_of
    from pytest_gpuperf.core.results import Result

    if metric in KERNEL_FIGURES:
        return KERNEL_TIME
    try:
        figs = metrics_of(Result.from_dict(r))
    except (ValueError, TypeError, KeyError):
        return None
    return (figs.get(metric) or {}).get("noise_class")


def anova(d: list[float], pair: list[int]) -> dict[str, float] | None:
    """A figure's round spread, within-pair and per-process sd and the screen's p (None
    where a pair has fewer than 2 rounds or there is one pair)."""
    from scipy.stats import f as fdist

    groups: dict[int, list[float]] = {}
    for x, p in zip(d, pair, strict=True):
        groups.setdefault(p, []).append(x)
    if len(groups) < 2 or min(len(g) for g in groups.values()) < 2:
        return None
    n, k = len(d), len(groups)
    grand = statistics.fmean(d)
    ssw = sum((x - statistics.fmean(g)) ** 2 for g in groups.values() for x in g)
    ssb = sum(len(g) * (statistics.fmean(g) - grand) ** 2 for g in groups.values())
    msw, msb = ssw / (n - k), ssb / (k - 1)
    n0 = n / k
    p = float(fdist.sf(msb / msw, k - 1, n - k)) if msw > 0 else (0.0 if msb > 0 else 1.0)
    return {"spread": statistics.stdev(d), "within": math.sqrt(msw),
            "process": math.sqrt(max(0.0, (msb - msw) / n0)), "p": p}  # fmt: skip


def real_rounds(evidence: Path) -> list[dict[str, Any]]:
    """Each real figure's rounds, once: class, file, and its ANOVA."""
    seen, out = set(), []
    for path in sorted(evidence.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        for r in data.get("results", []) if isinstance(data, dict) else []:
            for metric, v in ((r or {}).get("verdicts") or {}).items():
                rec = (v or {}).get("paired") or {}
                base, head, pair = (rec.get(x) for x in ("base_rounds", "head_rounds",
                                                         "round_pairs"))  # fmt: skip
                if not (isinstance(base, list) and isinstance(head, list) and isinstance(pair, list)
                        and len(base) == len(head) == len(pair) >= 4):  # fmt: skip
                    continue
                sig = (r.get("key"), metric, tuple(base), tuple(head))
                if sig in seen or min(base + head) <= 0:
                    continue
                seen.add(sig)
                fit = anova([math.log(h / b) for b, h in zip(base, head, strict=True)], pair)
                cls = _class_of(r, metric)
                if fit and cls:
                    out.append({"file": str(path.relative_to(evidence)), "key": r.get("key"),
                                "metric": metric, "class": cls, **fit})  # fmt: skip
    return out


def same_card(text: str) -> dict[str, float]:
    """rho by class from samecard.txt's second block (H100, less the per-process modules)."""
    blocks = text.split("==")
    out: dict[str, float] = {}
    for line in blocks[2].splitlines() if len(blocks) > 2 else []:
        m = re.match(r"\s+(\S+)\s+\d+ figures.*rho (\S+)", line)
        if m and m.group(2) != "nan":
            out[m.group(1)] = float(m.group(2))
    return out


def test_seconds(suite: Path) -> dict[str, float]:
    """Each test's first-stage seconds (measure + warm-up, summed over its results)."""
    out: dict[str, float] = {}
    for r in json.loads(suite.read_text(encoding="utf-8"))["results"]:
        s = float(r.get("measure_s") or 0) + float(r.get("warmup_s") or 0)
        out[r["nodeid"]] = out.get(r["nodeid"], 0.0) + s
    return out


def summary(figs: list[dict[str, Any]]) -> dict[str, Any]:
    sp = sorted(f["spread"] for f in figs)
    q = statistics.quantiles(sp, n=4) if len(sp) >= 2 else [sp[0]] * 3
    return {"figures": len(figs), "spread_median": q[1], "spread_iqr": [q[0], q[2]],
            "process_sd_above_1pct": sum(f["process"] > 0.01 for f in figs),
            "process_sd_above_2pct": sum(f["process"] > 0.02 for f in figs),
            "screen_fires_p01": sum(f["p"] < SCREEN_P for f in figs)}  # fmt: skip


def replay(table: list[list[float]], draws: int = 2000, seed: int = 1) -> dict[str, Any]:
    """The fit's check: `draws` figures of 6 rounds in 2 process pairs drawn as the simulator
    draws them (model.py) from `table`, summarised as the real ones are (`summary`)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        w, p = table[int(rng.integers(len(table)))]
        u = rng.standard_normal(2) * p
        d = [float(u[q] + w * rng.standard_normal()) for q in (0, 0, 0, 1, 1, 1)]
        if (fit := anova(d, [0, 0, 0, 1, 1, 1])) is not None:
            out.append(fit)
    return summary(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evidence", type=Path, default=ROOT / "docs" / "evidence")
    ap.add_argument("--out", type=Path, default=HERE / "rounds.json")
    args = ap.parse_args()
    figs = real_rounds(args.evidence)
    by: dict[str, list[dict[str, Any]]] = {}
    for f in figs:
        by.setdefault(f["class"], []).append(f)
    figures = {
        c: [[round(f["within"], 6), round(f["process"], 6)] for f in fs]
        for c, fs in sorted(by.items())
    }
    out = {
        "source": "tools/gatesim/fit_rounds.py over docs/evidence (paired rounds in the "
                  "--gpuperf-json files; same-card-2026-12-06/samecard.txt; " + SUITE + ")",
        "summary": {c: summary(fs) for c, fs in sorted(by.items())},
        "figures": figures,
        "simulated": {c: replay(v) for c, v in figures.items()},
        "same_card": same_card((args.evidence / SAME_CARD).read_text(encoding="utf-8")),
        "test_seconds": test_seconds(args.evidence / SUITE),
    }  # fmt: skip
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for c, s in [*out["summary"].items(), *(("sim " + c, v) for c, v in out["simulated"].items())]:
        print(f"{c:12s} {s['figures']:4d} figures: spread a round median {s['spread_median']:.2%}"
              f" IQR {s['spread_iqr'][0]:.2%}-{s['spread_iqr'][1]:.2%}; process sd > 1% "
              f"{s['process_sd_above_1pct']}, > 2% {s['process_sd_above_2pct']}; screen fires "
              f"(p < {SCREEN_P}) {s['screen_fires_p01']}")  # fmt: skip
    print("same-card rho:", out["same_card"])
    print(f"tests: {len(out['test_seconds'])}, {sum(out['test_seconds'].values()):.0f} s")


if __name__ == "__main__":
    main()

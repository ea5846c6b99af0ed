"""Made-up nightly histories for the history tests: run files written as
`--gpuperf-history` writes them (history/record.py's format), from exact series."""

import random
from datetime import UTC, datetime, timedelta

from pytest_gpuperf.history.record import COLUMNS, FORMAT_VERSION, SCHEMA, dumps

START = datetime(2026, 6, 1, 2, 0, tzinfo=UTC)
CARD = {"name": "NVIDIA H200", "uuid": "GPU-1", "driver": "580.159.04", "cuda": "13.0",
        "torch": "2.11.0", "host": "node1"}  # fmt: skip


def commit(i):
    return f"{i:04d}" + "c" * 36


def record(i, figures, card=None, profile="h200"):
    """Run i's record; figures: [(test, figure, median, unit, direction, class, flags[,
    verdict status])]."""
    cols = {c: [] for c in COLUMNS}
    for test, fig, median, unit, direction, cls, flags, *status in figures:
        row = {"test": test, "metric": None, "figure": fig, "median": median, "ci_low": median * 0.999,
               "ci_high": median * 1.001, "n": 30, "unit": unit, "direction": direction,
               "noise_class": cls, "flags": list(flags), "verdict": (status or ["unchanged"])[0], "change": 0.0,
               "tolerance": 0.03, "rule": "ladder", "stage": "stage 1"}  # fmt: skip
        for c in COLUMNS:
            cols[c].append(row[c])
    return {"schema": SCHEMA, "version": FORMAT_VERSION,
            "date": (START + timedelta(days=i)).isoformat(timespec="seconds"),
            "commit": commit(i), "dirty": False, "session_id": f"s{i:04d}", "profile": profile,
            "saved": False, "source": "run", "origin": None, "card": dict(card or CARD),
            "figures": cols}  # fmt: skip


def write_series(directory, values, *, test="b.py::test_x", figure="throughput",
                 unit="GB/s", direction="higher", cls="bandwidth", flags=None, cards=None,
                 verdicts=None, rules=None):  # fmt: skip
    """One figure's series, a run a value (night i is commit(i)); rules: night -> (the rule
    that decided its verdict, its stage) (None: unknown)."""
    for i, v in enumerate(values):
        f = (flags or {}).get(i, ())
        card = (cards or {}).get(i)
        status = (verdicts or {}).get(i, "unchanged")
        rec = record(i, [(test, figure, v, unit, direction, cls, f, status)], card)
        if rules and i in rules:
            rec["figures"]["rule"], rec["figures"]["stage"] = [rules[i][0]], [rules[i][1]]
        (directory / f"night{i:04d}.json").write_text(dumps(rec))  # no fsync: fast tests


def noisy(n, sd, seed, level=1000.0):
    """n nights of one level, with a machine offset each night (Gaussian, relative sd)."""
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, sd)) for _ in range(n)]


def write_dashboard(directory, nights=90):
    """Two profiles' nights of three benchmarks: h200's copy 5% slower from night 60, h100's
    LoRA step creeping 0.5% a night over nights 40-50, a latency that stays; one night on a
    shared GPU, a saved session every 30 nights (a dashboard's made-up history)."""
    for profile, seed in (("h200", 11), ("h100", 12)):
        copy = noisy(nights, 0.004, seed, level=4000.0)
        step = noisy(nights, 0.004, seed + 1, level=250.0)
        lat = noisy(nights, 0.004, seed + 2, level=12.0)
        for i in range(nights):
            c = copy[i] * (0.95 if profile == "h200" and i >= 60 else 1)
            s = step[i] * (1 - 0.005 * min(max(i - 40, 0), 10) if profile == "h100" else 1)
            figures = [
                ("benchmarks/test_dtype.py::test_copy[bf16]", "throughput", c, "GB/s", "higher",
                 "bandwidth", ("gpu-shared",) if i == 20 else ()),
                ("benchmarks/test_finetune.py::test_lora_step[7b]", "throughput", s, "samples/s",
                 "higher", "model", ()),
                ("benchmarks/test_generate.py::test_ttft", "latency", lat[i], "ms", "lower",
                 "model", ()),
            ]  # fmt: skip
            rec = record(i, figures, profile=profile)
            rec["session_id"] = f"{profile}-{i:04d}"
            rec["saved"] = i % 30 == 0
            (directory / f"{profile}-night{i:04d}.json").write_text(dumps(rec))

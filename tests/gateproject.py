"""A pytester project for gate tests: two benchmarks timed by the virtual clock, the options
that keep them short, and a helper that saves baseline sessions. Shared by the gate,
integrity and first-hour tests through the `project` fixture (tests/conftest.py)."""

import json

from . import vclock

FAST = [
    "--gpuperf-min-time=0.02",
    "--gpuperf-max-time=0.4",
    "--gpuperf-warmup-time=0",
    "-p",
    "no:cacheprovider",
]

BENCH = """
import os

from vclock import spin

def test_spin(gpu_benchmark):
    slow = float(os.environ.get("SLOW", "0"))
    gpu_benchmark(lambda: spin(0.002 * (1 + slow)), work=64, unit="tokens")

def test_other(gpu_benchmark):
    gpu_benchmark(lambda: spin(0.001), work=1, unit="samples")
"""


def make_project(pytester, monkeypatch):
    monkeypatch.delenv("SLOW", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    vclock.add_to(pytester)  # deterministic times: verdicts do not depend on the runner's load
    pytester.makepyfile(test_b=BENCH)
    return pytester


def saved(pytester, times=2):
    for _ in range(times):
        r = pytester.runpytest(*FAST, "--gpuperf-baseline=save")
        r.assert_outcomes(passed=2)
    return json.loads((pytester.path / "baselines" / "cpu.json").read_text())

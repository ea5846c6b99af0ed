"""The shipped suite's tiers: every smoke id exists, and -m smoke selects them."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def collect(*args):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks", "--co", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split("benchmarks/", 1)[1] for line in done.stdout.splitlines() if line.startswith("benchmarks/")]


def test_the_smoke_tier_is_one_benchmark_per_family():
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmarks_conftest", ROOT / "benchmarks" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    SMOKE = module.SMOKE
    full = collect()
    missing = [s for s in SMOKE if s not in full]
    assert not missing, f"smoke ids that no longer exist: {missing}"
    smoke = collect("-m", "smoke")
    assert sorted(smoke) == sorted(SMOKE)
    assert {s.split("::")[0] for s in smoke} == {"test_dtype.py", "test_finetune.py", "test_generate.py"}
    assert len(smoke) < len(full) / 3

"""What having pytest-gpuperf installed costs a one-test pytest run that uses none of it.

A project of one plain test (no gpu_benchmark, no marker, no gpuperf option, no file
written), run as `python -m pytest -q -p no:cacheprovider` with the plugin loaded and with
`-p no:gpuperf`, each pair in random order; each run's CPU time (user + system, from
`resource.getrusage(RUSAGE_CHILDREN)` around it) and the ratio of the pair. Prints the
median of N >= 30 paired ratios (docs/performance.md records it; the bar is 1.05).
Usage: python tools/measure_plugin_cost.py [N]
"""

import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def cpu_seconds(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """The CPU time (user + system) of the child process running `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if n < 30:
        sys.exit(f"N must be at least 30 (got {n}): the median of fewer pairs moves too much")
    root = Path(tempfile.mkdtemp())
    (root / "test_plain.py").write_text("def test_one():\n    assert True\n")
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"]
    off = [*base, "-p", "no:gpuperf"]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled modules cached, as on a usual machine
    for _ in range(3):  # warm the page cache and the bytecode caches
        cpu_seconds(base, root, env)
        cpu_seconds(off, root, env)
    rng = random.Random(0)
    ratios, on_s, off_s = [], [], []
    for _ in range(n):  # each pair in random order, so neither side always runs first
        if rng.random() < 0.5:
            a = cpu_seconds(base, root, env)
            b = cpu_seconds(off, root, env)
        else:
            b = cpu_seconds(off, root, env)
            a = cpu_seconds(base, root, env)
        on_s.append(a)
        off_s.append(b)
        ratios.append(a / b)
    ratios.sort()
    q1, q3 = ratios[n // 4], ratios[(3 * n) // 4]
    print(
        f"CPU time with the plugin {statistics.median(on_s) * 1e3:.0f} ms, -p no:gpuperf "
        f"{statistics.median(off_s) * 1e3:.0f} ms (medians); paired ratio: median "
        f"{statistics.median(ratios):.3f}x, IQR [{q1:.3f}, {q3:.3f}] over {n} pairs"
    )


if __name__ == "__main__":
    main()

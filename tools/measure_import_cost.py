"""How much does having pytest-gpuperf installed cost a pytest run with no GPU tests?

`pytest --collect-only` on a generated project of 200 plain tests, with the plugin loaded vs
`-p no:gpuperf`, each pair in random order, median of N pairs.
Usage: python tools/measure_import_cost.py [N] [--no-bytecode-cache]
"""

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 21
    root = Path(tempfile.mkdtemp())
    for i in range(20):
        body = "".join(f"def test_{j}():\n    assert True\n" for j in range(10))
        (root / f"test_m{i}.py").write_text(body)
    base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]

    # As on a usual machine, Python and pytest may cache compiled (and assertion-rewritten)
    # modules; with PYTHONDONTWRITEBYTECODE=1 pytest recompiles every plugin module on
    # every run (pass --no-bytecode-cache to measure that).
    env = dict(os.environ)
    if "--no-bytecode-cache" not in sys.argv:
        env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run(extra: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run([*base, *extra], cwd=root, check=True, capture_output=True, env=env)
        return time.perf_counter() - t

    for _ in range(3):
        run([])
        run(["-p", "no:gpuperf"])
    with_, without = [], []
    rng = random.Random(0)
    for _ in range(n):  # each pair in random order, so neither side always runs first
        if rng.random() < 0.5:
            with_.append(run([]))
            without.append(run(["-p", "no:gpuperf"]))
        else:
            without.append(run(["-p", "no:gpuperf"]))
            with_.append(run([]))
    w, wo = statistics.median(with_), statistics.median(without)
    diffs = sorted(a - b for a, b in zip(with_, without, strict=True))
    q1, q3 = diffs[len(diffs) // 4], diffs[(3 * len(diffs)) // 4]
    print(
        f"with plugin {w * 1e3:.1f} ms, -p no:gpuperf {wo * 1e3:.1f} ms; added (median of "
        f"paired differences) {statistics.median(diffs) * 1e3:.1f} ms, IQR "
        f"[{q1 * 1e3:.1f}, {q3 * 1e3:.1f}] ms over {n} pairs"
    )
    # The plugin's own import, with pytest already imported: a steadier number.
    code = (
        "import pytest, time; t=time.perf_counter(); import pytest_gpuperf.plugin; "
        "print(time.perf_counter()-t)"
    )
    imports = sorted(
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(n)
    )
    print(
        f"import pytest_gpuperf.plugin (pytest already imported): median "
        f"{statistics.median(imports) * 1e3:.1f} ms over {n} processes"
    )


if __name__ == "__main__":
    main()

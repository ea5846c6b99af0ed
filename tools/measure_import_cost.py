"""How much does having pytest-gpuperf installed cost a pytest run with no GPU tests?

`pytest --collect-only` on a generated project of 200 plain tests, with the plugin loaded vs
`-p no:gpuperf`, alternating, median of N runs each. Usage: python tools/measure_import_cost.py [N]
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    root = Path(tempfile.mkdtemp())
    for i in range(20):
        body = "".join(f"def test_{j}():\n    assert True\n" for j in range(10))
        (root / f"test_m{i}.py").write_text(body)
    base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]

    def run(extra: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run([*base, *extra], cwd=root, check=True, capture_output=True)
        return time.perf_counter() - t

    for _ in range(3):
        run([])
        run(["-p", "no:gpuperf"])
    with_, without = [], []
    for _ in range(n):
        with_.append(run([]))
        without.append(run(["-p", "no:gpuperf"]))
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

"""A large suite's files, generated: a baseline of N entries and a results file of M tests,
made by cloning the recorded CPU replay (tests/data/replay: 9 benchmarks of two noise classes,
3 saved sessions) under new test ids, one module per 100 tests, each clone's medians moved
by a deterministic few percent. For measuring what the tools cost at scale (issue 58);
tests/test_scale.py uses it at a small size.

    python tools/large_suite.py OUT_DIR --entries 20000 --results 5

writes OUT_DIR/cpu.json (the baseline) and OUT_DIR/run.json (the results file), and prints
their sizes."""

from __future__ import annotations

import argparse
import copy
import json
import random
from pathlib import Path
from typing import Any

REPLAY = Path(__file__).resolve().parents[1] / "tests" / "data" / "replay"


def _key(i: int, template: str) -> str:
    name = template.split("::", 1)[1]
    return f"tests/scale/test_m{i // 100:04d}.py::{name}_{i}"


def _scaled(doc: Any, factor: float) -> Any:
    """`doc` with each median, interval end and summary throughput scaled by `factor`."""
    if isinstance(doc, dict):
        return {
            k: (v * factor if k in ("median", "ci_low", "ci_high") and isinstance(v, float)
                else _scaled(v, factor))
            for k, v in doc.items()
        }  # fmt: skip
    if isinstance(doc, list):
        return [_scaled(v, factor) for v in doc]
    return doc


def baseline(entries: int, seed: int = 0) -> dict[str, Any]:
    """A baseline of `entries` entries (profile cpu)."""
    src = json.loads((REPLAY / "cpu-baseline.json").read_text())
    templates = list(src["entries"].items())
    rng = random.Random(seed)
    out = {}
    for i in range(entries):
        name, entry = templates[i % len(templates)]
        out[_key(i, name)] = _scaled(copy.deepcopy(entry), 1 + rng.uniform(-0.05, 0.05))
    return {**src, "entries": out}


def results(tests: int, seed: int = 1) -> dict[str, Any]:
    """A results file of `tests` results, the first `tests` keys of `baseline`, with no
    verdicts (as a run without a baseline writes it)."""
    src = json.loads((REPLAY / "cpu-run.json").read_text())
    by_id = {r["nodeid"]: r for r in src["results"]}
    names = list(json.loads((REPLAY / "cpu-baseline.json").read_text())["entries"])
    rng = random.Random(seed)
    out = []
    for i in range(tests):
        r = copy.deepcopy(by_id[names[i % len(names)]])
        r = _scaled(r, 1 + rng.uniform(-0.05, 0.05))
        r["nodeid"] = _key(i, r["nodeid"])
        r["verdicts"] = {}
        out.append(r)
    return {**src, "results": out, "selected": None, "missing": [], "class_shifts": []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--results", type=int, default=5)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, doc in (("cpu.json", baseline(args.entries)), ("run.json", results(args.results))):
        path = args.out / name
        path.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()

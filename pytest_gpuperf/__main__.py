"""`python -m pytest_gpuperf compare RESULTS.json` (or the `gpuperf` console script): compare
a saved run with a baseline outside pytest and set the exit code, for gating in other CI
steps.

RESULTS.json is the file written by `pytest --gpuperf-json=PATH` or the `gpuperf` section
of `pytest --benchmark-json=PATH`. The baseline defaults to baselines/<profile>.json of the
run's profile. Exit codes: 0 no regression, 1 regression (0 with --warn-only), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .baselines import BaselineError, baseline_path, load
from .gate import compare, environment, metrics_of, metrics_of_extra, verdict_dict
from .report import VERDICT_HEADER, table, verdict_rows
from .results import Result


def _load_results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SystemExit(f"gpuperf compare: cannot read results {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"gpuperf compare: results {path} are not valid JSON: {exc}") from None
    if isinstance(data, dict) and "gpuperf" in data:
        data = data["gpuperf"]
    if not isinstance(data, dict) or "results" not in data or "device" not in data:
        raise SystemExit(
            f"gpuperf compare: {path} holds no gpuperf results (write them with "
            "pytest --gpuperf-json=PATH or --benchmark-json=PATH)"
        )
    return data


def compare_files(
    results_path: Path,
    baseline: Path | None,
    tolerance: float,
    memory_tolerance: float,
) -> tuple[list[list[str]], bool]:
    data = _load_results(results_path)
    if baseline is None:
        if not data.get("profile"):
            raise SystemExit("gpuperf compare: the run has no profile; pass --baseline FILE")
        baseline = baseline_path(Path("baselines"), data["profile"])
    try:
        base = load(baseline)
    except BaselineError as exc:
        raise SystemExit(f"gpuperf compare: {exc}") from None
    if base is None:
        raise SystemExit(f"gpuperf compare: no baseline file {baseline}")
    results = [Result.from_dict(r) for r in data["results"]]
    extras = list(data.get("metrics", []))
    regressed = False
    for r in results:
        env = environment(data["device"], r.emulated)
        verdicts = compare(
            metrics_of(r),
            env,
            base.entries.get(r.key),
            tolerance=tolerance,
            memory_tolerance=memory_tolerance,
        )
        r.verdicts = {
            k: verdict_dict(
                v, len(base.entries.get(r.key, {}).get("metrics", {}).get(k, {}).get("history", []))
            )
            for k, v in verdicts.items()
        }
        regressed |= any(v.failed for v in verdicts.values())
    for e in extras:
        env = environment(data["device"], e.get("emulated"))
        verdicts = compare(
            metrics_of_extra(e),
            env,
            base.entries.get(e["key"]),
            tolerance=tolerance,
            memory_tolerance=memory_tolerance,
        )
        e["verdicts"] = {k: verdict_dict(v, 0) for k, v in verdicts.items()}
        regressed |= any(v.failed for v in verdicts.values())
    measured = {r.key for r in results} | {e["key"] for e in extras}
    missing = [k for k in base.entries if k not in measured]
    return verdict_rows(results, extras, missing), regressed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpuperf", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="compare a saved run with a baseline")
    c.add_argument("results", type=Path, help="JSON from --gpuperf-json or --benchmark-json")
    c.add_argument("--baseline", type=Path, default=None, help="baseline file")
    c.add_argument("--tolerance", type=float, default=0.03, help="throughput (default 0.03)")
    c.add_argument("--memory-tolerance", type=float, default=0.05, help="memory (default 0.05)")
    c.add_argument("--warn-only", action="store_true", help="report without failing")
    args = parser.parse_args(argv)
    for name in ("tolerance", "memory_tolerance"):
        value = getattr(args, name)
        if not 0 < value < 1:
            parser.error(f"--{name.replace('_', '-')} must be between 0 and 1, got {value}")
    try:
        rows, regressed = compare_files(
            args.results, args.baseline, args.tolerance, args.memory_tolerance
        )
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    for line in table(VERDICT_HEADER, rows):
        print(line)
    if regressed:
        print("performance regression" + (" (--warn-only: not failing)" if args.warn_only else ""))
        return 0 if args.warn_only else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

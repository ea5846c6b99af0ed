"""Would more saved sessions decide more? Leave-one-out replay of full-suite runs.

For each run given, the other runs are saved into a copy of the baseline as extra sessions
(each a fresh machine), and the run is judged against that copy with the shipped rule
(`judge_run`, as `gpuperf compare` does). Prints, per run, how many throughput figures are
decided against the baseline as it is and against the baseline with the other runs added.

    python tools/replay_more_sessions.py baselines/h200.json run3.json run4.json ...
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.core.figures import TIMED
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.outputs.runfile import read_run
from pytest_gpuperf.run.baseline import save_run

DECIDED = ("unchanged", "regressed", "improved")


def decided(baseline: Path, run: Path, tolerance: float | None) -> tuple[int, int, int]:
    """Throughput figures decided, all throughput figures judged, and regressed verdicts."""
    data, summary = read_run(run)
    base = load(baseline)
    assert base is not None, baseline
    judge_run(
        summary.results,
        base.entries,
        environment(data["device"], None),
        tolerance=tolerance,
    )
    tp = [v for r in summary.results for n, v in r.verdicts.items() if n in TIMED]
    tp = [v for v in tp if v.status != "missing"]
    regressed = sum(v.status == "regressed" for r in summary.results for v in r.verdicts.values())
    return sum(v.status in DECIDED for v in tp), len(tp), regressed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("baseline", type=Path)
    ap.add_argument("runs", type=Path, nargs="+", help="--gpuperf-json files of full runs")
    ap.add_argument("--tolerance", type=float, default=None)
    args = ap.parse_args()
    for run in args.runs:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / args.baseline.name
            shutil.copy(args.baseline, copy)
            base = load(copy)
            assert base is not None
            for other in args.runs:
                if other == run:
                    continue
                data, summary = read_run(other)
                ok = [r for r in summary.results if not r.error]
                save_run(copy, base.profile, ok, [], environment(data["device"], None), {},
                         summary.session_id)  # fmt: skip
            before = decided(args.baseline, run, args.tolerance)
            after = decided(copy, run, args.tolerance)
        print(
            f"{run.name}: throughput decided {before[0]}/{before[1]} against the baseline, "
            f"{after[0]}/{after[1]} with the {len(args.runs) - 1} other run(s) saved as "
            f"sessions; regressed {before[2]} / {after[2]}"
        )


if __name__ == "__main__":
    main()

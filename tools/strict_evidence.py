"""How many of the shipped suite's judged GPU runs 5-9 (docs/evidence) --gpuperf-strict would
have failed, and why: each run's results files (its parts, as each run's tally.py lists
them) read back, their recorded verdicts classified by the plugin's own rule
(pytest_gpuperf/judging/blind.py) against the baseline the run was judged with, and a run
counted failed where any part left a gated figure undecided that is not undecided by design
(a launch-bound wall time beside its kernel time, a derived figure).

From the repository root: python tools/strict_evidence.py [-v]"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.judging.blind import WHYS, blindness
from pytest_gpuperf.outputs.runfile import read_run

E = Path(__file__).resolve().parent.parent / "docs" / "evidence"
H200 = E / "h200-2026-12-03" / "suite-baseline-h200-sessions1-3.json"  # runs 5-7's
H100 = E / "h100-2026-12-06-c" / "call1" / "sb100" / "h100.json"  # runs 8-9's
RUNS = {  # the parts of each run, as its tally.py names them
    "run 5 (H200)": (H200, "h200-2026-12-03-f", ["a/s/compare-finetune-184059.json",
        "b/s/compare-finetune-184627.json", "c/s/compare-generate-185159.json",
        "b/s/compare-dtype-184932.json"]),
    "run 6 (H200)": (H200, "h200-2026-12-03-g", ["c/s/compare-finetune-221233.json",
        "b/s/compare-finetune-220835.json", "b/s/compare-generate-220526.json",
        "d/s/compare-dtype-222015.json"]),
    "run 7 (H200)": (H200, "h200-2026-12-06", ["d/s/compare-finetune-045120.json",
        "c/s/compare-finetune-044729.json", "b/s/compare-generate-044313.json",
        "a/s/compare-dtype-044021.json"]),
    "run 8 (H100)": (H100, "h100-2026-12-06-c", ["call4/s/compare-finetune-082020.json",
        "call3/s/compare-finetune-081633.json", "call2/s/compare-generate-081119.json",
        "call2/s/compare-dtype-080850.json"]),
    "run 9 (H100)": (H100, "h100-2026-12-06-d", ["call3/s/compare-finetune-093753.json",
        "call2/s/compare-finetune-093419.json", "call1/s/compare-generate-092809.json",
        "call1/s/compare-dtype-092452.json"]),
}  # fmt: skip


def run_verdict(baseline: Path, folder: str, parts: list[str], verbose: bool) -> tuple[bool, str]:
    """Whether --gpuperf-strict fails the run (any part with a counted undecided figure),
    and a line saying how many figures and why."""
    base = load(baseline)
    entries = base.entries if base is not None else {}
    gated = counted = design = 0
    why: Counter[str] = Counter()
    failed_parts = []
    for part in parts:
        _, summary = read_run(E / folder / part)
        b = blindness(summary.results, entries)
        gated += b.gated
        counted += len(b.counted)
        design += len(b.figures) - len(b.counted)
        why.update(f.why for f in b.figures)
        if b.counted:
            failed_parts.append(part.rsplit("/", 1)[-1])
        for f in b.figures if verbose else ():
            print(f"   {part.rsplit('/', 1)[-1]}{f.line()}")
    said = ", ".join(f"{n} {WHYS[c].words}" for c, n in why.most_common())
    return bool(failed_parts), (
        f"{counted} of {gated - design} gated figures undecided"
        f" (+{design} undecided by design, not counted); why: {said or 'none'}; "
        f"parts failing: {', '.join(failed_parts) or 'none'}"
    )


def main() -> None:
    verbose = "-v" in sys.argv[1:]
    failed = 0
    for run, (baseline, folder, parts) in RUNS.items():
        fails, line = run_verdict(baseline, folder, parts, verbose)
        failed += fails
        print(f"{run}: {'FAILS' if fails else 'passes'} under --gpuperf-strict: {line}")
    print(f"--gpuperf-strict would have failed {failed} of {len(RUNS)} judged runs")


if __name__ == "__main__":
    main()

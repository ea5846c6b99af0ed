"""Run 6 of the shipped suite, judged whole at 25f1957 on one H200 against the 3 sessions
saved at cfe3008: each part's speed figures and benchmarks decided, every changed verdict
(a false alarm: nothing was changed), and what stays undecided, counted by run 3's
../h200-2026-12-03-d/tally.py. From the repository root:
python docs/evidence/h200-2026-12-03-g/tally.py"""

import runpy
from pathlib import Path

E = Path(__file__).parent
tally = runpy.run_path(str(E.parent / "h200-2026-12-03-d/tally.py"))["tally"]  # run 3's
tally(E, {"run 6": ["c/s/compare-finetune-221233.json", "b/s/compare-finetune-220835.json",
               "b/s/compare-generate-220526.json", "d/s/compare-dtype-222015.json"]})

"""Run 4 of the shipped suite, judged whole at d864213 on one H200 against the 3 sessions
saved at cfe3008: each part's speed figures and benchmarks decided, every changed verdict
(a false alarm: nothing was changed), and what stays undecided, counted by run 3's
../h200-2026-12-03-d/tally.py. From the repository root:
python docs/evidence/h200-2026-12-03-e/tally.py"""

import runpy
from pathlib import Path

E = Path(__file__).parent
tally = runpy.run_path(str(E.parent / "h200-2026-12-03-d/tally.py"))["tally"]  # run 3's
tally(E, {"run 4": ["a/s/compare-finetune-161421.json", "c/s/compare-finetune-163237.json",
               "c/s/compare-generate-163551.json", "b/s/compare-dtype-162130.json"]})

"""Run 5 of the shipped suite, judged whole at 6380181 on one H200 against the 3 sessions
saved at cfe3008: each part's speed figures and benchmarks decided, every changed verdict
(a false alarm: nothing was changed), and what stays undecided, counted by run 3's
../h200-2026-12-03-d/tally.py. From the repository root:
python docs/evidence/h200-2026-12-03-f/tally.py"""

import importlib.util
from pathlib import Path

E = Path(__file__).parent
spec = importlib.util.spec_from_file_location("tally_d", E.parent / "h200-2026-12-03-d/tally.py")
assert spec is not None and spec.loader is not None
run3 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run3)
run3.tally(E, {"run 5": ["a/s/compare-finetune-184059.json", "b/s/compare-finetune-184627.json",
                         "c/s/compare-generate-185159.json", "b/s/compare-dtype-184932.json"]})

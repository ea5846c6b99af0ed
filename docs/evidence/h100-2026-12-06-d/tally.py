"""Run 9 of the shipped suite, the second judged on an H100: one H100 (serial 1650925067608),
judged at 8ac31d3 against the H100 baseline of 2026-12-06 (sessions at b2dbba9: dtype and
generation 3 sessions on serial 1651824031257, finetune 2 there and a third on serial
1651624108306; none on this card), counted by run 3's ../h200-2026-12-03-d/tally.py as runs
3-8 were. From the repository root: python docs/evidence/h100-2026-12-06-d/tally.py"""

import runpy
from pathlib import Path

E = Path(__file__).parent
tally = runpy.run_path(str(E.parent / "h200-2026-12-03-d/tally.py"))["tally"]  # run 3's
tally(E, {"run 9 (H100)": ["call3/s/compare-finetune-093753.json",
                           "call2/s/compare-finetune-093419.json",
                           "call1/s/compare-generate-092809.json",
                           "call1/s/compare-dtype-092452.json"]})

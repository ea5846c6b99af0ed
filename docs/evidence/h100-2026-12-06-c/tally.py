"""Run 8 of the shipped suite, the first judged on an H100: one H100 (serial 1651624108306),
judged at 436ab2f against the H100 baseline of 2026-12-06 (sessions at b2dbba9; dtype and
generation 3 sessions on serial 1651824031257, finetune 2 sessions there and a third, call 1,
on this card), counted by run 3's ../h200-2026-12-03-d/tally.py as runs 3-7 were.
From the repository root: python docs/evidence/h100-2026-12-06-c/tally.py"""

import runpy
from pathlib import Path

E = Path(__file__).parent
tally = runpy.run_path(str(E.parent / "h200-2026-12-03-d/tally.py"))["tally"]  # run 3's
tally(E, {"run 8 (H100)": ["call4/s/compare-finetune-082020.json",
                           "call3/s/compare-finetune-081633.json",
                           "call2/s/compare-generate-081119.json",
                           "call2/s/compare-dtype-080850.json"]})

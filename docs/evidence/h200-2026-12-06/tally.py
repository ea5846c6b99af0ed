"""Run 7 of the shipped suite, judged whole at a8376e5 (under the round processes' warm-up,
23d4eaa) on one H200 against the 3 sessions saved at cfe3008, counted by run 3's
../h200-2026-12-03-d/tally.py as runs 3-6 were; then counted again as the rule landed after
it reads the same verdicts: a checked kernel-time figure whose test the paired stage left
out for its budget is inconclusive (run/paired._leave), where at a8376e5 the first stage's
verdict stood. From the repository root: python docs/evidence/h200-2026-12-06/tally.py"""

import json
import runpy
import tempfile
from pathlib import Path

E = Path(__file__).parent
tally = runpy.run_path(str(E.parent / "h200-2026-12-03-d/tally.py"))["tally"]  # run 3's
FILES = ["d/s/compare-finetune-045120.json", "c/s/compare-finetune-044729.json",
         "b/s/compare-generate-044313.json", "a/s/compare-dtype-044021.json"]
LEFT = "not re-measured by the paired stage: its test was left out of the rounds"
tally(E, {"run 7": FILES})
with tempfile.TemporaryDirectory() as tmp:
    for f in FILES:
        d = json.loads((E / f).read_text())
        for r in d["results"]:
            for k, v in (r.get("verdicts") or {}).items():
                if v.get("status") in ("regressed", "improved") and LEFT in (v.get("reason") or ""):
                    print(f"  as the rule after a8376e5 reads it: {r['key']} {k} {v['status']} "
                          f"({100 * v['change']:+.2f}%) -> inconclusive, not checked")
                    v["status"] = "inconclusive"
        (Path(tmp) / f).parent.mkdir(parents=True, exist_ok=True)
        (Path(tmp) / f).write_text(json.dumps(d))
    tally(Path(tmp), {"run 7, the rule after a8376e5": FILES})

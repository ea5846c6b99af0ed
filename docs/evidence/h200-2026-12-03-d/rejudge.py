"""Run 3's first stage judged again on the CPU with the code checked out (judge_run on each
part's JSON against the 3 sessions, at the first stage's share of the budget, as the run
judged it), beside the first-stage verdicts the GPU run recorded (c3060bc; a figure the
paired stage re-measured keeps its first-stage verdict under `stage1`). Prints every speed
figure whose first-stage verdict differs. From the repository root:
python docs/evidence/h200-2026-12-03-d/rejudge.py"""

import json
from pathlib import Path

from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.judging.judge import judge_run

E = Path(__file__).parent
BASE = json.loads((E.parent / "h200-2026-12-03" / "suite-baseline-h200-sessions1-3.json")
                  .read_text())["entries"]  # fmt: skip
PARTS = ["a/s/compare-finetune-135538.json", "b/s/compare-finetune-140227.json",
         "c/s/compare-generate-140856.json", "a/s/compare-dtype-135843.json"]  # fmt: skip
same = differ = 0
for f in PARTS:
    run = json.loads((E / f).read_text())
    results = [Result.from_dict(d) for d in run["results"]]
    first = {(r.key, k): (v.get("stage1") or {}).get("status") or v["status"]
             for r in results for k, v in r.verdicts.items()}  # fmt: skip
    for r in results:
        r.verdicts = {}
    judge_run(results, BASE, environment(run["device"], None), false_alarm=0.01 * 0.5)
    for r in results:
        for k, v in r.verdicts.items():
            if not k.startswith(("throughput", "latency")) or k.endswith("_per_clock"):
                continue
            if v["status"] == first.get((r.key, k)):
                same += 1
            else:
                differ += 1
                print(f"{f}: {r.key} {k} {first.get((r.key, k))} -> {v['status']}")
print(f"{same} speed figures with the same first-stage verdict, {differ} different")

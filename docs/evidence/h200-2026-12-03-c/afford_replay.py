"""What fresh/afford.py (as of the commit that last changed this script) would have
re-measured in the shipped suite's judged runs of 2026-12-03: RUN `run1` (calls 1-3 of
../h200-2026-12-03-b at 8bb3cf3, which started the rounds of every candidate; priced as the
stage of 2eb2c43 did, the base's rounds at the head's) or `run2` (the default: calls 4-6 here
at 8d797cf, the base's side at the baseline's saved duration_s as since fc470ec). For each
part: its candidates (run/paired.candidates on the run's own JSON, each figure at its first
stage's verdict where the paired stage replaced it, and the 3-session baseline), each test's
first-stage seconds from the log's "slowest durations" (the 12 longest phases: a lower
bound for the rest), each side's price a round (its sampling and kernel pass capped as a
round's), the budget the stage had (the run's test time, at least 180 s), fit's choice and
what every candidate would need. Run from the repository root:
python docs/evidence/h200-2026-12-03-c/afford_replay.py [run1|run2]"""

import json
import re
import sys
from pathlib import Path

from pytest_gpuperf.baseline.schema import expected_durations
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.fresh.afford import ROUND_MAX_TIME, affordable, first_need, price, saved
from pytest_gpuperf.run.paired import BUDGET_FLOOR_S, PAIRS, candidates

HERE = Path(__file__).parent
BASE = json.loads((HERE.parent / "h200-2026-12-03" /
                   "suite-baseline-h200-sessions1-3.json").read_text())["entries"]  # fmt: skip
PHASE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)$")
RUN = sys.argv[1] if len(sys.argv) > 1 else "run2"
FOLDER, PARTS = {"run1": (HERE.parent / "h200-2026-12-03-b", "call[123]/compare-*.log"),
                 "run2": (HERE, "call[456]/s/compare-*.log")}[RUN]  # fmt: skip

for log in sorted(FOLDER.glob(PARTS)):
    costs: dict[str, float] = {}
    for line in log.read_text().splitlines():
        m = PHASE.match(line)
        if m:
            costs[m[3]] = costs.get(m[3], 0.0) + float(m[1])
    run = json.loads(log.with_suffix(".json").read_text())
    for d in run["results"]:  # the first stage's verdicts, as the stage found them
        for name, v in (d.get("verdicts") or {}).items():
            if "stage1" in v:
                d["verdicts"][name] = v["stage1"]
    results = [Result.from_dict(d) for d in run["results"]]
    todo = candidates(results, BASE, None)
    tests = sorted({r.nodeid for r, _, _ in todo})
    budget = max(BUDGET_FLOOR_S, sum(costs.values()))
    base_s = expected_durations(BASE, tests) if RUN == "run2" else {}
    kept_todo, kept, said = affordable(todo, tests, results, costs, ROUND_MAX_TIME, budget,
                                       PAIRS, base_s)  # fmt: skip
    savings = {t: [saved(r.measure_s, r.kernel_s, r.kernel_time.n if r.kernel_time else 0,
                         ROUND_MAX_TIME)
                   for r in results if r.nodeid == t and r.kind == "measured"]
               for t in tests}  # fmt: skip
    prices = {t: price(costs.get(t, 0.0), savings[t]) for t in tests}
    print(f"{log.relative_to(FOLDER)}: budget {budget:.0f} s, {len(todo)} candidate "
          f"figure(s) of {len(tests)} test(s)")  # fmt: skip
    for t in tests:
        c, p = costs.get(t, 0.0), prices[t]
        b = price(base_s[t], savings[t]) if t in base_s else p
        base = f"base saved {base_s[t]:.1f} s" if t in base_s else "base priced as the head"
        print(f"    {'KEEP' if t in kept else 'LEAVE'} {t.split('::', 1)[1]} {c:.1f} s in "
              f"stage 1 ({base}), {p:.1f} s a round for the head, {b:.1f} s for the base "
              f"(alone needs {first_need((p + b) / 2, PAIRS):.0f} s)")  # fmt: skip
    print(f"    kept {len(kept_todo)} figure(s) of {len(kept)} test(s); {said or 'none left'}")
    every = first_need(sum(prices.values()), PAIRS)
    print(f"    every candidate at the head's prices: {every:.0f} s")

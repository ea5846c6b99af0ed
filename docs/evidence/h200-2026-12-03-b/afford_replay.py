"""What fresh/afford.py (as of the commit that last changed this script) would have
re-measured in the judged run of 2026-12-03 (calls 1-3 at 8bb3cf3, which started the rounds
of every candidate): each part's candidates (run/paired.candidates on the run's own JSON,
each figure at its first stage's verdict where the paired stage replaced it, and the
3-session baseline), each test's first-stage seconds from the log's "slowest durations" (the
12 longest phases; the rest were under 0.005 s, or in call 2 under 4.2 s: a lower bound
there), each test's price a round (its sampling capped at the rounds' 0.5 s), the budget the
stage had (the run's test time, at least 180 s), fit's choice and what every candidate
would need. Run from the repository root:
python docs/evidence/h200-2026-12-03-b/afford_replay.py"""

import json
import re
from pathlib import Path

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.fresh.afford import ROUND_MAX_TIME, affordable, first_need, price, saved
from pytest_gpuperf.run.paired import BUDGET_FLOOR_S, PAIRS, candidates

HERE = Path(__file__).parent
BASE = json.loads((HERE.parent / "h200-2026-12-03" /
                   "suite-baseline-h200-sessions1-3.json").read_text())["entries"]  # fmt: skip
PHASE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)$")

for log in sorted(HERE.glob("call[123]/compare-*.log")):
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
    kept_todo, kept, said = affordable(todo, tests, results, costs, ROUND_MAX_TIME, budget,
                                       PAIRS)  # fmt: skip
    prices = {t: price(costs.get(t, 0.0), [saved(r.measure_s, r.kernel_s,
                                                 r.kernel_time.n if r.kernel_time else 0,
                                                 ROUND_MAX_TIME)
                                           for r in results
                                           if r.nodeid == t and r.kind == "measured"])
              for t in tests}  # fmt: skip
    print(f"{log.parent.name}/{log.name}: budget {budget:.0f} s, {len(todo)} candidate "
          f"figure(s) of {len(tests)} test(s)")  # fmt: skip
    for t in tests:
        c, p = costs.get(t, 0.0), prices[t]
        print(f"    {'KEEP' if t in kept else 'LEAVE'} {t.split('::', 1)[1]} {c:.1f} s in "
              f"stage 1, {p:.1f} s a round (alone needs {first_need(p, PAIRS):.0f} s)")  # fmt: skip
    print(f"    kept {len(kept_todo)} figure(s) of {len(kept)} test(s); {said or 'none left'}")
    print(f"    every candidate: {first_need(sum(prices.values()), PAIRS):.0f} s")

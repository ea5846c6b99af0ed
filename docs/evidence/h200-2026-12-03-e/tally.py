"""Run 4 of the shipped suite, judged whole at d864213 on one H200 against the 3 sessions
saved at cfe3008: each part's speed figures and benchmarks decided, every changed verdict
(a false alarm: nothing was changed), and what stays undecided. The counting is
../h200-2026-12-03-d/tally.py's (run 3). From the repository root:
python docs/evidence/h200-2026-12-03-e/tally.py"""

import json
from pathlib import Path

E = Path(__file__).parent
DEC = ("unchanged", "regressed", "improved")
PARTS = ["a/s/compare-finetune-161421.json", "c/s/compare-finetune-163237.json",
         "c/s/compare-generate-163551.json", "b/s/compare-dtype-162130.json"]  # fmt: skip
tot = dec = nb = decb = lb = lbd = 0
for f in PARTS:
    d = json.loads((E / f).read_text())
    n = d_ = b = db = 0
    for r in d["results"]:
        speed = {k: v for k, v in (r.get("verdicts") or {}).items()
                 if k.startswith(("throughput", "latency")) and not k.endswith("_per_clock")}
        if not speed:
            continue
        b += 1
        db += any(v.get("status") in DEC for v in speed.values())
        for k, v in speed.items():
            n += 1
            s = v.get("status")
            d_ += s in DEC
            wall_lb = not k.endswith("_kernels") and bool(r.get("launch_bound"))
            lb += wall_lb
            lbd += wall_lb and s in DEC
            if s in ("regressed", "improved"):
                print(f"  FALSE ALARM {r['key']} {k} {s}")
            if s not in DEC:
                by = "paired" if v.get("paired") else "stage 1"
                print(f"  undecided  {r['key'].split('::', 1)[1][:58]:58s} {k:18s} "
                      f"{'launch-bound wall' if wall_lb else ''} ({by}) "
                      f"{(v.get('basis') or '')[:60]}")
    print(f"run 4 {f}: {d_} of {n} speed figures, {db} of {b} benchmarks")
    tot, dec, nb, decb = tot + n, dec + d_, nb + b, decb + db
print(f"run 4 TOTAL: {dec} of {tot} speed figures ({100 * dec / tot:.0f}%), {decb} of {nb} "
      f"benchmarks ({100 * decb / nb:.1f}%); launch-bound wall times {lb} ({lbd} decided): "
      f"{dec - lbd} of {tot - lb} other figures ({100 * (dec - lbd) / (tot - lb):.0f}%)")

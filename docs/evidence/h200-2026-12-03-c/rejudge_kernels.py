"""Run 2's first stage judged again on the CPU (judge_run on its own JSON against the 3
sessions, false-alarm share 0.5% as with the paired stage on): MODE `shipped` as judged,
`own` with every kernel-time figure in a class of its own (pooled among kernel figures,
no session offsets), `own+offsets` the same with session offsets removed in that class.
A second argument judges the four parts' results as one run (a whole-suite nightly) rather
than part by part. Written as an experiment, with the code of c85f275 (`rejudge_kernels.txt`);
the kernel-time class is the shipped rule since c3060bc, so `shipped` with later code judges
with it (28 of 40 benchmarks part by part, docs/performance.md). From the repository root:
python docs/evidence/h200-2026-12-03-c/rejudge_kernels.py MODE [combined]"""

import json
import sys
from pathlib import Path

from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.core import figures as F
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.judging import noise as N
from pytest_gpuperf.judging.judge import judge_run

E = Path("docs/evidence/h200-2026-12-03-c")
BASE = json.loads(
    Path("docs/evidence/h200-2026-12-03/suite-baseline-h200-sessions1-3.json").read_text()
)["entries"]
DEC = ("unchanged", "regressed", "improved")
mode = sys.argv[1]
orig_kernels = F._kernels
if mode != "shipped":

    def own_class(result, gate, clock):
        m = orig_kernels(result, gate, clock)
        m["noise_class"] = "kernels"
        return m

    F._kernels = own_class
    if mode == "own+offsets":
        N.OFFSET_CLASSES = (*N.OFFSET_CLASSES, "kernels")
tot = dec = nb = decb = 0
COMBINED = len(sys.argv) > 2
allres = []
for f in [
    "call6/s/compare-finetune-121148.json",
    "call4/s/compare-finetune-115952.json",
    "call5/s/compare-generate-120641.json",
    "call6/s/compare-dtype-121453.json",
]:
    run = json.loads((E / f).read_text())
    results = [Result.from_dict(d) for d in run["results"]]
    if COMBINED:
        allres += results
        if not f.startswith("call6/s/compare-dtype"):
            continue
        results = allres
    for r in results:
        r.verdicts = {}
    env = environment(run["device"], None)
    judge_run(results, BASE, env, false_alarm=0.01 * 0.5)
    n = d_ = b = db = 0
    wrong = []
    for r in results:
        speed = {
            k: v
            for k, v in r.verdicts.items()
            if k.startswith(("throughput", "latency")) and not k.endswith("_per_clock")
        }
        for k, v in speed.items():
            n += 1
            d_ += v.get("status") in DEC
            if v.get("status") in ("regressed", "improved"):
                wrong.append(f"{r.key} {k} {v['status']} {100 * (v.get('change') or 0):+.2f}%")
            if k.endswith("kernels") and mode != "shipped":
                print(
                    f"   {v.get('status'):12s} {r.key.split('::', 1)[1][:60]:60s} {k} "
                    f"{(v.get('basis') or '')[:90]}"
                )
        if speed:
            b += 1
            db += any(v.get("status") in DEC for v in speed.values())
    print(f"{mode} {f}: {d_} of {n} speed figures, {db} of {b} benchmarks; false alarms: {wrong}")
    tot += n
    dec += d_
    nb += b
    decb += db
print(
    f"{mode} TOTAL stage 1: {dec} of {tot} ({100 * dec / tot:.0f}%), "
    f"{decb} of {nb} benchmarks ({100 * decb / nb:.1f}%)"
)

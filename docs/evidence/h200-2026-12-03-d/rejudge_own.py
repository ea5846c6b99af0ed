"""The own file's stored runs (docs/evidence/h200-2026-12-03/own: 2 A/A and 3 at 10% slower,
6baeacb's runs of 2026-12-02/03) judged again on the CPU, first stage only, at the first
stage's share of the budget, with whatever pytest_gpuperf is imported: the checked-out code,
or an older commit's with PYTHONPATH set to a `git archive` of it. Prints each speed figure's
first-stage verdict, change and interval. From the repository root:
python docs/evidence/h200-2026-12-03-d/rejudge_own.py"""

import json
import tarfile
import tempfile
from pathlib import Path

import pytest_gpuperf
from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.judging.judge import judge_run

OWN = Path(__file__).parent.parent / "h200-2026-12-03" / "own"
tmp = Path(tempfile.mkdtemp())
for t in OWN.glob("*.tgz"):
    with tarfile.open(t) as f:
        f.extractall(tmp / t.stem, filter="data")
BASE = json.loads((tmp / "paired-repo/paired-repo/baselines/h200.json").read_text())["entries"]
print(f"code: {Path(pytest_gpuperf.__file__).parent}")
for name in ("p-c2/p/aa-1", "p-c3/p/aa-2", "p-c1/p/slow10-1", "p-c1/p/slow10-2", "p-c2/p/slow10-3"):
    run = json.loads((tmp / f"{name}.json").read_text())
    results = [Result.from_dict(d) for d in run["results"]]
    for r in results:
        r.verdicts = {}
    judge_run(results, BASE, environment(run["device"], None), false_alarm=0.01 * 0.5)
    print(name.rsplit("/", 1)[1])
    for r in results:
        for k, v in r.verdicts.items():
            if k.startswith(("throughput", "latency")) and not k.endswith("_per_clock"):
                print(f"  {r.key.split('::', 1)[1]:20s} {k:18s} {v['status']:12s} "
                      f"{100 * (v.get('change') or 0):+6.1f}% {(v.get('basis') or '')[:60]}")

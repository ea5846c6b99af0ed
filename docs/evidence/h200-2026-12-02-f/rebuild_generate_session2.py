"""Rebuild the shipped suite's baseline after session 2's `save:generate` (2026-12-02,
21:55-21:58 UTC, at cfe3008): that call saved 21 benchmarks on the H200
(suite/save-generate-215507.log, "baseline: saved 21 benchmark(s)"), but the try that ran it
was cut off before the baseline file came back; suite-baseline-h200-sessions1-2.json here is
the file as the finetune+dtype call left it. This merges the generate call's own results
(suite/save-generate-215507.json, the run's --gpuperf-json) through the plugin's own save
path (baseline.schema.entries_to_save, baseline.store.save), with the run's session id, the
commit the clone was at, the save's date (the run's end), the host's name and each test's
duration from the log's --durations lines. Run from the repository root:

    python3 docs/evidence/h200-2026-12-02-f/rebuild_generate_session2.py OUT.json
"""

import json
import re
import shutil
import sys
from pathlib import Path

from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.baseline.schema import entries_to_save
from pytest_gpuperf.baseline.store import save
from pytest_gpuperf.core.results import Result

HERE = Path(__file__).parent
COMMIT = "cfe300823ee422d651a16162538d33c9c91fbae8"
DATE = "2026-12-02T21:58:10+00:00"  # 215507 + 183 s of the run (its log's last line)

run = json.loads((HERE / "suite/save-generate-215507.json").read_text())
durations: dict[str, float] = {}
for line in (HERE / "suite/save-generate-215507.log").read_text().splitlines():
    m = re.match(r"([\d.]+)s (setup|call|teardown)\s+(\S+)$", line)
    if m:
        durations[m[3]] = durations.get(m[3], 0.0) + float(m[1])
results = [Result.from_dict(d) for d in run["results"]]
ok = [r for r in results if r.outcome == "ok"]
env = environment(run["device"], run.get("emulated"))
updates = entries_to_save(ok, env, date=DATE, commit=COMMIT, session=run["session_id"],
                          host="vm", durations=durations)
out = Path(sys.argv[1])
shutil.copyfile(HERE / "suite-baseline-h200-sessions1-2.json", out)
save(out, "h200", updates, DATE)
print(f"merged {len(updates)} entries of session {run['session_id']} into {out}")

"""Run 4's finetune part (other than the sweeps) priced up front as the paired stage does,
with the code of the working tree, against what the run did (its line: realistic-length
QLoRA and the bf16-adapter hidden casts kept, priced at about 13 s a side a round; their
pair's first round of both builds took 110.5 s, the second 73.1 s, and the stage measured
nothing). Each test's first-stage seconds are the call times the run's log printed
(--durations; their setup and teardown took under 3.75 s each, not printed, so 0 here:
a price can only be low by that), the base's are the baseline's saved `duration_s` at
cfe3008, the budget the run's own, 205 s. From the repository root:
python docs/evidence/h200-2026-12-03-e/afford_replay.py"""

import json
from pathlib import Path

from pytest_gpuperf.baseline.schema import expected_durations
from pytest_gpuperf.core.results import Result
from pytest_gpuperf.fresh.afford import affordable
from pytest_gpuperf.run.paired import candidates

E = Path(__file__).parent
run = json.loads((E / "a/s/compare-finetune-161421.json").read_text())
results = [Result.from_dict(d) for d in run["results"]]
base = json.loads((E.parent / "h200-2026-12-03/suite-baseline-h200-sessions1-3.json").read_text())
entries = base.get("entries", base)
calls = {  # the log's --durations (call)
    "benchmarks/test_finetune.py::test_qlora_realistic_lengths[llama2-7b]": 36.95,
    "benchmarks/test_finetune.py::test_lora_step[llama-1b-b8]": 26.16 + 3.75,  # and its setup
    "benchmarks/test_finetune.py::test_hidden_casts[llama-1b-b32-bf16-adapters]": 6.81,
}
todo = candidates(results, entries, None)
tests = sorted({r.nodeid for r, _, _ in todo})
base_s = expected_durations(entries, tests)
for label, run_max in (("as run 4 priced (no run max_time)", None),
                       ("now (run max_time 10 s)", 10.0)):
    _, kept, said = affordable(todo, tests, results, calls, 0.5, 205.0, 2, base_s, run_max)
    print(f"{label}: re-measured {[t.split('::')[-1] for t in kept]}")
    print(f"    left: {said or 'none'}")

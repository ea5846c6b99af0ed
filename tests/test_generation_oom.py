"""The shipped scale-tier generation benchmark when a batch's KV cache does not fit: the
out-of-memory is a recorded result (`oom_batch`), the test passes, nothing else is timed.
Run for real (the tiny nf4 variant on the CPU) with the decoder's warm-up made to fail as
CUDA does when a cache is too large."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

OOM_PLUGIN = textwrap.dedent(
    """
    from pytest_gpuperf.workloads import generation

    def warm(self, input_ids):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB (test double)")

    generation.StaticGreedyDecoder.warm = warm
    """
)


def test_a_batch_that_runs_out_of_memory_is_recorded(tmp_path):
    (tmp_path / "oom_plugin.py").write_text(OOM_PLUGIN)
    out = tmp_path / "run.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/test_generate.py", "-k", "scale and tiny",
         "-q", "-p", "no:cacheprovider", "-p", "oom_plugin", "--gpuperf-baseline=off",
         f"--gpuperf-json={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout
    results = json.loads(out.read_text())["results"]
    keys = {r["key"].split("::", 1)[1]: r for r in results}
    assert set(keys) == {"test_generate_scale[tiny-nf4-b2]::oom_batch"}, sorted(keys)
    recorded = keys["test_generate_scale[tiny-nf4-b2]::oom_batch"]
    assert recorded["throughput"]["median"] == 2
    assert "out of memory at batch 2" in " ".join(recorded["notes"])

"""Fresh pytest processes: starting one as the run started (`confirm`, also the
confirmation's re-measurement), the deferred multi-GPU tests (`deferred`), pytest-xdist
workers and their GPUs (`workers`), a worktree of another commit and the probe that lists
what a process imported (`abtree`, `abprobe`: gpuperf ab's and the paired stage's, whose
rounds are pytest_gpuperf/paired/), and where each module a base build imported came from
(`provenance`)."""

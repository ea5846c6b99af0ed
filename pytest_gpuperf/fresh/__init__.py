"""Fresh pytest processes: starting one as the run started (`confirm`, also the
confirmation's re-measurement), the deferred multi-GPU tests (`deferred`), pytest-xdist
workers and their GPUs (`workers`), a worktree of another commit and the probe that lists
what a process imported (`abtree`, `abprobe`), and measuring rounds in long-lived processes
of two builds (`rounds`, with the plugin each of those processes runs, `roundworker`)."""

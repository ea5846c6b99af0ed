"""Fresh pytest processes: starting one as the run started (`confirm`, also the
confirmation's re-measurement), the deferred multi-GPU tests (`deferred`), and pytest-xdist
workers and their GPUs (`workers`)."""

"""One pytest run's state (`session`) and its baseline: find, judge, confirm, save
(`baseline`); pytest-benchmark's flags for `gpu_benchmark` tests and its storage
(`benchflags`)."""

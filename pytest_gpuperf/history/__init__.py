"""The nightly history: one file per run (record), read back as series (store), runs
imported from results and baseline files (importer), and the steps and creep in each
series (changes). Imported only where `--gpuperf-history` or `gpuperf history` asks."""

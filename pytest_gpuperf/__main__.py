"""`python -m pytest_gpuperf`: the `gpuperf` command (cli/main.py)."""

from .cli.main import main

raise SystemExit(main())

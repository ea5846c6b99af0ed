"""The pytest plugin that `gpuperf ab` gives each of its rounds (`-p gpuperf_ab_probe`, a
copy of this file in the run's temporary directory): when the session ends it writes the
files of the imported modules that lie under the directories named in GPUPERF_AB_WATCH
(the checkout and the base worktree) to GPUPERF_AB_MODULES/<pid>.json, and the file each
module listed in the file GPUPERF_AB_OWN names (the base worktree's own:
provenance.own_modules) came from, wherever it lies (an installed copy in site-packages
too), to <pid>.own, so that ab can tell
which build each side's code came from. One file per process: xdist's workers load it
too. It imports nothing of pytest_gpuperf: the base's version of the plugin may not have it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

WATCH = "GPUPERF_AB_WATCH"  # os.pathsep-separated directories
OUT = "GPUPERF_AB_MODULES"  # the directory this process writes its list into
OWN = "GPUPERF_AB_OWN"  # a JSON file listing module names: where each was imported from


def imported_under(roots: list[str]) -> list[str]:
    """The real paths of the imported modules' files that lie under one of `roots`."""
    found = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not isinstance(name, str):
            continue
        path = os.path.realpath(name)
        if any(path.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
            found.add(path)
    return sorted(found)


def pytest_unconfigure(config: Any) -> None:
    out = os.environ.get(OUT)
    if not out:
        return
    roots = [os.path.realpath(p) for p in os.environ.get(WATCH, "").split(os.pathsep) if p]
    text = json.dumps(imported_under(roots))
    Path(out, f"{os.getpid()}.json").write_text(text, encoding="utf-8")
    try:
        names = set(json.loads(Path(os.environ[OWN]).read_text(encoding="utf-8")))
    except (KeyError, OSError, ValueError, TypeError):
        names = set()
    own = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items()) if n in names}
    Path(out, f"{os.getpid()}.own").write_text(json.dumps(own), encoding="utf-8")

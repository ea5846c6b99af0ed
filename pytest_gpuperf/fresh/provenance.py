"""Import proof: a fresh process that claims to run a build shows it imported that build's
own files, or its figures are refused in one line naming the file. The one place for it;
its callers are the confirmation's and the deferred tests' fresh process (confirm.py,
deferred.py), the paired stage's rounds (rounds.py, roundworker.py) and `gpuperf ab`'s
rounds (cli/ab.py, abprobe.py); `gpuperf bisect` will reuse it.

Two builds, two proofs:

- The confirmation re-measures the run's own build: whatever copy the run imported (an
  editable install, a copy in site-packages as tox installs it, a src/ or lib/ tree, a
  namespace package) is the right one. The fresh process pins each top-level module the run
  had imported to the run's file (`write_pins`, `PIN_SOURCE` in its bootstrap), so a
  sys.path that puts another copy first (the rootdir a conftest inserted, an outer process's
  path) cannot change the code; it then lists what it imported (`imported_files`) and the
  run refuses its figures where a module came from another file (`differences`).
- The paired stage and `gpuperf ab` measure two commits: a base process must import each of
  the base worktree's own modules (`own_modules`: flat, src/, lib/, namespace packages) from
  the worktree, a head process none from it (`wrong_build`). An installed copy of the head
  (non-editable, in site-packages) imported by the base is the head's code measured twice."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# the bootstrap's part that pins modules (run with PINS_PATH bound to the pins file), before
# anything of the run's is imported: it imports nothing but the standard library
PIN_SOURCE = """
import importlib.util as _iu, json as _js, os as _os
class _GpuperfPinned:
    def __init__(self, files):
        self.files = files
    def find_spec(self, name, path=None, target=None):
        file = self.files.get(name)
        if file is None or not _os.path.isfile(file):
            return None
        where = [_os.path.dirname(file)] if _os.path.basename(file) == "__init__.py" else None
        return _iu.spec_from_file_location(name, file, submodule_search_locations=where)
with open(PINS_PATH, encoding="utf-8") as _fh:
    sys.meta_path.insert(0, _GpuperfPinned(_js.load(_fh)))
"""
NOT_OWN = frozenset({"conftest", "setup", "noxfile", "tasks", "fabfile"})  # top-level scripts


def imported_files() -> dict[str, str]:
    """Module name: the file it was imported from, for this process's modules that have
    one, less `__main__`, conftest modules (one name for many files) and modules generated
    at run time into a compile cache (torch.compile's inductor modules have one name and a
    file in each process's own cache)."""
    generated = [
        os.path.realpath(v)
        for k, v in os.environ.items()
        if k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR") and v
    ]
    out = {}
    for name, module in list(sys.modules.items()):
        try:
            file = vars(module).get("__file__")
        except TypeError:  # not a module
            continue
        if not isinstance(file, str) or name == "__main__" or Path(file).name == "conftest.py":
            continue
        real = os.path.realpath(file)
        cached = "torchinductor" in real or f"{os.sep}.triton{os.sep}" in real
        if cached or any(real.startswith(g + os.sep) for g in generated):
            continue
        out[name] = file
    return out


def differences(theirs: dict[str, str], ours: dict[str, str], shown: int = 3) -> str:
    """The modules both processes imported from different files, one per top-level
    package, as one line ("" when none)."""
    seen: set[str] = set()
    out = []
    for name in sorted(theirs):
        top = name.partition(".")[0]
        if name not in ours or top in seen:
            continue
        if os.path.realpath(theirs[name]) != os.path.realpath(ours[name]):
            seen.add(top)
            out.append(f"{name} from {theirs[name]} (this run: {ours[name]})")
    more = f", and {len(out) - shown} more" if len(out) > shown else ""
    return "; ".join(out[:shown]) + more


def other_files(path: Path) -> str:
    """What the fresh process (its list at `path`) imported from other files than this
    process ("" when it wrote no list, or all agree)."""
    try:
        theirs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return differences(theirs, imported_files()) if isinstance(theirs, dict) else ""


def _stdlib() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(p) + os.sep for k in ("stdlib", "platstdlib")
                 if (p := paths.get(k)))  # fmt: skip


def pins() -> dict[str, str]:
    """This process's modules to pin in a fresh process, name -> Python source file (a
    package's __init__.py): the top-level ones outside the standard library, and those
    whose parent is a namespace package (no file: its path is made again from sys.path)."""
    std = _stdlib()
    files = imported_files()
    out = {}
    for name, file in files.items():
        parent = name.rpartition(".")[0]
        if parent and (parent in files or parent not in sys.modules):
            continue  # found through its parent's path, as the run found it
        if not file.endswith(".py") or os.path.realpath(file).startswith(std):
            continue
        out[name] = file
    return out


def write_pins(path: Path) -> Path:
    """This process's `pins`, written to `path` for a fresh process's bootstrap."""
    path.write_text(json.dumps(pins()), encoding="utf-8")
    return path


def pin_bootstrap(path: Path) -> str:
    """The bootstrap lines that pin the modules listed in `path` (write_pins)."""
    return f"PINS_PATH = {str(path)!r}\n{PIN_SOURCE}"


# ----------------------------------------------------- two builds: the base and the head


def _packages(d: Path, prefix: str, depth: int) -> set[str]:
    """The importable names a folder `d` provides: its .py modules, its packages, and
    inside a folder without __init__.py (a namespace package) the same, `depth` deep."""
    names: set[str] = set()
    try:
        entries = sorted(d.iterdir())
    except OSError:
        return names
    for e in entries:
        if e.suffix == ".py" and e.stem not in NOT_OWN and e.stem.isidentifier():
            names.add(prefix + e.stem)
        elif e.is_dir() and e.name.isidentifier() and not e.name.startswith("_"):
            if (e / "__init__.py").is_file():
                names.add(prefix + e.name)
            elif depth > 0:
                names |= _packages(e, f"{prefix}{e.name}.", depth - 1)
    return names


def own_modules(tree: Path) -> list[str]:
    """The modules a build's tree provides, as a process imports them: its own .py files
    and packages at its root and under src/ and lib/, and the packages of namespace
    packages (folders without __init__.py: `ns.pkg`; under src/ and lib/ their modules too). A base
    process must import each from the worktree, a head process none from it."""
    names = _packages(tree, "", 0)
    for e in sorted(tree.iterdir()) if tree.is_dir() else []:  # a namespace's packages
        if (e.is_dir() and e.name.isidentifier() and e.name not in ("src", "lib")
                and not (e / "__init__.py").exists()):  # fmt: skip
            names |= {f"{e.name}.{s.name}" for s in sorted(e.iterdir())
                      if s.name.isidentifier() and (s / "__init__.py").is_file()}  # fmt: skip
    for sub in ("src", "lib"):
        if (tree / sub).is_dir() and not (tree / sub / "__init__.py").is_file():
            names |= _packages(tree / sub, "", 2)
    return sorted(names)


def origins(names: list[str]) -> dict[str, str | None]:
    """The file each of `names` was imported from in this process (None: no file, as a
    namespace package has none); names not imported are left out."""
    return {n: getattr(sys.modules[n], "__file__", None) for n in names if n in sys.modules}


def wrong_build(side: str, modules: Iterable[tuple[str, Any]], tree: Path) -> str | None:
    """Why a process of `side` measured the other build, in one line naming the file, or
    None, from the (module, file) pairs of the worktree's own modules it imported: the base
    imported one from anywhere but the worktree (an installed copy of the head, a path the
    bootstrap did not map), the head one from the worktree."""
    t = os.path.realpath(tree)
    for name, file in modules:
        if not isinstance(file, str):
            continue  # a namespace package: its modules are listed on their own
        inside = os.path.realpath(file).startswith(t + os.sep)
        if side == "base" and not inside:
            return (f"the base process imported {name} from {file}, not from the baseline "
                    f"commit's worktree {tree}: an installed copy of the code under test "
                    "would measure the head twice (install it editable, or put its "
                    "directory on PYTHONPATH)")  # fmt: skip
        if side == "head" and inside:
            return f"the head process imported {name} from the base worktree ({file})"
    return None

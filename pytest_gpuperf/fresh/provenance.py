"""Import proof: a fresh process that claims to run a build shows it imported that build's
own files, or its figures are refused in one line naming the file. The one place for it;
its callers are the confirmation's and the deferred tests' fresh process (confirm.py,
deferred.py), the paired stage's rounds (paired/rounds.py, paired/worker.py) and `gpuperf ab`'s
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
  the base worktree's own modules (`own_modules`: every package and module the tree holds,
  whatever its layout) from the worktree, a head process none from it (`wrong_build`). An
  installed copy of the head (non-editable, in site-packages) imported by the base is the
  head's code measured twice."""

from __future__ import annotations

import functools
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
NOT_OWN = frozenset({"conftest", "setup", "noxfile", "tasks", "fabfile", "__main__"})  # scripts


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


# a walk of a tree for its own modules skips hidden folders, a virtualenv's (pyvenv.cfg),
# these (installed or generated files, never a build's own source), build/ and dist/ unless
# they are packages, and goes TREE_DEPTH folders deep and TREE_DIRS folders wide at most
SKIP_DIRS = frozenset({"node_modules", "site-packages", "dist-packages", "__pycache__"})
TREE_DEPTH = 12
TREE_DIRS = 20000


def _named(part: str, parent: tuple[str, ...], regular: bool) -> tuple[str, ...]:
    """The dotted names a module or package `part` in a folder named `parent` (empty: a
    folder no import names) can be imported as: under each of the folder's names, and on its
    own where the folder is no regular package (it, or a folder above, may be on sys.path)."""
    if not part.isidentifier():
        return ()
    return tuple(f"{p}.{part}" for p in parent) + (() if regular else (part,))


def _skipped(folder: str, name: str) -> bool:
    if name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
        return True
    return name in ("build", "dist") and not os.path.isfile(os.path.join(folder, "__init__.py"))


def _provided(root: str) -> dict[str, frozenset[str]]:
    """`own_modules` of the tree at real path `root`, each name with what the tree holds
    under it: "package" (a folder with __init__.py), "module" (a .py file), or both. Walked
    once for each folder (its inode and time: a new worktree at a used path walks again)."""
    try:
        st = os.stat(root)
    except OSError:
        return {}
    return _walk(root, (st.st_ino, st.st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _walk(root: str, stamp: tuple[int, int]) -> dict[str, frozenset[str]]:
    # stamp (the folder's inode and time) is the cache's key only: it is not read
    folders: dict[str, tuple[tuple[str, ...], bool]] = {root: ((), False)}
    found: dict[str, set[str]] = {}
    for n, (here, dirs, files) in enumerate(os.walk(root)):
        names, regular = folders.pop(here, ((), False))
        depth = 0 if here == root else here[len(root) :].count(os.sep)
        kept = []
        for sub in sorted(dirs) if n < TREE_DIRS and depth < TREE_DEPTH else ():
            path = os.path.join(here, sub)
            if not _skipped(path, sub):
                kept.append(sub)
                named = _named(sub, names, regular)
                package = bool(named) and os.path.isfile(os.path.join(path, "__init__.py"))
                folders[path] = (named, package)
        dirs[:] = kept
        for name in names if regular else ():  # the package itself: its __init__.py
            found.setdefault(name, set()).add("package")
        for f in files:
            stem, ext = os.path.splitext(f)
            if ext == ".py" and stem != "__init__" and stem not in NOT_OWN:
                for name in _named(stem, names, regular):
                    found.setdefault(name, set()).add("module")
    std = sys.stdlib_module_names
    return {n: frozenset(k) for n, k in found.items() if n.partition(".")[0] not in std}


def own_modules(tree: Path) -> list[str]:
    """The modules a build's tree provides, whatever its layout: each package (a folder
    with __init__.py) and .py module anywhere in it (flat, src/, lib/, python/, a
    monorepo's packages/x/src/x, a folder named _private, namespace packages), by every
    dotted name it can be imported as from some folder of the tree on sys.path (never
    from inside a regular package: `mylib.core`, not `core`), less the standard library's
    names and top-level scripts (NOT_OWN). A base process must import each of them it
    imports from the worktree, a head process none from it. The walk is bounded (TREE_DEPTH,
    TREE_DIRS) and skips hidden folders, virtualenvs and installed or generated files."""
    return sorted(_provided(os.path.realpath(tree)))


def _kind(file: str) -> str:
    """What a module's file makes it: "package" (its __init__, .py or compiled), "module"."""
    return "package" if os.path.basename(file).partition(".")[0] == "__init__" else "module"


def write_own(tree: Path, path: Path) -> str:
    """The tree's `own_modules`, written to `path` as a JSON list for a round's process (it
    reports where each of them it imported came from): the path, as its variable's value."""
    path.write_text(json.dumps(own_modules(tree)), encoding="utf-8")
    return str(path)


def origins(names: list[str]) -> dict[str, str | None]:
    """The file each of `names` was imported from in this process (None: no file, as a
    namespace package has none); names not imported are left out."""
    return {n: getattr(sys.modules[n], "__file__", None) for n in names if n in sys.modules}


def wrong_build(side: str, modules: Iterable[tuple[str, Any]], tree: Path) -> str | None:
    """Why a process of `side` measured the other build, in one line naming the file, or
    None, from the (module, file) pairs of the worktree's own modules it imported: the base
    imported one from anywhere but the worktree (an installed copy of the head, a path the
    bootstrap did not map) as the same kind the tree holds it as (a package as a package,
    a module as a module: a `tools/evaluate.py` script does not claim an installed
    `evaluate` package), the head one from the worktree."""
    t = os.path.realpath(tree)
    provided = _provided(t)
    for name, file in modules:
        if not isinstance(file, str):
            continue  # a namespace package: its modules are listed on their own
        inside = os.path.realpath(file).startswith(t + os.sep)
        if side == "base" and not inside and _kind(file) in provided.get(name, ()):
            return (f"the base process imported {name} from {file}, not from the baseline "
                    f"commit's worktree {tree}: an installed copy of the code under test "
                    "would measure the head twice (install it editable, or put its "
                    "directory on PYTHONPATH)")  # fmt: skip
        if side == "head" and inside:
            return f"the head process imported {name} from the base worktree ({file})"
    return None

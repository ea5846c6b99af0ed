"""Where a run's outputs may go: never onto one of its inputs, a baseline file, another
output of the same run, a Python file (a test module, a conftest: an option whose value was
forgotten takes the next argument, `--gpuperf-json tests/test_b.py`), a test file the run
collected, or a project's configuration file (pytest.ini, pyproject.toml, tox.ini, setup.cfg).
pytest checks at configure time (a usage error before any test runs; a collected test file
once collection ends, before any test runs), `gpuperf report` and `gpuperf ab` before they
read or measure anything (exit 2).

Paths are compared after `os.path.realpath` (relative paths, `..` and symbolic links
resolved) and, where both exist, by inode (a hard link is the same file). No pytest here.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Iterable
from pathlib import Path

from ..baseline.schema import SCHEMA as BASELINE_SCHEMA
from ..baseline.store import MAX_BYTES as SNIFF_BYTES  # a larger file is no usable baseline

# a baseline's schema field, found in a file too damaged to parse
SCHEMA_FIELD = re.compile(rb'"schema"\s*:\s*"' + re.escape(BASELINE_SCHEMA.encode()) + rb'"')
# files that configure a project: never an output, wherever they lie
CONFIG_NAMES = frozenset(
    ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "setup.py")
)
SOURCE_SUFFIXES = (".py", ".pyi", ".pyw")
Named = tuple[str, "str | os.PathLike[str] | None"]  # (what it is, for messages; its path)


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def _same(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    if _real(a) == _real(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def is_baseline_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a regular file holding a pytest-gpuperf baseline: a JSON object whose
    schema is pytest-gpuperf/baseline, or a damaged one (truncated, edited, too large) that
    still says `"schema": "pytest-gpuperf/baseline"` (the one to recover, not to overwrite).
    Anything unreadable is not one."""
    import json

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        with open(path, "rb") as fh:
            raw = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    if BASELINE_SCHEMA.encode() not in raw:  # most outputs: no need to parse them
        return False
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return SCHEMA_FIELD.search(raw) is not None
    return isinstance(data, dict) and data.get("schema") == BASELINE_SCHEMA


def _baseline_slot(path: str, directory: str, profiles: Collection[str]) -> str | None:
    """The profile whose baseline file `path` would be in `directory`
    (`<profile>.json`, or `<profile>@<card>.json` for an emulated card), else None."""
    if os.path.dirname(path) != directory or not path.endswith(".json"):
        return None
    stem = os.path.basename(path)[: -len(".json")]
    profile = stem.split("@", 1)[0]
    return profile if profile in profiles else None


def first_clash(
    outputs: Iterable[Named],
    inputs: Iterable[Named] = (),
    baseline_dirs: Iterable[tuple[str, str | os.PathLike[str], Collection[str]]] = (),
) -> str | None:
    """The first output that would land on something it must not, as one message naming
    both, or None. `outputs` and `inputs` are (what, path) pairs (a None path is skipped);
    `baseline_dirs` are (what, directory, profile names): a file there named after a
    profile is a baseline this run reads or saves, whether it exists yet or not. An
    existing file that holds a baseline is refused wherever it lies."""
    outs = [(what, os.fspath(p)) for what, p in outputs if p is not None and os.fspath(p)]
    ins = [(what, os.fspath(p)) for what, p in inputs if p is not None and os.fspath(p)]
    dirs = [(what, _real(d), set(names)) for what, d, names in baseline_dirs]
    for i, (what, path) in enumerate(outs):
        for other, other_path in outs[:i]:
            if _same(path, other_path):
                return (
                    f"{other} {other_path} and {what} {path} are the same file: give each "
                    "output its own path"
                )
        for src, src_path in ins:
            if _same(path, src_path):
                return (
                    f"{what} {path} is {src} {src_path}, which this run reads: write the "
                    "output elsewhere"
                )
        real = _real(path)
        for src, directory, names in dirs:
            profile = _baseline_slot(real, directory, names)
            if profile is not None:
                return (
                    f"{what} {path} is the baseline file of profile {profile!r} in {src} "
                    f"{directory}: write the output elsewhere"
                )
        if why := _source_file(path):
            return (
                f"{what} {path} is {why}: an output never overwrites a test module, a "
                "conftest or a configuration file (did the option lose its value?); write "
                "it elsewhere"
            )
        if is_baseline_file(path):
            return (
                f"{what} {path} is a pytest-gpuperf baseline file ({BASELINE_SCHEMA}): an "
                "output never overwrites a baseline; write it elsewhere"
            )
    return None


def _source_file(path: str) -> str | None:
    """What `path` is where it names a project's source or configuration file, else None."""
    name = os.path.basename(_real(path))
    given = os.path.basename(path)
    if CONFIG_NAMES.intersection((name, given)):
        return "a project configuration file"
    if name.endswith(SOURCE_SUFFIXES) or given.endswith(SOURCE_SUFFIXES):
        return "a conftest" if "conftest.py" in (name, given) else "a Python source file"
    return None


def onto_collected(
    outputs: Iterable[Named], files: Iterable[str | os.PathLike[str]]
) -> str | None:
    """The first output that is one of the test files the run collected (by path or inode:
    one pass over `files`, however many), as one message naming both, else None."""
    outs = [(what, os.fspath(p)) for what, p in outputs if p is not None and os.fspath(p)]
    if not outs:
        return None
    reals: dict[str, str] = {}
    inodes: dict[tuple[int, int], str] = {}
    for f in files:
        reals.setdefault(_real(f), os.fspath(f))
        try:
            st = os.stat(f)
        except OSError:
            continue
        inodes.setdefault((st.st_dev, st.st_ino), os.fspath(f))
    for what, path in outs:
        found = reals.get(_real(path))
        if found is None:
            try:
                st = os.stat(path)
                found = inodes.get((st.st_dev, st.st_ino))
            except OSError:
                pass
        if found is not None:
            return (
                f"{what} {path} is the collected test file {found}: an output never "
                "overwrites a test; write it elsewhere"
            )
    return None


def unwritable(what: str, path: str | os.PathLike[str], *, create_dirs: bool) -> str | None:
    """Why `path` cannot be written as an output (one line naming it), or None. With
    `create_dirs`, missing parent directories will be created; else they must exist."""
    p = Path(path)
    if p.is_dir():
        return f"{what} {path}: is a directory; give a file path"
    if p.exists():
        return None if os.access(p, os.W_OK) else f"{what} {path}: permission denied"
    parent = p.parent
    if not create_dirs and not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        return f"{what} {path}: its directory {parent} {why}"
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{what} {path}: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{what} {path}: permission denied in {parent}"
    return None

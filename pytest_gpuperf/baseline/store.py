"""Baseline files on disk: `baselines/<profile>.json`, one per GPU profile, meant to be
committed. Finding, reading and writing them: only regular files up to MAX_BYTES are read,
as strict UTF-8 JSON, then validated by `schema` (the format's one owner). Writing merges
into the file under a lock (several pytest-xdist workers may save at once), through a
temporary file and an atomic rename; a symbolic link is written through and the file keeps
its mode."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.figures import MAX_INT_DIGITS
from .schema import BaselineError, BaselineFile, file_error, merge, validate

# The capacity rule, one for writers and readers: no gpuperf tool writes a baseline or
# results file larger than this (a save, an accept or a merge that would is refused before
# anything is written, naming the size), and every reader accepts a file up to it. About
# 50,000 tests' baseline is 60-100 MiB and their results file 150-165 MiB; read back, a
# file of the limit takes under 2 GiB. A larger file is no file of ours (or an edited one),
# and is refused before it is parsed.
MAX_BYTES = 256 * 2**20


LOCK_TIMEOUT_S = 60


def baseline_path(directory: Path, profile: str) -> Path:
    return Path(directory) / f"{profile}.json"


def locate(
    directory: Path, profile: str, emulate: str | None, must_exist: bool
) -> tuple[Path, str, BaselineFile | None]:
    """(path, the name results are saved under, the loaded file or None) of a profile's
    baseline. Emulated results never mix with the card's own: they live in
    `<profile>@<card>.json`. Raises BaselineError for a file that is unreadable, truncated,
    of an unknown schema, of another profile, or missing where one `must_exist`."""
    name = f"{profile}@{emulate}" if emulate else profile
    path = baseline_path(directory, name)
    if Path(directory).exists() and not Path(directory).is_dir():  # not "no baseline yet"
        raise BaselineError(
            f"the baseline directory {directory} is a file, not a directory (see "
            "--gpuperf-baseline-dir)"
        )
    found = load(path)
    if found is None and must_exist:
        raise BaselineError(
            f"--gpuperf-baseline=compare, but there is no baseline file {path} for profile "
            f"{profile!r}; save one with --gpuperf-baseline=save"
        )
    if found is not None and found.profile != name:
        raise file_error(path, f"belongs to profile {found.profile!r}, not {name!r}")
    return path, name, found


class CapacityError(BaselineError):
    """A file that would be over MAX_BYTES: not written (the capacity rule)."""


class _Bad(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _Bad(f"holds {name}, not a number")


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Bad(f"holds a {len(text.lstrip('-'))}-digit integer: too large")
    return int(text)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Bad(f"holds the key {key!r} twice in one object")
        out[key] = value
    return out


# a JSON escape of a UTF-16 surrogate: "\ud800" alone is valid JSON and no text (nothing
# can print or write it); the text is strict UTF-8, so only an escape can bring one in
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(text: str) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys, no huge integers, bounded nesting,
    no unpaired surrogate (the one rule of the baseline loader and the results reader).
    Raises ValueError with a message fit to follow a file name."""
    data = _loads(text)
    if _SURROGATE_ESCAPE.search(text):  # rare: only then the whole check
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"holds an unpaired surrogate ({exc.reason})") from None
    return data


def _loads(text: str) -> Any:
    try:
        return json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            object_pairs_hook=_no_duplicates,
        )
    except _Bad as exc:
        raise ValueError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ValueError(  # exc.msg may end in "at" ("Unterminated string starting at")
            f"is not valid JSON (truncated or edited?): {exc.msg.removesuffix(' at')} at "
            f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise ValueError("is nested too deeply to be a baseline") from None
    except ValueError as exc:  # e.g. a float literal that overflows
        raise ValueError(f"is not valid JSON: {exc}") from None


def read_text(path: Path, what: str = "baseline file", limit: int | None = None) -> str | None:
    """The text of a regular file (None if there is none). Refuses FIFOs and devices before
    opening them (they would hang or never end), files over `limit` bytes (MAX_BYTES), and
    bytes that are not UTF-8; raises ValueError naming the file."""
    limit = MAX_BYTES if limit is None else limit
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot be read: {exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{what} {path}: is not a regular file")
    if st.st_size > limit:
        from ..core.units import format_size

        raise ValueError(
            f"{what} {path}: is {format_size(st.st_size)}, over the {format_size(limit)} limit"
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot be read: {exc}") from None
    if len(raw) > limit:
        raise ValueError(f"{what} {path}: is over the {limit:,} byte limit")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {path}: is not UTF-8 text ({exc.reason})") from None


def load(path: Path) -> BaselineFile | None:
    """The baseline at `path`, None if there is none. Raises BaselineError if unusable."""
    path = Path(path)
    try:
        text = read_text(path)
    except ValueError as exc:
        raise BaselineError(str(exc)) from None
    if text is None:
        return None
    if not text.strip():
        raise file_error(path, "is empty (truncated?)")
    try:
        data = parse_json(text)
    except ValueError as exc:
        raise file_error(path, str(exc)) from None
    return validate(path, data)


def lock_path(path: Path) -> Path:
    """The lock beside the file, hidden (`.h200.json.lock`); .gitignore: `baselines/.*.lock`."""
    return path.parent / f".{path.name}.lock"


def temp_prefix(path: Path) -> str:
    return f".{path.name}."


def _clean_stale_temps(path: Path) -> None:
    """Temporary files of earlier saves of this file that were killed before renaming.
    Called with the lock held: no live save of this file has one open."""
    for tmp in path.parent.glob(f"{temp_prefix(path)}*.tmp"):
        tmp.unlink(missing_ok=True)


def save(path: Path, profile: str, updates: dict[str, dict[str, Any]], now: str) -> BaselineFile:
    """Merge `updates` into the baseline at `path` under a file lock, atomically.

    A symbolic link is followed: its target is replaced, the link kept. The new file keeps
    the old one's permission bits (a new file gets 0644 less the umask)."""
    return rewrite(path, lambda current: merge(current, Path(path), profile, updates, now))


def rewrite(
    path: Path, change: Callable[[BaselineFile | None], BaselineFile]
) -> BaselineFile:
    """Replace the baseline at `path` with `change(the file as it is now, or None)`, read and
    written under the file's lock, through a temporary file and an atomic rename: the one
    way every writer (a run's save, `gpuperf baseline accept` and `merge`) changes a file.
    `change` raises BaselineError to leave the file as it was; a corrupt file is never
    overwritten (loading it raises)."""
    from filelock import FileLock

    given = Path(path)
    path = Path(os.path.realpath(path))
    if given.is_symlink() and not path.parent.is_dir():
        raise file_error(
            given,
            f"is a symbolic link to {path}, whose directory does not exist; not creating "
            "directories elsewhere on disk (fix or remove the link)",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path(path)), timeout=LOCK_TIMEOUT_S):
        _clean_stale_temps(path)
        merged = change(load(path))  # load raises on a corrupt file: it is never overwritten
        write_unlocked(path, merged)
    return merged


def write_unlocked(path: Path, content: BaselineFile) -> None:
    """Write `content` to `path` atomically, checked by the loader's rules first, without
    the lock: for a file no other writer can know (git's temporary files of a merge,
    which a merge driver writes; `rewrite` holds the lock for every other write)."""
    text = json.dumps(content.to_json(), indent=2, allow_nan=False) + "\n"
    if (why := over_capacity(text)) is not None:
        raise CapacityError(f"baseline file {path}: not written: {why}")
    validate(path, json.loads(text))  # what we write, we can read
    _write_atomic(path, text)


def over_capacity(text: str) -> str | None:
    """Why `text` must not be written, where it would make a file over MAX_BYTES that no
    reader would read: the writers' half of the capacity rule (the baseline's and the
    results file's), said after "not written: ". None where it fits."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_BYTES:
        return None
    from ..core.units import format_size

    return (
        f"it would be {format_size(size)}, over the {format_size(MAX_BYTES)} every gpuperf "
        "reader accepts (split the suite over several baseline directories or results "
        "files: a run per test folder)"
    )


def _write_atomic(path: Path, text: str) -> None:
    """`text` into `path` through a fsynced temporary file renamed over it, keeping the
    file's permission bits (a new file gets 0644 less the umask)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o644 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""The changes found in each series, cached beside the runs (DIR/.gpuperf-changes.cache), so
that a new run re-examines only the series it changed (issue 61: detection is incremental).

A series' entry is used where the series is exactly as it was: a digest of its points (run
indexes, values, verdicts), the points left out, its class, tolerance and direction. Its
changes name runs by index, so the whole cache is used only where the history's runs it
knew are still its first runs, unchanged (a new run appended keeps them; an older run
imported, or a run file changed, re-examines everything), and only by the code that wrote
it (a digest of the modules the detection reads). A run that measures every figure changes
every series: all are re-examined, as they must be (a new point can move any split).
Derived data, as cache.py's: one that cannot be read is ignored, one that cannot be written
is said nowhere; written whole through a rename. Not JSON-named: the reader takes
DIR/*.json as runs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .changes import Change, Found, find_changes
from .store import History, Series

DETECT_CACHE = ".gpuperf-changes.cache"
DETECT_VERSION = 1
# the modules whose code decides a series' changes: a cache written by other code is not used
SOURCES = ("history/changes.py", "core/figures.py", "core/settings.py", "judging/noise.py",
           "judging/verdict.py")  # fmt: skip


def code_digest() -> str:
    package = Path(__file__).resolve().parent.parent
    h = hashlib.blake2b(str(DETECT_VERSION).encode(), digest_size=16)
    for name in SOURCES:
        h.update((package / name).read_bytes())
    return h.hexdigest()


def runs_digest(hist: History, count: int) -> str:
    """A digest of the history's first `count` runs (names, dates, code, cards)."""
    h = hashlib.blake2b(digest_size=16)
    for r in hist.runs[:count]:
        h.update(json.dumps([r.name, r.date, r.commit, r.dirty, r.profile, r.card],
                            sort_keys=True).encode())  # fmt: skip
    return h.hexdigest()


def series_digest(s: Series) -> str:
    """A digest of everything of a series the detection reads."""
    h = hashlib.blake2b(digest_size=16)
    for col in (s.runs, s.median, s.status):
        h.update(col.tobytes())
    h.update(json.dumps([sorted(s.left.items()), s.noise_class, s.tolerance, s.higher,
                         s.figure]).encode())  # fmt: skip
    return h.hexdigest()


def _name(key: tuple[str, str, str]) -> str:
    return "\x1f".join(key)


class DetectMemo:
    """changes.Memo over a cache file's entries: counts the series it knew (hits) and
    those examined again (misses)."""

    def __init__(self, entries: dict[str, Any]) -> None:
        self.old: dict[str, Any] = entries
        self.new: dict[str, Any] = {}
        self.hits = self.misses = 0
        self.pending = ""  # the digest of the series get() missed, for put()

    def get(self, key: tuple[str, str, str],
            s: Series) -> tuple[list[Change], tuple[int, int, int]] | None:  # fmt: skip
        entry = self.old.get(_name(key))
        digest = series_digest(s)
        if not isinstance(entry, list) or len(entry) != 3 or entry[0] != digest:
            self.misses += 1
            self.pending = digest
            return None
        try:
            found = [Change(**c) for c in entry[1]]
            judged = (int(entry[2][0]), int(entry[2][1]), int(entry[2][2]))
        except (TypeError, ValueError, IndexError):
            self.misses += 1
            self.pending = digest
            return None
        self.hits += 1
        self.new[_name(key)] = entry
        return found, judged

    def put(self, key: tuple[str, str, str], s: Series, found: list[Change],
            judged: tuple[int, int, int]) -> None:  # fmt: skip
        self.new[_name(key)] = [self.pending, [asdict(c) for c in found], list(judged)]


def find_changes_cached(directory: Path, hist: History) -> tuple[Found, DetectMemo]:
    """find_changes(hist), each series the cache knows as it is taken from it; the cache
    then written anew (the series of this history only)."""
    memo = DetectMemo(_load(directory / DETECT_CACHE, hist))
    found = find_changes(hist, memo)
    if memo.misses or len(memo.new) != len(memo.old):
        with contextlib.suppress(OSError, ValueError):
            _save(directory, hist, memo.new)
    return found, memo


def _load(path: Path, hist: History) -> dict[str, Any]:
    """The cache's series entries; none where it is missing, unreadable, of other code, or
    knew runs this history does not hold first."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        count = meta["runs"]
        if (meta["code"] != code_digest() or not isinstance(count, int)
                or count > len(hist.runs) or meta["digest"] != runs_digest(hist, count)):
            return {}  # fmt: skip
        series = meta["series"]
        return series if isinstance(series, dict) else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _save(directory: Path, hist: History, entries: dict[str, Any]) -> None:
    meta = {"code": code_digest(), "runs": len(hist.runs),
            "digest": runs_digest(hist, len(hist.runs)), "series": entries}  # fmt: skip
    fd, tmp = tempfile.mkstemp(prefix=".tmp-changes-", suffix=".cache", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, separators=(",", ":"))
        os.replace(tmp, directory / DETECT_CACHE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)

"""A columnar cache of a history directory (DIR/.gpuperf-cache.npz), so that reading a
history costs the runs recorded since the last read, not every run again.

The cache holds what store.read_history builds (the runs, each series' columns) and, per
run file, its size and modification time. It is used only where every file it read is
still there unchanged; a file removed or changed (a compaction, a checkout) reads the whole
directory again. Files not in it are read and added. It is derived data: one that cannot be
read is ignored, and one that cannot be written is said nowhere (the next read is slower).
Written whole through a rename (never half a cache), with numpy, pickling nothing."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from array import array
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .store import History, Run, Series, order, read_files, run_files

CACHE = ".gpuperf-cache.npz"
CACHE_VERSION = 2  # 2: each series' restarts
COLUMNS = (("runs", "i"), ("median", "d"), ("ci_low", "d"), ("ci_high", "d"), ("status", "b"))


def read_cached(directory: Path) -> History:
    """The history of `directory`, as store.read_history reads it, through the cache."""
    paths = run_files(directory)
    stamps = {p.name: _stamp(p) for p in paths}
    hist, known = _load(directory / CACHE, stamps)
    new = [p for p in paths if p.name not in known]
    read_files(hist, new)
    order(hist)
    if new:
        with contextlib.suppress(OSError, ValueError):
            _save(directory, hist, stamps)  # every file was read (a bad one raised)
    return hist


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _load(path: Path, stamps: dict[str, list[int]]) -> tuple[History, set[str]]:
    """The cached history and the files it read; an empty one where the cache is missing,
    unreadable, of another version, or read a file that is gone or changed."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["index"]).decode("utf-8"))
            files = meta["files"] if meta.get("version") == CACHE_VERSION else None
            if files is None or any(stamps.get(n) != stamp for n, stamp in files.items()):
                return History(), set()
            return _history(meta, {name: z[name] for name, _ in COLUMNS}), set(files)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return History(), set()


def _history(meta: dict[str, Any], cols: dict[str, Any]) -> History:
    hist = History(runs=[Run(**r) for r in meta["runs"]], duplicates=meta["duplicates"],
                   seen=set(meta["seen"]))  # fmt: skip
    for m in meta["series"]:
        profile, test, figure = m["key"]
        s = Series(profile, test, figure, metric=m["metric"], unit=m["unit"],
                   higher=m["higher"], noise_class=m["noise_class"], tolerance=m["tolerance"],
                   left={int(k): v for k, v in m["left"].items()},
                   restarts={int(k): v for k, v in m["restarts"].items()})  # fmt: skip
        a, b = m["at"], m["at"] + m["n"]
        for name, code in COLUMNS:
            setattr(s, name, array(code, cols[name][a:b].tobytes()))
        hist.series[(s.profile, s.test, s.figure)] = s
    return hist


def _save(directory: Path, hist: History, files: dict[str, list[int]]) -> None:
    import numpy as np

    series, at = [], 0
    for s in hist.series.values():
        series.append({"key": [s.profile, s.test, s.figure], "metric": s.metric,
                       "unit": s.unit, "higher": s.higher, "noise_class": s.noise_class,
                       "tolerance": s.tolerance, "left": s.left, "restarts": s.restarts,
                       "at": at,
                       "n": len(s.runs)})  # fmt: skip
        at += len(s.runs)
    meta = {"version": CACHE_VERSION, "files": files, "runs": [asdict(r) for r in hist.runs],
            "duplicates": hist.duplicates, "seen": sorted(hist.seen), "series": series}  # fmt: skip
    cols: dict[str, Any] = {"index": np.frombuffer(json.dumps(meta).encode("utf-8"), np.uint8)}
    for name, code in COLUMNS:
        parts = [
            np.frombuffer(getattr(s, name), dtype=np.dtype(code)) for s in hist.series.values()
        ]
        cols[name] = np.concatenate(parts) if parts else np.zeros(0, np.dtype(code))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-cache-", suffix=".npz", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **cols)
        os.replace(tmp, directory / CACHE)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)

"""Baseline files: `baselines/<profile>.json`, one per GPU profile, meant to be committed.

Schema (version 1), documented in docs/baselines.md:

    {
      "schema": "pytest-gpuperf/baseline",
      "version": 1,
      "profile": "h200",
      "updated": "2026-11-30T02:00:00+00:00",
      "entries": {
        "<test node id>[::<metric>]": {
          "environment": {"gpu": ..., "driver": ..., "cuda": ..., "torch": ..., ...},
          "date": ..., "commit": ...,
          "flags": {"launch_bound": false, "throttled": true, "emulated": null},
          "metrics": {
            "throughput": {"unit": "tokens/s", "direction": "higher",
                           "median": ..., "ci_low": ..., "ci_high": ..., "n": ...,
                           "history": [{"median": ..., "date": ..., "commit": ...}, ...]},
            "peak_reserved": {"unit": "bytes", "direction": "lower", ...}
          }
        }
      }
    }

Reading validates everything and raises BaselineError naming the file and the problem.
Writing merges into the file under a lock (several pytest-xdist workers may save at once),
through a temporary file and an atomic rename; entries not saved in this run are kept.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "pytest-gpuperf/baseline"
VERSION = 1
HISTORY = 10  # session medians kept per metric


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file and the problem."""


@dataclass
class BaselineFile:
    path: Path
    profile: str
    entries: dict[str, dict[str, Any]]
    updated: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "profile": self.profile,
            "updated": self.updated,
            "entries": dict(sorted(self.entries.items())),
        }


def baseline_path(directory: Path, profile: str) -> Path:
    return Path(directory) / f"{profile}.json"


def _fail(path: Path, what: str) -> BaselineError:
    return BaselineError(f"baseline file {path}: {what}")


def _check_number(path: Path, where: str, value: Any, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, f"{where} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise _fail(path, f"{where} is {value!r}, not a finite number")
    if value < 0 or (positive and value == 0):
        raise _fail(path, f"{where} is {value!r}: must be {'positive' if positive else '>= 0'}")


def validate(path: Path, data: Any) -> BaselineFile:
    if not isinstance(data, dict):
        raise _fail(path, f"expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise _fail(path, f"not a pytest-gpuperf baseline (schema {data.get('schema')!r})")
    if data.get("version") != VERSION:
        raise _fail(
            path,
            f"schema version {data.get('version')!r} is not supported (this pytest-gpuperf "
            f"reads version {VERSION}); upgrade pytest-gpuperf or re-save the baseline",
        )
    profile = data.get("profile")
    if not isinstance(profile, str) or not profile:
        raise _fail(path, "missing 'profile'")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise _fail(path, "'entries' must be an object")
    for key, entry in entries.items():
        where = f"entry {key!r}"
        if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
            raise _fail(path, f"{where} has no 'metrics' object")
        for mname, m in entry["metrics"].items():
            mw = f"{where} metric {mname!r}"
            if not isinstance(m, dict):
                raise _fail(path, f"{mw} must be an object")
            if m.get("direction") not in ("higher", "lower"):
                raise _fail(path, f"{mw}: direction must be 'higher' or 'lower'")
            if not isinstance(m.get("unit"), str):
                raise _fail(path, f"{mw}: missing unit")
            for field in ("median", "ci_low", "ci_high"):
                if field in m:
                    _check_number(path, f"{mw} {field}", m[field])
            hist = m.get("history")
            if not isinstance(hist, list) or not hist:
                raise _fail(path, f"{mw}: 'history' must be a non-empty list of sessions")
            for i, h in enumerate(hist):
                if not isinstance(h, dict) or "median" not in h:
                    raise _fail(path, f"{mw} history[{i}] has no median")
                _check_number(path, f"{mw} history[{i}] median", h["median"])
    return BaselineFile(path, profile, entries, data.get("updated"))


def load(path: Path) -> BaselineFile | None:
    """The baseline at `path`, None if there is none. Raises BaselineError if unusable."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"cannot be read: {exc}") from None
    if not text.strip():
        raise _fail(path, "is empty (truncated?)")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except _Constant as exc:
        raise _fail(path, f"holds {exc.args[0]}, not a number") from None
    except json.JSONDecodeError as exc:
        raise _fail(
            path, f"is not valid JSON (truncated or edited?): {exc.msg} at line {exc.lineno}"
        ) from None
    return validate(path, data)


class _Constant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _Constant(name)


def merge(
    existing: BaselineFile | None,
    path: Path,
    profile: str,
    updates: dict[str, dict[str, Any]],
    now: str,
) -> BaselineFile:
    """New file content: `existing` with `updates` merged in. For each metric of an updated
    entry the new session's median is appended to that metric's history (last HISTORY
    kept); entries and metrics not updated are kept as they were."""
    base = existing or BaselineFile(path, profile, {})
    if existing is not None and existing.profile != profile:
        raise _fail(path, f"belongs to profile {existing.profile!r}, not {profile!r}")
    entries = {k: json.loads(json.dumps(v)) for k, v in base.entries.items()}
    for key, new in updates.items():
        old = entries.get(key, {})
        old_metrics = old.get("metrics", {})
        merged_metrics = dict(old_metrics)
        for mname, m in new["metrics"].items():
            prev = old_metrics.get(mname, {})
            same_kind = prev.get("unit") == m["unit"] and prev.get("direction") == m["direction"]
            history = list(prev.get("history", [])) if same_kind else []
            history.append(
                {"median": m["median"], "date": new.get("date"), "commit": new.get("commit")}
            )
            merged_metrics[mname] = {**m, "history": history[-HISTORY:]}
        entries[key] = {
            **old,
            **{k: v for k, v in new.items() if k != "metrics"},
            "metrics": merged_metrics,
        }
    return BaselineFile(path, profile, entries, now)


def save(path: Path, profile: str, updates: dict[str, dict[str, Any]], now: str) -> BaselineFile:
    """Merge `updates` into the baseline at `path` under a file lock, atomically."""
    from filelock import FileLock

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=60):
        current = load(path)  # raises on a corrupt file: it is never overwritten
        merged = merge(current, path, profile, updates, now)
        text = json.dumps(merged.to_json(), indent=2, allow_nan=False) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return merged

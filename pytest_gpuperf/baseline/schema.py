"""The baseline file's format: the one module to change when the format changes. What a
result puts into an entry (`entries_to_save`, from figures.metrics_of), what a file must hold
(`validate`), and how saved entries merge into a file (`merge`). Reading and writing the
file (size limits, strict JSON, the lock, the atomic rename) is `store`'s job.

Schema (version 2), documented in docs/baselines.md:

    {
      "schema": "pytest-gpuperf/baseline",
      "version": 2,
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
                           "noise_class": "model", "gate": true,
                           "history": [{"median": ..., "date": ..., "commit": ...,
                                        "session": ..., "gpu_uuid": ..., "host": ...}, ...]},
            "peak_reserved": {"unit": "bytes", "direction": "lower", ...}
          }
        }
      }
    }

Validating checks everything and raises BaselineError naming the file and the problem.
Merging keeps entries not saved in this run, and keys this version does not know (a team's
"comment").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.figures import (  # the checker of one figure, shared with gpu_benchmark
    KERNELS,
    PER_CLOCK,
    THROUGHPUT,
    metric_problem,
    metrics_of,
    number_problem,
    result_classes,
    session_problem,
    text_or_none,
)
from ..core.results import latency_name
from .history import HISTORY  # session medians kept per metric (and judged)

if TYPE_CHECKING:
    from ..core.results import Result

SCHEMA = "pytest-gpuperf/baseline"


VERSION = 2
# Version 1 saved the process's peak memory as `peak_reserved` (it depended on which tests
# ran before); version 2 saves the step's own. A version-1 file is read by moving that
# figure aside as `process_peak_reserved`, informational, with its history intact.
MIGRATED_PEAK = "process_peak_reserved"


KNOWN_TOP = ("schema", "version", "profile", "updated", "entries")


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file and the problem."""


@dataclass
class BaselineFile:
    path: Path
    profile: str
    entries: dict[str, dict[str, Any]]
    updated: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # top-level keys kept as they were
    read_version: int = VERSION  # the version the file was read as (1 is migrated to 2)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "profile": self.profile,
            "updated": self.updated,
            **self.extra,
            "entries": dict(sorted(self.entries.items())),
        }


def file_error(path: Path | str, what: str) -> BaselineError:
    return BaselineError(f"baseline file {path}: {what}")


def _each_entrys_metrics(
    data: dict[str, Any], change: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> dict[str, Any]:
    """`data` with each entry's metrics (a dict) replaced by `change(metrics)` where that is
    not None; the rest as it is. A migration's walk over the file."""
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return data
    out: dict[str, Any] = {}
    for key, entry in entries.items():
        metrics = entry.get("metrics") if isinstance(entry, dict) else None
        new = change(metrics) if isinstance(metrics, dict) else None
        out[key] = entry if new is None else {**entry, "metrics": new}
    return {**data, "entries": out}


def migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 file as version 2: each entry's `peak_reserved` (the process's peak,
    which depended on what ran before) becomes `process_peak_reserved`, informational
    (gate false), so the step's own peak starts a history of its own. Nothing is dropped."""

    def moved(metrics: dict[str, Any]) -> dict[str, Any] | None:
        if "peak_reserved" not in metrics or MIGRATED_PEAK in metrics:
            return None
        out = dict(metrics)
        old = out.pop("peak_reserved")
        out[MIGRATED_PEAK] = {**old, "gate": False} if isinstance(old, dict) else old
        return out

    return {**_each_entrys_metrics(data, moved), "version": VERSION}


OLD_LATENCY_NAMES = (THROUGHPUT, PER_CLOCK, KERNELS)  # a latency's figures before 2026-12-02


def migrate_latency(data: dict[str, Any]) -> dict[str, Any]:
    """A latency saved before 2026-12-02 (its figure under `throughput` with direction
    lower, its twins under `throughput_per_clock` and `throughput_kernels`) as named now:
    `latency`, `latency_per_clock`, `latency_kernels`, each with its history whole. Where
    an entry holds both names of one figure (an older version saved beside a newer one),
    their sessions are merged when unit and direction agree, else the old name is kept as
    it is. Nothing is dropped; the file on disk changes only when a save rewrites it."""

    def renamed(metrics: dict[str, Any]) -> dict[str, Any] | None:
        old = metrics.get(THROUGHPUT)
        is_latency = isinstance(old, dict) and old.get("direction") == "lower"
        return _latency_metrics(metrics) if is_latency else None

    return _each_entrys_metrics(data, renamed)


def _latency_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """One entry's metrics with a latency's old names renamed (migrate_latency)."""
    out: dict[str, Any] = {}
    for name, m in metrics.items():
        if name not in OLD_LATENCY_NAMES:
            out.setdefault(name, m)  # a new name may already hold the old one's merge
            continue
        new = latency_name(name)
        have = metrics.get(new)
        if have is None:
            out[new] = m
        elif _same_kind(have, m):
            out[new] = _merged_sessions(have, m)
        else:  # another unit under the new name: both kept, the old one as it was
            out[name] = m
    return out


def _same_kind(a: Any, b: Any) -> bool:
    return (
        isinstance(a, dict)
        and isinstance(b, dict)
        and isinstance(a.get("history"), list)
        and isinstance(b.get("history"), list)
        and (a.get("unit"), a.get("direction")) == (b.get("unit"), b.get("direction"))
    )


def _merged_sessions(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One figure saved under two names: the sessions of both in date order (one saved
    under both names counted once), the summary of the one saved last."""

    def last(m: dict[str, Any]) -> str:
        return max((str(h.get("date") or "") for h in m["history"] if isinstance(h, dict)),
                   default="")  # fmt: skip

    items: list[Any] = []
    for h in [*a["history"], *b["history"]]:
        if h not in items:
            items.append(h)
    items.sort(key=lambda h: str(h.get("date") or "") if isinstance(h, dict) else "")
    newest = a if last(a) >= last(b) else b
    return {**newest, "history": items}


def validate(path: Path, data: Any) -> BaselineFile:
    if not isinstance(data, dict):
        raise file_error(path, f"expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise file_error(path, f"not a pytest-gpuperf baseline (schema {data.get('schema')!r})")
    read_version = data.get("version")
    if type(data.get("version")) is int and data.get("version") == 1:
        data = migrate_v1(data)
    if type(data.get("version")) is not int or data.get("version") != VERSION:  # not 1.0, true
        raise file_error(
            path,
            f"schema version {data.get('version')!r} is not supported (this pytest-gpuperf "
            f"reads version {VERSION}); upgrade pytest-gpuperf or re-save the baseline",
        )
    data = migrate_latency(data)
    profile = data.get("profile")
    if not isinstance(profile, str) or not profile:
        raise file_error(path, "missing 'profile'")
    if not text_or_none(data.get("updated")):
        raise file_error(path, f"'updated' must be a date string, got {data.get('updated')!r}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise file_error(path, "'entries' must be an object")
    for key, entry in entries.items():
        where = f"entry {key!r}"
        if not key.strip():
            raise file_error(path, "an entry's key is empty: it must name a test")
        if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
            raise file_error(path, f"{where} has no 'metrics' object")
        env = entry.get("environment", {})
        if not isinstance(env, dict):
            raise file_error(path, f"{where}: 'environment' must be an object, got {env!r}")
        for name, value in env.items():
            if not (text_or_none(value) or isinstance(value, int | float)) or isinstance(
                value, bool
            ):
                raise file_error(path, f"{where}: environment {name!r} must be a string or number")
        for name in ("date", "commit"):
            if not text_or_none(entry.get(name)):
                raise file_error(path, f"{where}: {name!r} must be a string or null")
        flags = entry.get("flags", {})  # launch_bound, throttled: booleans; emulated: a name
        if not isinstance(flags, dict) or not all(
            v is None or isinstance(v, bool | str) for v in flags.values()
        ):
            raise file_error(
                path,
                f"{where}: 'flags' must be an object of true, false, null or names, got {flags!r}",
            )
        if "duration_s" in entry:
            why = number_problem(entry["duration_s"])
            if why:
                raise file_error(path, f"{where}: duration_s {why}")
        for mname, m in entry["metrics"].items():
            mw = f"{where} metric {mname!r}"
            why = metric_problem(m)
            if why:
                raise file_error(path, f"{mw}: {why}")
            hist = m.get("history")
            if not isinstance(hist, list) or not hist:
                raise file_error(path, f"{mw}: 'history' must be a non-empty list of sessions")
            for i, h in enumerate(hist):
                if not isinstance(h, dict) or "median" not in h:
                    raise file_error(path, f"{mw} history[{i}] has no median")
                why = number_problem(h["median"])
                if why:
                    raise file_error(path, f"{mw} history[{i}] median {why}")
                if not (text_or_none(h.get("date")) and text_or_none(h.get("commit"))):
                    raise file_error(path, f"{mw} history[{i}]: date and commit must be strings")
                why = session_problem(h) or restart_problem(h)
                if why:
                    raise file_error(path, f"{mw} history[{i}]: {why}")
    extra = {k: v for k, v in data.items() if k not in KNOWN_TOP}
    read = VERSION if read_version == VERSION else 1
    return BaselineFile(path, profile, entries, data.get("updated"), extra, read)


RESTART_TEXTS = ("date", "reason")  # required, non-empty
RESTART_OPTIONAL = ("commit", "who")  # a string or null


def restart_problem(item: dict[str, Any]) -> str | None:
    """What is wrong with a history item's `restart` record (`gpuperf baseline accept`:
    the metric's history is judged from this item on), or None. It must be an object with
    a non-empty `date` and `reason`, `commit` and `who` strings or null, `forced` a list of
    the refusals it overrode; other keys are kept."""
    if "restart" not in item:
        return None
    rec = item["restart"]
    if not isinstance(rec, dict):
        return f"'restart' must be an object (date, reason, commit, who), got {rec!r}"
    for name in RESTART_TEXTS:
        if not isinstance(rec.get(name), str) or not rec[name].strip():
            return f"restart {name!r} must be a non-empty string, got {rec.get(name)!r}"
    for name in RESTART_OPTIONAL:
        if not text_or_none(rec.get(name)):
            return f"restart {name!r} must be a string or null, got {rec.get(name)!r}"
    forced = rec.get("forced", [])
    if not isinstance(forced, list) or not all(isinstance(f, str) for f in forced):
        return f"restart 'forced' must be a list of strings, got {forced!r}"
    return None


DEVICE_KEYS = ("gpu", "mig_profile", "emulated")


def device_conflict(old_env: dict[str, Any], new_env: dict[str, Any]) -> str | None:
    """How the device of a saved entry differs from a new result's, or None. Results of one
    device never enter another device's history."""
    for key in DEVICE_KEYS:
        if old_env.get(key) != new_env.get(key):
            return f"{key} {old_env.get(key)!r} in the file, {new_env.get(key)!r} now"
    return None


SESSION_IDS = ("session", "gpu_uuid", "host")


def session_item(new: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
    """The history item a new entry's metric `m` (from entries_to_save) adds: its median,
    the entry's date and commit, why the session is suspect, its SM clock, its interval
    (the report draws it), which run, GPU and host it was (the noise model's sessions)."""
    session = {"median": m["median"], "date": new.get("date"), "commit": new.get("commit")}
    for extra in ("flags", "clock_mhz", "ci_low", "ci_high", *SESSION_IDS):
        if m.get(extra) is not None and m.get(extra) != []:
            session[extra] = m[extra]
    return session


def metric_summary(m: dict[str, Any]) -> dict[str, Any]:
    """A new metric as its file entry keeps it, less its history: the session's ids go
    into the history item only."""
    return {k: v for k, v in m.items() if k not in SESSION_IDS}


def merge(
    existing: BaselineFile | None,
    path: Path,
    profile: str,
    updates: dict[str, dict[str, Any]],
    now: str,
) -> BaselineFile:
    """New file content: `existing` with `updates` merged in. For each metric of an updated
    entry the new session's median is appended to that metric's history (last HISTORY
    kept); entries, metrics and keys not updated are kept as they were. Raises
    BaselineError, changing nothing, when an update was measured on another device than
    the entry it would extend, or does not pass the loader's own checks."""
    base = existing or BaselineFile(path, profile, {})
    if existing is not None and existing.profile != profile:
        raise file_error(path, f"belongs to profile {existing.profile!r}, not {profile!r}")
    entries = {k: json.loads(json.dumps(v)) for k, v in base.entries.items()}
    for key, new in updates.items():
        old = entries.get(key, {})
        if old:
            clash = device_conflict(old.get("environment") or {}, new.get("environment") or {})
            if clash:
                raise file_error(
                    path,
                    f"entry {key!r} was measured on another device ({clash}); not saving "
                    "results of one device into another's history (remove the entry or "
                    "use another --gpuperf-baseline-dir)",
                )
        old_metrics = old.get("metrics", {})
        merged_metrics = dict(old_metrics)
        for mname, m in new["metrics"].items():
            prev = old_metrics.get(mname, {})
            same_kind = prev.get("unit") == m["unit"] and prev.get("direction") == m["direction"]
            history = list(prev.get("history", [])) if same_kind else []
            history.append(session_item(new, m))
            merged_metrics[mname] = {**metric_summary(m), "history": history[-HISTORY:]}
        entries[key] = {
            **old,
            **{k: v for k, v in new.items() if k != "metrics"},
            "metrics": merged_metrics,
        }
    merged = BaselineFile(path, profile, entries, now, dict(base.extra))
    validate(path, json.loads(json.dumps(merged.to_json())))  # what we write, we can read
    return merged


# ----------------------------------------------------------- what a result saves


def entries_to_save(
    results: list[Result],
    env: dict[str, Any],
    *,
    date: str,
    commit: str | None,
    session: str | None = None,
    host: str | None = None,
    durations: dict[str, float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Baseline entries for this run's results that have figures (one environment: a run
    has one device and one emulation). Each metric carries the run's session id, its GPU's
    UUID and the host, which the merge moves into the metric's history item."""
    from .history import env_for

    classes = result_classes(results)
    updates: dict[str, dict[str, Any]] = {}
    for r in results:
        metrics = metrics_of(r, classes.get(r.key))
        if not metrics:
            continue
        ids = {"session": session, "gpu_uuid": r.gpu_uuid, "host": host}
        for m in metrics.values():
            m.update({k: v for k, v in ids.items() if v})
        flags = {"launch_bound": r.launch_bound, "throttled": r.throttled, "emulated": r.emulated}
        updates[r.key] = {
            "environment": env_for(env, r.gpus_used),
            "date": date,
            "commit": commit,
            "flags": flags,
            "metrics": metrics,
        }
        if durations and r.nodeid in durations:  # the whole test's, for --gpuperf-plan
            updates[r.key]["duration_s"] = round(durations[r.nodeid], 3)
    return updates


def expected_durations(entries: dict[str, dict[str, Any]], nodeids: list[str]) -> dict[str, float]:
    """Seconds each test took when its baseline entries were saved (tests without one are
    left out)."""
    out: dict[str, float] = {}
    for key, e in entries.items():
        d = e.get("duration_s")
        if isinstance(d, int | float) and not isinstance(d, bool):
            out[key] = float(d)
    found = {}
    for n in nodeids:
        times = [d for k, d in out.items() if k == n or k.startswith(n + "::")]
        if times:
            found[n] = max(times)
    return found

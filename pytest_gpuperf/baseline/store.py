"""Baseline files: `baselines/<profile>.json`, one per GPU profile, meant to be committed.
The one owner of the file's format: what a result puts into an entry (`metrics_of`,
`entries_to_save`), reading and validating, merging and writing under a lock.

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
                           "noise_class": "model", "gate": true,
                           "history": [{"median": ..., "date": ..., "commit": ...,
                                        "session": ..., "gpu_uuid": ..., "host": ...}, ...]},
            "peak_reserved": {"unit": "bytes", "direction": "lower", ...}
          }
        }
      }
    }

Reading validates everything and raises BaselineError naming the file and the problem;
only regular files up to MAX_BYTES are read. Writing merges into the file under a lock
(several pytest-xdist workers may save at once), through a temporary file and an atomic
rename; entries not saved in this run, and keys this version does not know (a team's
"comment"), are kept; a symbolic link is written through and the file keeps its mode.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..results import Result

SCHEMA = "pytest-gpuperf/baseline"
VERSION = 1
HISTORY = 10  # session medians kept per metric
MAX_BYTES = 32 * 2**20  # a baseline of the whole shipped suite is about 100 KB
MAX_INT_DIGITS = 20  # no count or value in a baseline needs more
LOCK_TIMEOUT_S = 60
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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "profile": self.profile,
            "updated": self.updated,
            **self.extra,
            "entries": dict(sorted(self.entries.items())),
        }


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
    found = load(path)
    if found is None and must_exist:
        raise BaselineError(
            f"--gpuperf-baseline=compare, but there is no baseline file {path} for profile "
            f"{profile!r}; save one with --gpuperf-baseline=save"
        )
    if found is not None and found.profile != name:
        raise _fail(path, f"belongs to profile {found.profile!r}, not {name!r}")
    return path, name, found


def _fail(path: Path | str, what: str) -> BaselineError:
    return BaselineError(f"baseline file {path}: {what}")


def metric_problem(m: Any) -> str | None:
    """What is wrong with one metric's summary (unit, direction, median, interval, n), or
    None. The loader and `gpu_benchmark` (at record time) apply these same rules, so a
    figure that was accepted when measured is never refused when read back."""
    if not isinstance(m, dict):
        return f"must be an object, got {type(m).__name__}"
    if m.get("direction") not in ("higher", "lower"):
        return f"direction must be 'higher' or 'lower', got {m.get('direction')!r}"
    unit = m.get("unit")
    if not isinstance(unit, str) or not unit.strip():
        return f"unit must be a non-empty string, got {unit!r}"
    for name in ("median", "ci_low", "ci_high"):
        if name in m:
            why = number_problem(m[name])
            if why:
                return f"{name} {why}"
    if all(k in m for k in ("median", "ci_low", "ci_high")) and not (
        m["ci_low"] <= m["median"] <= m["ci_high"]
    ):
        return (
            f"interval [{m['ci_low']!r}, {m['ci_high']!r}] does not contain the median "
            f"{m['median']!r}"
        )
    why = session_problem(m)
    if why:
        return why
    from .noise import CLASSES

    if "noise_class" in m and m["noise_class"] not in CLASSES:
        return f"noise_class must be one of {', '.join(CLASSES)}, got {m['noise_class']!r}"
    if "gate" in m and not isinstance(m["gate"], bool):
        return f"gate must be true or false, got {m['gate']!r}"
    if not _text_or_none(m.get("derived_from")):
        return f"derived_from must be a metric name or null, got {m.get('derived_from')!r}"
    n = m.get("n")
    if "n" in m and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        return f"n must be a whole number >= 1, got {n!r}"
    return None


def session_problem(m: dict[str, Any]) -> str | None:
    """The optional session facts of a metric or history item: flags and SM clock."""
    flags = m.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        return f"flags must be a list of strings, got {flags!r}"
    if "clock_mhz" in m:
        why = number_problem(m["clock_mhz"])
        if why:
            return f"clock_mhz {why}"
    for name in ("session", "gpu_uuid", "host"):  # which run, GPU and host saved it
        if not _text_or_none(m.get(name)):
            return f"{name} must be a string or null, got {m.get(name)!r}"
    for bound in ("ci_low", "ci_high"):  # a saved session's interval (history items)
        if m.get(bound) is not None:
            why = number_problem(m[bound])
            if why:
                return f"{bound} {why}"
    return None


def number_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, got {value!r}"
    if isinstance(value, int) and abs(value) >= 10**MAX_INT_DIGITS:
        return f"is a {len(str(abs(value)))}-digit integer: too large"
    if not math.isfinite(value):
        return f"is {value!r}, not a finite number"
    if value < 0:
        return f"is {value!r}: must be >= 0"
    return None


def _text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def validate(path: Path, data: Any) -> BaselineFile:
    if not isinstance(data, dict):
        raise _fail(path, f"expected a JSON object, got {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise _fail(path, f"not a pytest-gpuperf baseline (schema {data.get('schema')!r})")
    if data.get("version") != VERSION or isinstance(data.get("version"), bool):
        raise _fail(
            path,
            f"schema version {data.get('version')!r} is not supported (this pytest-gpuperf "
            f"reads version {VERSION}); upgrade pytest-gpuperf or re-save the baseline",
        )
    profile = data.get("profile")
    if not isinstance(profile, str) or not profile:
        raise _fail(path, "missing 'profile'")
    if not _text_or_none(data.get("updated")):
        raise _fail(path, f"'updated' must be a date string, got {data.get('updated')!r}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise _fail(path, "'entries' must be an object")
    for key, entry in entries.items():
        where = f"entry {key!r}"
        if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
            raise _fail(path, f"{where} has no 'metrics' object")
        env = entry.get("environment", {})
        if not isinstance(env, dict):
            raise _fail(path, f"{where}: 'environment' must be an object, got {env!r}")
        for name, value in env.items():
            if not (_text_or_none(value) or isinstance(value, int | float)) or isinstance(
                value, bool
            ):
                raise _fail(path, f"{where}: environment {name!r} must be a string or number")
        for name in ("date", "commit"):
            if not _text_or_none(entry.get(name)):
                raise _fail(path, f"{where}: {name!r} must be a string or null")
        if not isinstance(entry.get("flags", {}), dict):
            raise _fail(path, f"{where}: 'flags' must be an object")
        if "duration_s" in entry:
            why = number_problem(entry["duration_s"])
            if why:
                raise _fail(path, f"{where}: duration_s {why}")
        for mname, m in entry["metrics"].items():
            mw = f"{where} metric {mname!r}"
            why = metric_problem(m)
            if why:
                raise _fail(path, f"{mw}: {why}")
            hist = m.get("history")
            if not isinstance(hist, list) or not hist:
                raise _fail(path, f"{mw}: 'history' must be a non-empty list of sessions")
            for i, h in enumerate(hist):
                if not isinstance(h, dict) or "median" not in h:
                    raise _fail(path, f"{mw} history[{i}] has no median")
                why = number_problem(h["median"])
                if why:
                    raise _fail(path, f"{mw} history[{i}] median {why}")
                if not (_text_or_none(h.get("date")) and _text_or_none(h.get("commit"))):
                    raise _fail(path, f"{mw} history[{i}]: date and commit must be strings")
                why = session_problem(h)
                if why:
                    raise _fail(path, f"{mw} history[{i}]: {why}")
    extra = {k: v for k, v in data.items() if k not in KNOWN_TOP}
    return BaselineFile(path, profile, entries, data.get("updated"), extra)


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


def parse_json(text: str) -> Any:
    """Strict JSON: no NaN/Infinity, no duplicate keys, no huge integers, bounded nesting.
    Raises ValueError with a message fit to follow a file name."""
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
        raise ValueError(
            f"is not valid JSON (truncated or edited?): {exc.msg} at line {exc.lineno}"
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
        from ..units import format_size

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
        raise _fail(path, "is empty (truncated?)")
    try:
        data = parse_json(text)
    except ValueError as exc:
        raise _fail(path, str(exc)) from None
    return validate(path, data)


DEVICE_KEYS = ("gpu", "mig_profile", "emulated")


def device_conflict(old_env: dict[str, Any], new_env: dict[str, Any]) -> str | None:
    """How the device of a saved entry differs from a new result's, or None. Results of one
    device never enter another device's history."""
    for key in DEVICE_KEYS:
        if old_env.get(key) != new_env.get(key):
            return f"{key} {old_env.get(key)!r} in the file, {new_env.get(key)!r} now"
    return None


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
        raise _fail(path, f"belongs to profile {existing.profile!r}, not {profile!r}")
    entries = {k: json.loads(json.dumps(v)) for k, v in base.entries.items()}
    for key, new in updates.items():
        old = entries.get(key, {})
        if old:
            clash = device_conflict(old.get("environment") or {}, new.get("environment") or {})
            if clash:
                raise _fail(
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
            session = {"median": m["median"], "date": new.get("date"), "commit": new.get("commit")}
            # why the session is suspect, its SM clock, its interval (the report draws it),
            # which run, GPU and host it was (the noise model's sessions)
            for extra in ("flags", "clock_mhz", "ci_low", "ci_high", "session", "gpu_uuid", "host"):
                if m.get(extra) is not None and m.get(extra) != []:
                    session[extra] = m[extra]
            history.append(session)
            kept = {k: v for k, v in m.items() if k not in ("session", "gpu_uuid", "host")}
            merged_metrics[mname] = {**kept, "history": history[-HISTORY:]}
        entries[key] = {
            **old,
            **{k: v for k, v in new.items() if k != "metrics"},
            "metrics": merged_metrics,
        }
    merged = BaselineFile(path, profile, entries, now, dict(base.extra))
    validate(path, json.loads(json.dumps(merged.to_json())))  # what we write, we can read
    return merged


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
    from filelock import FileLock

    given = Path(path)
    path = Path(os.path.realpath(path))
    if given.is_symlink() and not path.parent.is_dir():
        raise _fail(
            given,
            f"is a symbolic link to {path}, whose directory does not exist; not creating "
            "directories elsewhere on disk (fix or remove the link)",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path(path)), timeout=LOCK_TIMEOUT_S):
        _clean_stale_temps(path)
        current = load(path)  # raises on a corrupt file: it is never overwritten
        merged = merge(current, path, profile, updates, now)
        text = json.dumps(merged.to_json(), indent=2, allow_nan=False) + "\n"
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
    return merged


# ----------------------------------------------------------- what a result saves


def result_classes(results: list[Result]) -> dict[str, str]:
    """The noise class of each result's figures, by result key: declared, else assigned
    from its unit and flags; a figure derived from another measurement of its test takes
    that measurement's class (one measurement, one noise)."""
    from .noise import classify

    out: dict[str, str] = {}
    for r in results:
        if r.kind == "measured" and r.throughput is not None:
            out[r.key] = classify(
                "throughput",
                r.throughput.unit,
                launch_bound=bool(r.launch_bound),
                bound=r.bound,
                declared=r.noise_class,
            )
    for r in results:
        if r.kind == "recorded":
            src = None
            if r.derived_from is not None:
                src = out.get(f"{r.nodeid}::{r.derived_from}" if r.derived_from else r.nodeid)
            unit = r.throughput.unit if r.throughput else r.unit
            out[r.key] = (
                r.noise_class
                or src
                or classify("value", unit, launch_bound=False, bound=None, declared=None)
            )
    return out


def metrics_of(result: Result, noise_class: str | None = None) -> dict[str, dict[str, Any]]:
    """Baseline metrics of a result. Measured: throughput (higher is better) and, on a GPU,
    peak reserved memory (lower is better: memory growth is a regression too). Recorded:
    its value, in its own unit and direction. Each carries its noise class (`noise_class`,
    else assigned here) and whether it gates."""
    from ..results import UNITS
    from .history import PER_CLOCK
    from .noise import COMPUTE, MEMORY, classify

    out: dict[str, dict[str, Any]] = {}
    t = result.throughput
    if result.outcome != "ok" or t is None:
        return out
    gate = {"gate": False} if not result.gate else {}
    if result.kind == "recorded":
        v = t.median
        cls = (
            noise_class
            or result.noise_class
            or classify("value", t.unit, launch_bound=False, bound=None, declared=None)
        )
        out["value"] = {
            "unit": t.unit,
            "direction": "higher" if result.higher_is_better else "lower",
            "median": v,
            "ci_low": v,
            "ci_high": v,
            "n": 1,
            "noise_class": cls,
            **gate,
            **({"derived_from": result.derived_from} if result.derived_from is not None else {}),
        }
        return out
    if result.time is None:
        return out
    session: dict[str, Any] = {"flags": result.session_flags} if result.session_flags else {}
    clock = result.clock_mhz
    if clock is not None:
        session["clock_mhz"] = clock
    cls = noise_class or classify("throughput", t.unit, launch_bound=bool(result.launch_bound),
                                  bound=result.bound, declared=result.noise_class)  # fmt: skip
    out["throughput"] = {
        "unit": t.unit,
        "direction": "higher" if result.higher_is_better else "lower",  # lower: a latency
        "median": t.median,
        "ci_low": t.ci_low,
        "ci_high": t.ci_high,
        "n": result.time.n,
        "noise_class": cls,
        **gate,
        **session,
    }
    if result.bound == "compute" and clock is not None:
        # clock-normalised: work per SM clock cycle, in the unit per GHz. From the cycles of
        # each sample where the engine measured them; else from the session's median clock.
        c = result.cycles
        if c is not None and c.median > 0 and c.ci_low > 0:
            per = result.work_per_call / UNITS[result.unit][1]
            low, mid, high = per / c.ci_high, per / c.median, per / c.ci_low
        else:
            ghz = clock / 1000
            low, mid, high = t.ci_low / ghz, t.median / ghz, t.ci_high / ghz
        out[PER_CLOCK] = {
            "unit": f"{t.unit} per GHz",
            "direction": "higher",
            "median": mid,
            "ci_low": low,
            "ci_high": high,
            "n": result.time.n,
            "noise_class": COMPUTE,
            **session,
        }
    if result.peak_reserved is not None:
        v = float(result.peak_reserved)
        out["peak_reserved"] = {
            "unit": "bytes",
            "direction": "lower",
            "median": v,
            "ci_low": v,
            "ci_high": v,
            "n": 1,
            "noise_class": MEMORY,
            **gate,
        }
    return out


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

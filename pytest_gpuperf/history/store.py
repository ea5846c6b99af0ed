"""Reading a history directory back: every run's file (record.py) checked and folded into
one series per (profile, test, figure), held as columns (arrays of numbers), so a history
of 2,000 runs of 500 figures (1M points) reads in seconds and a few hundred MiB
(docs/performance.md, tools/measure_history.py).

A file is taken whole or refused with one HistoryError naming the file and the field."""

from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.verdict import Status
from .record import ARCHIVE, COLUMNS, FORMAT_VERSION, LEFT_OUT, SCHEMA, SOURCES

STATUSES = tuple(s.value for s in Status)
MAX_BYTES = 64 * 1024 * 1024  # one run's file; 500 figures take about 150 KB


class HistoryError(ValueError):
    """A history file that cannot be read, is not one, or holds a value of the wrong kind."""


@dataclass
class Run:
    """One run of the history: its file, when, the code and the card."""

    name: str
    date: str  # ISO 8601, UTC
    commit: str | None
    dirty: bool | None
    profile: str | None
    saved: bool
    source: str
    card: dict[str, Any]
    session_id: str | None = None


@dataclass
class Series:
    """One figure of one profile over the runs, oldest first: a point per run that
    measured it (`runs` indexes History.runs), `left` the points left out and why."""

    profile: str
    test: str
    figure: str
    metric: str | None = None  # the test's metric: its node id is `test` less ::metric
    unit: str = ""
    higher: bool = True
    noise_class: str | None = None
    tolerance: float | None = None  # the newest verdict's
    runs: array = field(default_factory=lambda: array("i"))
    median: array = field(default_factory=lambda: array("d"))
    ci_low: array = field(default_factory=lambda: array("d"))  # nan: not recorded
    ci_high: array = field(default_factory=lambda: array("d"))
    status: array = field(default_factory=lambda: array("b"))  # STATUSES index, -1: none
    left: dict[int, str] = field(default_factory=dict)  # point index -> flag
    # point index -> "history restarted on <date>: <reason>" (gpuperf baseline accept)
    restarts: dict[int, str] = field(default_factory=dict)

    @property
    def nodeid(self) -> str:
        """The pytest node id of the series' test."""
        return self.test.removesuffix(f"::{self.metric}") if self.metric else self.test


@dataclass
class History:
    runs: list[Run] = field(default_factory=list)
    series: dict[tuple[str, str, str], Series] = field(default_factory=dict)
    # the figures of the run read last and their series: the next run most often has the same
    last_keys: list[Any] = field(default_factory=list)
    last_series: list[Series] = field(default_factory=list)
    duplicates: int = 0  # runs read twice (the same session in two files): counted once
    seen: set[str] = field(default_factory=set)  # each run's session id, else profile and date


def run_files(directory: Path) -> list[Path]:
    """The run and archive files of a history directory (its own temporary files skipped)."""
    if not directory.is_dir():
        raise HistoryError(f"history {directory}: is not a directory")
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith(".tmp-"))


def read_history(directory: Path) -> History:
    """Every run file of `directory`, oldest first."""
    hist = History()
    read_files(hist, run_files(directory))
    order(hist)
    return hist


def read_files(hist: History, paths: list[Path]) -> None:
    """The runs of these files added to `hist` (a run it holds already counted once)."""
    for path in paths:
        data = _load(path)
        where = f"history file {path}"
        runs = [(data, path.name, where)]
        if data.get("schema") == ARCHIVE:
            raw = data.get("runs")
            if not isinstance(raw, list):
                raise HistoryError(f"{where}: 'runs' must be a list of runs")
            runs = [(r, f"{path.name}#{i}", f"{where}: runs[{i}]") for i, r in enumerate(raw)]
        for run, name, said in runs:
            if not isinstance(run, dict) or run.get("schema") != SCHEMA:
                raise HistoryError(f"{said}: 'schema' is not {SCHEMA!r}")
            if run.get("version") != FORMAT_VERSION:
                raise HistoryError(f"{said}: 'version' {run.get('version')!r} is not 1")
            ident = run.get("session_id") or f"{run.get('profile')} at {utc(run.get('date'))}"
            if ident in hist.seen:  # a compaction cut short: its runs both archived and not
                hist.duplicates += 1
                continue
            hist.seen.add(ident)
            _add(hist, run, name, said)


def run_figures(directory: Path, name: str) -> dict[str, list[Any]]:
    """The figures' columns (record.COLUMNS) of one run of `directory`, by its name in
    History.runs (a file, or an archive's `<file>#<i>`), checked: what a series does not
    hold (each figure's rule, flags and sample count) for the few runs that need it."""
    file, _, at = name.partition("#")
    path = directory / file
    data = _load(path)
    where = f"history file {path}"
    if at:
        raw = data.get("runs")
        if not at.isdigit() or not isinstance(raw, list) or int(at) >= len(raw):
            raise HistoryError(f"{where}: holds no run {at}")
        data, where = raw[int(at)], f"{where}: runs[{at}]"
        if not isinstance(data, dict):
            raise HistoryError(f"{where}: is not a run")
    return _columns(data.get("figures"), where)


def _load(path: Path) -> dict[str, Any]:
    where = f"history file {path}"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise HistoryError(f"{where}: cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise HistoryError(f"{where}: is over {MAX_BYTES // 2**20} MiB")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HistoryError(f"{where}: is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") not in (SCHEMA, ARCHIVE):
        raise HistoryError(f"{where}: 'schema' is not {SCHEMA!r} (not a history run file)")
    if data.get("version") != FORMAT_VERSION:
        raise HistoryError(f"{where}: 'version' {data.get('version')!r} is not {FORMAT_VERSION}")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def utc(date: Any) -> str | None:
    """An ISO 8601 time in UTC to the second (one without an offset is taken as UTC), or
    None where `date` is not one."""
    try:
        when = datetime.fromisoformat(date) if isinstance(date, str) else None
    except ValueError:
        return None
    if when is None:
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds")


def run_of(data: dict[str, Any], name: str, where: str) -> Run:
    """The run's own fields, checked."""
    date = utc(data.get("date"))
    if date is None:
        raise HistoryError(
            f"{where}: 'date' must be an ISO 8601 time, got {_show(data.get('date'))}"
        )
    for key in ("commit", "profile", "session_id", "origin"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise HistoryError(f"{where}: {key!r} must be a string or null, got {_show(data[key])}")
    if not isinstance(data.get("dirty"), bool | None):
        raise HistoryError(f"{where}: 'dirty' must be true, false or null")
    if not isinstance(data.get("saved"), bool):
        raise HistoryError(f"{where}: 'saved' must be true or false")
    if data.get("source") not in SOURCES:
        raise HistoryError(f"{where}: 'source' must be one of {', '.join(SOURCES)}")
    card = data.get("card")
    if not isinstance(card, dict) or not all(v is None or isinstance(v, str)
                                             for v in card.values()):  # fmt: skip
        raise HistoryError(f"{where}: 'card' must be an object of strings or nulls")
    return Run(name, date, data.get("commit"), data.get("dirty"), data.get("profile"),
               data["saved"], data["source"], card, data.get("session_id"))  # fmt: skip


def _add(hist: History, data: dict[str, Any], name: str, where: str) -> None:
    run = run_of(data, name, where)
    cols = _columns(data.get("figures"), where)
    index = len(hist.runs)
    profile = run.profile or ""
    series = hist.series
    keys = [profile, *zip(cols["test"], cols["figure"], strict=True)]
    if keys == hist.last_keys:  # the same figures as the run before: its series, in order
        found = hist.last_series
    else:
        found = []
        for test, fig in keys[1:]:
            s = series.get((profile, test, fig))
            if s is None:
                s = series[(profile, test, fig)] = Series(profile, test, fig)
            found.append(s)
        hist.last_keys, hist.last_series = keys, found
    status = [-1 if x is None else _STATUS[x] for x in cols["verdict"]]
    for i, (s, m, lo, hi, st, flags) in enumerate(zip(
        found, cols["median"], cols["ci_low"], cols["ci_high"], status, cols["flags"],
        strict=True,
    )):  # fmt: skip
        if flags:
            left = next((x for x in flags if x in LEFT_OUT), None)
            if left is not None:
                s.left[len(s.runs)] = left
        s.runs.append(index)
        s.median.append(m)
        s.ci_low.append(_NAN if lo is None else lo)
        s.ci_high.append(_NAN if hi is None else hi)
        s.status.append(st)
        tol = cols["tolerance"][i]
        if tol:
            s.tolerance = tol
    for test, fig, note in _restarts(data.get("restarts"), where):
        s = series.get((profile, test, fig))
        if s is not None and s.runs and s.runs[-1] == index:
            s.restarts[len(s.runs) - 1] = note
    for s, unit, direction, cls, metric in zip(
        found, cols["unit"], cols["direction"], cols["noise_class"], cols["metric"], strict=True
    ):
        s.unit, s.higher, s.metric = unit, direction == "higher", metric
        s.noise_class = cls or s.noise_class
    hist.runs.append(run)


_NUM = (int, float)
_NAN = math.nan
_STATUS = {name: i for i, name in enumerate(STATUSES)}
# each column of a run's figures (record.COLUMNS): the values it may hold, and what to say
_KINDS: dict[str, tuple[Any, str]] = {
    "test": (lambda x: type(x) is str, "a string"),
    "metric": (lambda x: x is None or type(x) is str, "a string or null"),
    "figure": (lambda x: type(x) is str, "a string"),
    "median": (lambda x: type(x) in _NUM and x - x == 0, "a finite number"),
    "ci_low": (lambda x: x is None or (type(x) in _NUM and x - x == 0), "a finite number or null"),
    "ci_high": (lambda x: x is None or (type(x) in _NUM and x - x == 0), "a finite number or null"),
    "n": (lambda x: x is None or (type(x) is int and x >= 0), "a count or null"),
    "unit": (lambda x: type(x) is str, "a string"),
    "direction": (lambda x: x in ("higher", "lower"), "higher or lower"),
    "noise_class": (lambda x: x is None or type(x) is str, "a string or null"),
    "flags": (lambda x: type(x) is list and all(type(f) is str for f in x), "a list of strings"),
    "verdict": (lambda x: x is None or x in _STATUS, f"null or one of {', '.join(STATUSES)}"),
    "change": (lambda x: x is None or (type(x) in _NUM and x - x == 0), "a finite number or null"),
    "tolerance": (
        lambda x: x is None or (type(x) in _NUM and 0 <= x < math.inf),
        "a number >= 0 or null",
    ),
    "rule": (lambda x: x is None or type(x) is str, "a string or null"),
    "stage": (lambda x: x is None or type(x) is str, "a string or null"),
}


def _columns(cols: Any, where: str) -> dict[str, list[Any]]:
    """The run's figures, checked: every column a list of one value a figure, each of its
    kind (the first wrong one named, with its figure)."""
    if not isinstance(cols, dict):
        raise HistoryError(f"{where}: 'figures' must be an object of columns")
    n = len(cols.get("test") or [])
    for name in COLUMNS:
        col = cols.get(name)
        if not isinstance(col, list) or len(col) != n:
            raise HistoryError(f"{where}: figures {name!r} must be a list of {n} values "
                               "(one a figure)")  # fmt: skip
        ok, kind = _KINDS[name]
        if not all(map(ok, col)):
            i = next(i for i, x in enumerate(col) if not ok(x))
            what = "" if name in ("test", "figure") else f" ({cols['test'][i]} {cols['figure'][i]})"
            raise HistoryError(f"{where}: figures {name!r}[{i}]{what}: must be {kind}, "
                               f"got {_show(col[i])}")  # fmt: skip
    return cols


def _restarts(raw: Any, where: str) -> list[tuple[str, str, str]]:
    """The run's restarted figures (optional: files before 2026-12-07 have none)."""
    if raw is None:
        return []
    ok = isinstance(raw, list) and all(
        isinstance(r, dict) and all(type(r.get(k)) is str for k in ("test", "figure", "note"))
        for r in raw
    )
    if not ok:
        raise HistoryError(f"{where}: 'restarts' must be a list of {{test, figure, note}} "
                           "strings")  # fmt: skip
    return [(r["test"], r["figure"], r["note"]) for r in raw]


def order(hist: History) -> None:
    """Runs oldest first (file names sort by date to the second; an imported run or a clock
    may disagree): where they were not, each series' points follow the new order."""
    order = sorted(range(len(hist.runs)), key=lambda i: (hist.runs[i].date, hist.runs[i].name))
    if order == list(range(len(order))):
        return
    rank = [0] * len(order)
    for new, old in enumerate(order):
        rank[old] = new
    hist.runs = [hist.runs[i] for i in order]
    for s in hist.series.values():
        idx = sorted(range(len(s.runs)), key=lambda j: rank[s.runs[j]])
        left = {new: s.left[old] for new, old in enumerate(idx) if old in s.left}
        s.restarts = {new: s.restarts[old] for new, old in enumerate(idx) if old in s.restarts}
        s.runs = array("i", (rank[s.runs[j]] for j in idx))
        for name in ("median", "ci_low", "ci_high", "status"):
            col = getattr(s, name)
            setattr(s, name, array(col.typecode, (col[j] for j in idx)))
        s.left = left


def _show(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."

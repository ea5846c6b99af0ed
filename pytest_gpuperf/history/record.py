"""One run of the history as a file: what `--gpuperf-history=DIR` writes after a run and
`gpuperf history import` writes for an old one (docs/history.md; the schema is
schemas/history.schema.json).

One file per run (DIR/<date>-<commit12>-<session>.json), never overwritten: parallel GPU jobs
and git merges add files and never edit one. The file is written beside its final name and
linked there (os.link refuses an existing name, so two writers never overwrite each other;
a clash takes the next suffix); where the file system has no hard links, the name is
created exclusively first and the file renamed onto it."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ..core.figures import metrics_of
from ..core.verdict import Status, Verdict

SCHEMA = "pytest-gpuperf/history-run"
ARCHIVE = "pytest-gpuperf/history-archive"  # a month's runs in one file (history/compact.py)
FORMAT_VERSION = 1
SOURCES = ("run", "results-file", "baseline")
# why a figure's value in one run says nothing about its level: left out of its series
LEFT_OUT = ("power-state", "gpu-shared", "busy-host")
MAX_SUFFIX = 1000


def card_of(device: dict[str, Any]) -> dict[str, Any]:
    """The card a run measured on, from a DeviceSnapshot's dict: its name and UUID, the
    driver, the CUDA version the driver supports, torch and the host."""
    gpus = device.get("gpus") or []
    gpu = gpus[0] if gpus and isinstance(gpus[0], dict) else {}
    packages = device.get("packages") or {}
    name = gpu.get("name") or (f"cpu: {device['cpu_model']}" if device.get("cpu_model") else None)
    return {"name": name, "uuid": gpu.get("uuid"), "driver": device.get("driver_version"),
            "cuda": device.get("cuda_driver_version"), "torch": packages.get("torch"),
            "host": device.get("hostname")}  # fmt: skip


# the figures' columns, one value a figure: what it is, its value and its verdict
COLUMNS = ("test", "metric", "figure", "median", "ci_low", "ci_high", "n", "unit", "direction",
           "noise_class", "flags", "verdict", "change", "tolerance", "rule", "stage")  # fmt: skip


def verdict_of(v: Verdict | None) -> tuple[Any, ...]:
    """A figure's verdict as the history keeps it: its status, change, tolerance and the
    rule that decided it, at its stage (the last step of its trail); all None: none."""
    if v is None:
        return (None, None, None, None, None)
    last = v.trail[-1] if v.trail else None
    return (str(v.status), v.change, v.tolerance, last.rule if last else None,
            last.stage if last else None)  # fmt: skip


def figures_of(results: list[Any]) -> dict[str, list[Any]]:
    """Each judged figure of the results, as COLUMNS: its test (the result's key: the node
    id, then ::metric where the test named one), the metric, the figure's name, value, interval,
    count, unit, direction, noise class, the flags that leave it out of its series, and
    its verdict. Columns, not an object a figure: a run of 500 figures reads in about a
    millisecond (docs/performance.md)."""
    rows = []
    for r in results:
        busy = r.backend == "cpu" and isinstance(r.host, dict) and bool(r.host.get("busy"))
        for name, m in metrics_of(r).items():
            v = r.verdicts.get(name)
            flags = list(m.get("flags") or [])
            if busy and "busy-host" not in flags:
                flags.append("busy-host")
            if v is not None and v.status == Status.POWER_STATE:
                flags.append("power-state")
            rows.append((r.key, r.metric, name, m["median"], m.get("ci_low"), m.get("ci_high"),
                         m.get("n"), m["unit"], m["direction"], m.get("noise_class"), flags,
                         *verdict_of(v)))  # fmt: skip
    return {c: [row[i] for row in rows] for i, c in enumerate(COLUMNS)}


def restarts_of(results: list[Any]) -> list[dict[str, str]]:
    """The figures judged against a history `gpuperf baseline accept` restarted, each with
    its note ("history restarted on <date>: <reason>"): the dashboard marks where a
    figure's note first appears."""
    return [{"test": r.key, "figure": name, "note": str(v.restarted)}
            for r in results for name, v in r.verdicts.items() if v.restarted]  # fmt: skip


def run_record(summary: Any, source: str = "run", origin: str | None = None) -> dict[str, Any]:
    """The history's file of one run, from its RunSummary."""
    return {
        "schema": SCHEMA, "version": FORMAT_VERSION, "date": summary.date, "commit": summary.commit,
        "dirty": summary.dirty, "session_id": summary.session_id, "profile": summary.profile,
        "saved": bool(summary.saved), "source": source, "origin": origin,
        "card": card_of(summary.device), "figures": figures_of(summary.results),
        "restarts": restarts_of(summary.results),
    }  # fmt: skip


def file_name(record: dict[str, Any]) -> str:
    """<date>-<commit12>-<session>: sorted by name is sorted by time."""
    date = re.sub(r"[^0-9T]", "", str(record.get("date") or ""))[:15] or "nodate"
    commit = re.sub(r"[^0-9A-Za-z]", "", str(record.get("commit") or ""))[:12] or "nocommit"
    session = re.sub(r"[^0-9A-Za-z]", "", str(record.get("session_id") or ""))[:12] or "run"
    return f"{date}-{commit}-{session}"


def dumps(record: dict[str, Any]) -> str:
    """The file's text: the run's fields on one line, then one column of figures a line."""
    head = {k: v for k, v in record.items() if k != "figures"}
    columns = ",\n".join(
        json.dumps(name) + ":" + json.dumps(col, allow_nan=False, separators=(",", ":"))
        for name, col in record["figures"].items()
    )
    return json.dumps(head, allow_nan=False)[:-1] + ', "figures": {\n' + columns + "\n}}\n"


def archive_text(records: list[dict[str, Any]]) -> str:
    """An archive's text (gpuperf history compact): the runs, one a line, oldest first."""
    runs = ",\n".join(json.dumps(r, allow_nan=False, separators=(",", ":")) for r in records)
    head = json.dumps({"schema": ARCHIVE, "version": FORMAT_VERSION})[:-1]
    return head + ', "runs": [\n' + runs + "\n]}\n"


def write_run(directory: Path, record: dict[str, Any]) -> Path:
    """Write one run's file into `directory` (made where missing) and return its path;
    never overwrites a file (a name taken gets -2, -3, ...). OSError where it cannot."""
    return write_new(directory, file_name(record), dumps(record))


def write_new(directory: Path, stem: str, text: str) -> Path:
    """Write `text` as DIR/<stem>.json, or -2, -3, ... where that name is taken."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        for i in range(1, MAX_SUFFIX):
            path = directory / (f"{stem}.json" if i == 1 else f"{stem}-{i}.json")
            try:
                os.link(tmp, path)  # atomic, and refuses an existing name
                return path
            except FileExistsError:
                continue
            except OSError:  # no hard links here: the name taken first, then replaced
                if _claim(path):
                    os.replace(tmp, path)
                    return path
        raise FileExistsError(f"{directory}: {MAX_SUFFIX} runs named {stem}")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _claim(path: Path) -> bool:
    """Create `path` empty, where no file has its name (then only this writer fills it)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True

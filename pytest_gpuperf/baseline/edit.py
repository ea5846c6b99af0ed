"""Edits of a baseline file that no run makes: a metric's history restarted from an accepted
run (`gpuperf baseline accept`), two files' sessions merged (`gpuperf baseline merge` and
git's merge driver), and what a file holds per metric, as rows (`gpuperf baseline show`).
Pure: the file is read and written by `store` (`store.rewrite`: locked, atomic), the format
is `schema`'s. Nothing here drops a session unasked: a restart marks where judging starts
(a figure whose unit or direction changed drops its earlier sessions only when told,
`kind_changes`), and a merge keeps every session of both sides."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .history import HISTORY, metric_class, session_key, since_restart
from .schema import (
    BaselineFile,
    device_conflict,
    file_error,
    metric_summary,
    session_item,
)

# ------------------------------------------------------------------ accept: a restart


def restart_record(
    reason: str, date: str, commit: str | None, who: str | None, forced: list[str]
) -> dict[str, Any]:
    """What a history item that restarts its metric's history records: when, why, at
    which commit of the baseline's repository, by whom, and the refusals --force overrode."""
    rec: dict[str, Any] = {"date": date, "reason": reason, "commit": commit, "who": who}
    if forced:
        rec["forced"] = list(forced)
    return rec


def _kind(m: dict[str, Any]) -> str:
    return f"{m.get('unit')}, {m.get('direction') or 'higher'} is better"


def kind_changes(existing: BaselineFile | None, accepted: dict[str, dict[str, Any]]) -> list[str]:
    """The accepted figures whose unit or direction is not their metric's in `existing`
    (the run called them incomparable), each as "KEY METRIC: UNIT -> UNIT, N earlier
    session(s)": restarting them drops those sessions, which no other unit can be judged
    against."""
    out = []
    entries = existing.entries if existing is not None else {}
    for key, new in sorted(accepted.items()):
        for mname, m in sorted(new["metrics"].items()):
            prev = (entries.get(key) or {}).get("metrics", {}).get(mname) or {}
            same = prev.get("unit") == m["unit"] and prev.get("direction") == m["direction"]
            if prev.get("history") and not same:
                out.append(f"{key} {mname}: {_kind(prev)} -> {_kind(m)}, "
                           f"{len(prev['history'])} earlier session(s)")  # fmt: skip
    return out


def restart(
    existing: BaselineFile | None,
    path: Path,
    profile: str,
    accepted: dict[str, dict[str, Any]],
    record: dict[str, Any],
    now: str,
    drop_other_kind: bool = False,
) -> BaselineFile:
    """`existing` with each metric of `accepted` (entries_to_save's entries, narrowed to
    the accepted metrics) restarted from the accepted run: its figure becomes the metric's
    summary and the first session judged, marked with `record`. The sessions before it
    stay in the history (never judged again; the file keeps the newest HISTORY of them as
    saves go on). A session the history already holds (the accepted run saved itself) is
    marked where it is, not added twice. Raises BaselineError, changing nothing, for an
    entry of another device or profile, and for a figure of another unit or direction
    (`kind_changes`) unless `drop_other_kind`: its earlier sessions are then dropped."""
    base = existing or BaselineFile(path, profile, {})
    if base.profile != profile:
        raise file_error(path, f"belongs to profile {base.profile!r}, not {profile!r}")
    changed = kind_changes(existing, accepted)
    if changed and not drop_other_kind:
        raise file_error(path, f"not restarting {'; '.join(changed)} (another unit or "
                         "direction: --restart-incomparable drops those sessions)")  # fmt: skip
    entries = json.loads(json.dumps(base.entries))
    for key, new in accepted.items():
        old = entries.get(key, {})
        clash = device_conflict(old.get("environment") or {}, new.get("environment") or {})
        if old and clash:
            raise file_error(
                path, f"entry {key!r} was measured on another device ({clash}); not accepting"
            )
        metrics = dict(old.get("metrics", {}))
        for mname, m in new["metrics"].items():
            prev = metrics.get(mname, {})
            same_kind = prev.get("unit") == m["unit"] and prev.get("direction") == m["direction"]
            history = list(prev.get("history", [])) if same_kind else []
            item = {**session_item(new, m), "restart": record}
            at = [i for i, h in enumerate(history) if _same_session(h, item)]
            if at:  # the accepted run saved itself: restart from that very item
                history[at[-1]] = {**history[at[-1]], "restart": record}
                metrics[mname] = {**prev, "history": history}
            else:
                history.append(item)
                metrics[mname] = {**metric_summary(m), "history": history[-HISTORY:]}
        entries[key] = {**old, **{k: v for k, v in new.items() if k != "metrics"},
                        "metrics": metrics}  # fmt: skip
    return BaselineFile(path, profile, entries, now, dict(base.extra))


def _same_session(a: Any, b: dict[str, Any]) -> bool:
    """Whether history item `a` is the session of `b` (by session id and GPU, never by a
    date: two items saved without ids are not known to be one session)."""
    return isinstance(a, dict) and bool(a.get("session")) and session_key(a) == session_key(b)


# ------------------------------------------------------------------ merge: two files


def merge_files(
    ours: BaselineFile,
    theirs: BaselineFile,
    path: Path,
    base: BaselineFile | None = None,
    sides: tuple[str, str, str] = ("ours", "theirs", "the ancestor"),
) -> BaselineFile:
    """One file holding every session of both: per metric the union of the two histories,
    sorted by date then session, a session both hold kept once (the copy with a restart
    record, else the larger by its JSON text, so the result does not depend on which side
    is which). Entry fields (environment, date, commit, flags) are the newer entry's. With
    `base` (git's common ancestor) a session or an entry one side removed and the other
    left alone is removed. Files of any schema version this package reads are merged as
    read (a version-1 file is migrated on load), and the result is the current version.
    Raises BaselineError, naming `path` and the side (`sides`: how ours, theirs and base
    are called), for files of different profiles and for what it cannot merge without
    choosing: an entry of another device, a metric whose unit or direction differs, a
    top-level key the sides set differently."""
    for other, name in ((theirs, sides[1]), (base, sides[2])):
        if other is not None and other.profile != ours.profile:
            raise file_error(
                path, f"cannot merge profile {ours.profile!r} ({sides[0]}) with profile "
                f"{other.profile!r} ({name})",
            )
    entries: dict[str, dict[str, Any]] = {}
    old = base.entries if base is not None else {}
    for key in sorted(set(ours.entries) | set(theirs.entries)):
        a, b = ours.entries.get(key), theirs.entries.get(key)
        if a is not None and b is not None:
            entries[key] = _merge_entry(key, a, b, old.get(key), path)
        else:
            kept = a if a is not None else b
            if kept is not None and not (key in old and _sessions(kept) <= _sessions(old[key])):
                entries[key] = kept  # one side's new entry (or one that gained sessions)
    updated = max((u for u in (ours.updated, theirs.updated) if u), default=None)
    extra = _merge_extra(ours.extra, theirs.extra, base.extra if base else None, path)
    return BaselineFile(path, ours.profile, entries, updated, extra)


def _order(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _identity(item: Any) -> str:
    """A history item's identity across files: its session (id and GPU), else its text."""
    if isinstance(item, dict) and item.get("session"):
        return "s:" + session_key(item)
    return "t:" + _order(item)


def _sessions(entry: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (name, _identity(h))
        for name, m in (entry.get("metrics") or {}).items()
        for h in m.get("history") or []
    }


def _merge_entry(
    key: str, a: dict[str, Any], b: dict[str, Any], old: dict[str, Any] | None, path: Path
) -> dict[str, Any]:
    """One entry of both sides: the newer side's fields, each metric's histories merged."""
    clash = device_conflict(a.get("environment") or {}, b.get("environment") or {})
    if clash:
        raise file_error(path, f"entry {key!r}: the two sides were measured on other devices "
                         f"({clash}); merge by hand")  # fmt: skip
    older, newer = sorted((a, b), key=lambda e: (str(e.get("date") or ""), _order(e)))
    metrics = {**older.get("metrics", {}), **newer.get("metrics", {})}
    old_metrics = (old or {}).get("metrics") or {}
    for name in set(a.get("metrics", {})) & set(b.get("metrics", {})):
        ma, mb = a["metrics"][name], b["metrics"][name]
        if (ma.get("unit"), ma.get("direction")) != (mb.get("unit"), mb.get("direction")):
            raise file_error(
                path,
                f"entry {key!r} metric {name!r}: {ma.get('unit')} ({ma.get('direction')} is "
                f"better) on one side, {mb.get('unit')} ({mb.get('direction')}) on the other; "
                "merge by hand",
            )
        gone = old_metrics.get(name, {}).get("history") or []
        history = _merge_history(ma.get("history") or [], mb.get("history") or [], gone)
        metrics[name] = {**newer["metrics"][name], "history": history}
    return {**older, **newer, "metrics": dict(sorted(metrics.items()))}


def _merge_history(a: list[Any], b: list[Any], base: list[Any]) -> list[Any]:
    """Both sides' sessions, once each, by date then session; one in `base` that a side
    no longer holds was removed there (a save keeps the newest HISTORY) and stays out."""
    ids_a, ids_b = {_identity(h) for h in a}, {_identity(h) for h in b}
    removed = {i for i in map(_identity, base) if i not in ids_a or i not in ids_b}
    chosen: dict[str, Any] = {}
    for h in [*a, *b]:
        ident = _identity(h)
        if ident in removed:
            continue
        prev = chosen.get(ident)
        if prev is None or _rank(h) > _rank(prev):
            chosen[ident] = h
    return sorted(
        chosen.values(), key=lambda h: (str(h.get("date") or ""), _identity(h))
    )


def _rank(item: Any) -> tuple[bool, str]:
    return (isinstance(item, dict) and "restart" in item, _order(item))


def _merge_extra(
    a: dict[str, Any], b: dict[str, Any], base: dict[str, Any] | None, path: Path
) -> dict[str, Any]:
    """The top-level keys this version does not know (a team's "comment"): those the sides
    agree on or only one side has, or that one side changed from `base` (a side without
    the key removed it); two different values, neither the base's, are a conflict."""
    out: dict[str, Any] = {}
    for key in sorted(set(a) | set(b)):
        ta, tb = _text_of(a, key), _text_of(b, key)
        was = _text_of(base, key) if base is not None else None
        if ta == tb or (base is not None and tb == was) or (base is None and tb is None):
            side = a
        elif (base is not None and ta == was) or (base is None and ta is None):
            side = b
        else:
            raise file_error(path, f"the top-level key {key!r} differs between the two "
                             "sides; merge by hand")  # fmt: skip
        if key in side:
            out[key] = side[key]
    return out


def _text_of(d: dict[str, Any], key: str) -> str | None:
    """A key's value as JSON text, None where `d` does not hold the key."""
    return _order(d[key]) if key in d else None


# ------------------------------------------------------------------ show: what a file holds


@dataclass(frozen=True)
class MetricView:
    """One metric of a baseline as `gpuperf baseline show` lists it: the sessions the gate
    judges against (the newest HISTORY since its last restart) and those it keeps but no
    longer judges, their dates, commits, hosts and GPUs, flagged sessions, the restart."""

    key: str
    metric: str
    unit: str
    direction: str
    noise_class: str | None
    gate: bool
    judged: int  # sessions judged against
    kept: int  # sessions in the file
    first: str | None  # dates of the oldest and newest judged sessions
    last: str | None
    commits: tuple[str, ...]  # of the judged sessions, short, in order, once each
    hosts: tuple[str, ...]
    gpus: tuple[str, ...]  # GPU UUIDs of the judged sessions, else the entry's GPU name
    flagged: tuple[str, ...]  # "<date>: noise-limited, throttled" per flagged session
    restart: dict[str, Any] | None  # the restart record judging starts from


def _once(values: list[Any]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(v) for v in values if v))


def describe(file: BaselineFile) -> list[MetricView]:
    """Every metric of the file, by entry key then metric name."""
    out = []
    for key, entry in sorted(file.entries.items()):
        for name, m in sorted((entry.get("metrics") or {}).items()):
            hist = m.get("history") or []
            since = since_restart(m)
            judged = since[-HISTORY:]
            restart = judged[0].get("restart") if judged and len(since) <= HISTORY else None
            gpus = _once([h.get("gpu_uuid") for h in judged]) or _once(
                [(entry.get("environment") or {}).get("gpu")]
            )
            out.append(
                MetricView(
                    key, name, str(m.get("unit")), str(m.get("direction")),
                    metric_class(name, m, entry), m.get("gate") is not False,
                    len(judged), len(hist),
                    judged[0].get("date") if judged else None,
                    judged[-1].get("date") if judged else None,
                    _once([str(h.get("commit") or "")[:10] for h in judged]),
                    _once([h.get("host") for h in judged]),
                    gpus,
                    tuple(
                        f"{str(h.get('date'))[:19]}: {', '.join(h['flags'])}"
                        for h in judged if h.get("flags")
                    ),
                    restart if isinstance(restart, dict) else None,
                )
            )  # fmt: skip
    return out

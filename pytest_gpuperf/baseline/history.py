"""The history of a baseline: which session each saved value came from, and which sessions
may be compared at all.

A session is one pytest run on one GPU. Each history item records the run's session id, the
GPU's UUID and the host, so the two workers of one `-n 2` run on two GPUs are two sessions.
Items saved before these were recorded are told apart by their save time (one pytest process
saves once). No I/O here.
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass
from typing import Any

from ..core.figures import (
    COMPUTE,
    KERNEL_TIME,
    LAUNCH,
    MEMORY,
    RECORDED,
    TIMED,
    classify,
    kernels_of,
    per_clock_name,
)

ENV_PACKAGES = ("torch", "transformers", "peft", "bitsandbytes")
HISTORY = 10  # session medians kept per metric, and the window judged (the newest)


@dataclass(frozen=True)
class Series:
    """One metric's baseline history: a value per session, oldest first."""

    key: str  # "<entry key>::<metric>"
    cls: str
    sessions: tuple[str, ...]  # the session of each value (session id and GPU, or date)
    values: tuple[float, ...]
    derived: bool = False  # computed from another series' measurement: takes, never gives
    higher: bool = True  # higher is better; False: fitted on -log (a latency)


def host() -> str:
    return socket.gethostname()


def session_key(item: dict[str, Any]) -> str:
    """The session a history item belongs to: its session id and GPU, else its save time."""
    sid = item.get("session")
    if isinstance(sid, str) and sid:
        gpu = item.get("gpu_uuid")
        return f"{sid}/{gpu}" if isinstance(gpu, str) and gpu else sid
    return str(item.get("date") or "?")


def metric_class(name: str, base_m: dict[str, Any], entry: dict[str, Any]) -> str:
    """The noise class of a saved metric: a GPU kernel-time figure's is KERNEL_TIME
    whatever a file saved before 2026-12-03 says (its work's class then); any other's is the
    class saved with it, else what the entry tells (older files): memory for bytes,
    launch-bound when most sessions were flagged so, compute when it has a per-clock
    figure, the unit otherwise."""
    if kernels_of(name) is not None:
        return KERNEL_TIME
    saved = base_m.get("noise_class")
    if isinstance(saved, str) and saved:
        return saved
    hist = base_m.get("history") or []
    flagged = sum(1 for h in hist if "launch-bound" in (h.get("flags") or []))
    launch = flagged * 2 >= len(hist) > 0 or bool((entry.get("flags") or {}).get("launch_bound"))
    if name == "value":
        return MEMORY if base_m.get("unit") == "bytes" else RECORDED
    if name not in ("peak_reserved", "peak_allocated") and launch:
        return LAUNCH
    if name in TIMED and per_clock_name(name) in (entry.get("metrics") or {}):
        return COMPUTE
    return classify(name, str(base_m.get("unit")), launch_bound=False, bound=None, declared=None)


def series_of(
    entries: dict[str, dict[str, Any]],
    exclude_session: str | None = None,
    classes: dict[str, str] | None = None,
    derived: set[str] | None = None,
) -> list[Series]:
    """Every saved metric as a noise-model series. Items of `exclude_session` (the run
    being judged, when it saved itself into the file) are left out. `classes` ("key::metric"
    -> class) overrides the saved class: what the run being judged knows of its figures
    (a figure now declared as derived from a measurement joins that measurement's class)."""
    classes, derived = classes or {}, derived or set()
    out = []
    for key, entry in entries.items():
        for name, m in (entry.get("metrics") or {}).items():
            items = window(m, exclude_session)
            values: list[Any] = [h.get("median") for h in items]
            if not items or not all(
                isinstance(v, int | float) and math.isfinite(v) for v in values
            ):
                continue
            out.append(
                Series(
                    f"{key}::{name}",
                    classes.get(f"{key}::{name}") or metric_class(name, m, entry),
                    tuple(session_key(h) for h in items),
                    tuple(float(v) for v in values),
                    f"{key}::{name}" in derived or m.get("derived_from") is not None,
                    m.get("direction") != "lower",
                )
            )
    return out


def since_restart(base_m: dict[str, Any]) -> list[Any]:
    """A metric's history from its last restart on (`gpuperf baseline accept` marks the
    item it restarted from with a `restart` record), the whole history where none: the
    sessions before an accepted change are kept in the file, never judged against."""
    hist = base_m.get("history") or []
    for i in range(len(hist) - 1, max(-1, len(hist) - HISTORY - 2), -1):  # a judged one
        if isinstance(hist[i], dict) and isinstance(hist[i].get("restart"), dict):
            return list(hist[i:])
    return list(hist)


def restart_note(base_m: dict[str, Any]) -> str | None:
    """'history restarted on <date>: <reason>' while the restart is among the sessions a
    metric is judged against (the newest HISTORY), else None."""
    hist = since_restart(base_m)
    if len(hist) > HISTORY or not hist or not isinstance(hist[0], dict):
        return None
    rec = hist[0].get("restart")
    if not isinstance(rec, dict):
        return None
    return f"history restarted on {str(rec.get('date'))[:10]}: {rec.get('reason')}"


def window(base_m: dict[str, Any], exclude_session: str | None = None) -> list[dict[str, Any]]:
    """The history items a metric is judged against: the newest HISTORY of them since its
    last restart, less the run's own session. The file keeps HISTORY per metric; a longer
    list (edited by hand, merged) is judged on its newest items, never in time that grows
    with its length."""
    hist = since_restart(base_m)
    kept = [
        h for h in hist[-(HISTORY + 1):]
        if not (exclude_session and isinstance(h, dict) and h.get("session") == exclude_session)
    ]  # fmt: skip
    return kept[-HISTORY:]


def launch_bound_throughout(base_m: dict[str, Any], exclude_session: str | None = None) -> int:
    """How many sessions a metric is judged against (`window`) when every one of them was
    launch-bound, else 0: its figures then timed the host's launches, not the GPU's work."""
    hist = [h for h in window(base_m, exclude_session) if isinstance(h, dict)]
    if hist and all(LAUNCH in (h.get("flags") or ()) for h in hist):
        return len(hist)
    return 0


def values_of(base_m: dict[str, Any], exclude_session: str | None = None) -> list[float]:
    return [float(h["median"]) for h in window(base_m, exclude_session)]


# ----------------------------------------------------------------- comparable sessions


def environment(device: dict[str, Any], emulated: str | None) -> dict[str, Any]:
    """What a result depends on besides the code: from a DeviceSnapshot.to_dict()."""
    from ..hardware.device import nccl_version

    gpus = device.get("gpus") or []
    gpu = gpus[0] if gpus else {}
    pk = device.get("packages") or {}
    return {
        "gpu": gpu.get("name") or f"cpu: {device.get('cpu_model')}",
        "mig_profile": gpu.get("mig_profile"),
        "memory": gpu.get("memory_total") if gpu else device.get("host_memory"),
        "driver": device.get("driver_version"),
        "cuda": device.get("cuda_driver_version"),
        "python": device.get("python"),
        "emulated": emulated,
        "gpus": len(gpus),  # a 2-GPU figure is never compared with a 1-GPU one
        # nor NVLink with PCIe (recorded with two GPUs or more), and NCCL's version is kept
        "interconnect": device.get("interconnect") if len(gpus) > 1 else None,
        "nccl": nccl_version(pk),
        **{name: pk.get(name) for name in ENV_PACKAGES},
    }


def env_for(env: dict[str, Any], gpus_used: int) -> dict[str, Any]:
    """The run's environment as one result knows it: the GPUs its test uses (its
    requires_gpus count, else one) rather than all the host has, and the link between them
    only when it uses several. A single-GPU benchmark on a 2-GPU host is a 1-GPU figure."""
    gpus = env.get("gpus")
    if not isinstance(gpus, int) or gpus <= 1:
        return env
    used = min(gpus, max(1, gpus_used))
    return {**env, "gpus": used, "interconnect": env.get("interconnect") if used > 1 else None}


def _major(version: Any) -> str | None:
    if not version:
        return None
    return str(version).split(".")[0].split("+")[0]


def incomparable_reason(base: dict[str, Any], cur: dict[str, Any]) -> str | None:
    """Why a baseline measured in `base` must not be compared with `cur`, or None.

    A different GPU (or MIG slice, or emulated memory cap) always matters; for the driver,
    CUDA, torch and transformers only a different major version does. Minor version changes
    are what a regression gate is for.
    """
    for key in ("gpu", "mig_profile", "emulated"):
        if base.get(key) != cur.get(key):
            return f"{key} differs: baseline {base.get(key)!r}, now {cur.get(key)!r}"
    b, c = base.get("gpus"), cur.get("gpus")  # unknown in files saved before it was recorded
    if b is not None and c is not None and b != c:
        return f"GPU count differs: baseline {b}, now {c}"
    b, c = base.get("interconnect"), cur.get("interconnect")
    if b and c and b.split()[0] != c.split()[0]:  # NVLink vs PCIe; the link count may vary
        return f"interconnect differs: baseline {b}, now {c}"
    for key in ("driver", "cuda", "torch", "transformers"):
        b, c = _major(base.get(key)), _major(cur.get(key))
        if b and c and b != c:
            return f"{key} major version differs: baseline {base.get(key)}, now {cur.get(key)}"
    return None

"""The regression gate: results <-> baseline entries, environments, verdicts, report lines.

No pytest and no I/O here (baselines.py reads and writes files), so the pytest session,
the `gpuperf compare` command and the tests share one implementation.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .results import Result
from .verdict import (
    FAILED,
    INCOMPARABLE,
    NEW,
    SEVERITY,
    Current,
    Reference,
    Verdict,
    judge,
    relative_change_text,
    what_would_settle,
)

ENV_PACKAGES = ("torch", "transformers", "peft", "bitsandbytes")


def environment(device: dict[str, Any], emulated: str | None) -> dict[str, Any]:
    """What a result depends on besides the code: from a DeviceSnapshot.to_dict()."""
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
        **{name: pk.get(name) for name in ENV_PACKAGES},
    }


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
    for key in ("driver", "cuda", "torch", "transformers"):
        b, c = _major(base.get(key)), _major(cur.get(key))
        if b and c and b != c:
            return f"{key} major version differs: baseline {base.get(key)}, now {cur.get(key)}"
    return None


def metrics_of(result: Result) -> dict[str, dict[str, Any]]:
    """Baseline metrics of a result: throughput (higher is better) and, on a GPU, peak
    reserved memory (lower is better: memory growth is a regression too)."""
    out: dict[str, dict[str, Any]] = {}
    if result.outcome != "ok" or result.throughput is None or result.time is None:
        return out
    t = result.throughput
    out["throughput"] = {
        "unit": t.unit,
        "direction": "higher",
        "median": t.median,
        "ci_low": t.ci_low,
        "ci_high": t.ci_high,
        "n": result.time.n,
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
        }
    return out


def metrics_of_extra(extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    v = float(extra["value"])
    return {
        "value": {
            "unit": extra["unit"],
            "direction": "higher" if extra.get("higher_is_better", True) else "lower",
            "median": v,
            "ci_low": v,
            "ci_high": v,
            "n": 1,
        }
    }


def entry(
    metrics: dict[str, dict[str, Any]],
    env: dict[str, Any],
    *,
    date: str,
    commit: str | None,
    flags: dict[str, Any],
) -> dict[str, Any]:
    return {"environment": env, "date": date, "commit": commit, "flags": flags, "metrics": metrics}


def compare(
    metrics: dict[str, dict[str, Any]],
    env: dict[str, Any],
    base_entry: dict[str, Any] | None,
    *,
    tolerance: float,
    memory_tolerance: float,
    allow_cross_gpu: bool = False,
) -> dict[str, Verdict]:
    """Verdict per metric of one benchmark against its baseline entry (None: new)."""
    out: dict[str, Verdict] = {}
    if base_entry is None:
        return {m: Verdict(NEW, None, None, None, tolerance, "no baseline") for m in metrics}
    reason = incomparable_reason(base_entry.get("environment", {}), env)
    if reason and not (allow_cross_gpu and reason.startswith("gpu differs")):
        return {m: Verdict(INCOMPARABLE, None, None, None, tolerance, reason) for m in metrics}
    for name, m in metrics.items():
        base_m = base_entry["metrics"].get(name)
        tol = memory_tolerance if name == "peak_reserved" else tolerance
        if base_m is None or base_m.get("unit") != m["unit"]:
            why = (
                "no baseline for this metric"
                if base_m is None
                else (f"unit changed: baseline {base_m.get('unit')}, now {m['unit']}")
            )
            out[name] = Verdict(NEW if base_m is None else INCOMPARABLE, None, None, None, tol, why)
            continue
        ref = Reference(tuple(h["median"] for h in base_m["history"]))
        cur = Current(m["median"], m.get("ci_low", m["median"]), m.get("ci_high", m["median"]))
        out[name] = judge(cur, ref, higher_is_better=m["direction"] == "higher", tolerance=tol)
    return out


def failed_verdicts(base_entry: dict[str, Any] | None, error: str | None) -> dict[str, Verdict]:
    """A benchmark that had a baseline but did not produce a result (e.g. out of memory)."""
    if base_entry is None:
        return {}
    return {
        m: Verdict(FAILED, None, None, None, 0.0, error or "no result")
        for m in base_entry.get("metrics", {})
    }


def describe_value(value: float, unit: str) -> str:
    if unit == "bytes":
        from .units import format_size

        return format_size(value)
    from .results import _fmt

    return f"{_fmt(value)} {unit}"


def failure_line(
    key: str,
    metric: str,
    v: Verdict,
    current: dict[str, Any],
    base_entry: dict[str, Any],
    profile: str,
    remeasured: bool,
) -> str:
    """One readable line: metric, baseline -> now, change, interval, tolerance, baseline
    profile and date."""
    base_m = base_entry["metrics"][metric]
    ref = Reference(tuple(h["median"] for h in base_m["history"])).value
    unit = current["unit"]
    return (
        f"PERFORMANCE REGRESSION {key} {metric}: {describe_value(ref, unit)} -> "
        f"{describe_value(current['median'], unit)} ({relative_change_text(v)} at 99%, "
        f"tolerance {v.tolerance * 100:.1f}%); baseline {profile} of "
        f"{str(base_entry.get('date') or '?')[:10]}"
        + (f" commit {str(base_entry['commit'])[:10]}" if base_entry.get("commit") else "")
        + f", {len(base_m['history'])} session(s)"
        + ("; confirmed by a re-measurement" if remeasured else "")
    )


def verdict_dict(v: Verdict, history_len: int) -> dict[str, Any]:
    d = asdict(v)
    advice = what_would_settle(v, history_len)
    if advice:
        d["advice"] = advice
    return d


def worst(statuses: list[str]) -> str:
    return min(statuses, key=lambda s: SEVERITY.get(s, 99)) if statuses else NEW

"""THE regression gate: results + a baseline -> verdicts, failure lines, missing entries,
entries to save. The pytest session and the `gpuperf compare` command both call it, so a
result gets the same verdict in CI and offline; nothing else judges.

No pytest and no I/O here (baselines.py reads and writes files).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from .device import nccl_version
from .results import UNITS, Result
from .verdict import (
    CONFIDENCE,
    FAILED,
    INCOMPARABLE,
    NEW,
    REGRESSED,
    SEVERITY,
    Current,
    Reference,
    Verdict,
    combine_clocked,
    judge,
    relative_change_text,
    what_would_settle,
)

ENV_PACKAGES = ("torch", "transformers", "peft", "bitsandbytes")
DEFAULT_TOLERANCE = 0.03
DEFAULT_MEMORY_TOLERANCE = 0.05
FAILING = (REGRESSED, FAILED)  # verdicts that fail a test (and the compare command)
PER_CLOCK = "throughput_per_clock"  # judged with the throughput of compute-bound work


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
        "gpus": len(gpus),  # a 2-GPU figure is never compared with a 1-GPU one
        # nor NVLink with PCIe (recorded with two GPUs or more), and NCCL's version is kept
        "interconnect": device.get("interconnect") if len(gpus) > 1 else None,
        "nccl": nccl_version(pk),
        **{name: pk.get(name) for name in ENV_PACKAGES},
    }


def env_for(env: dict[str, Any], result: Result) -> dict[str, Any]:
    """The run's environment as one result knows it: the GPUs its test uses (its
    requires_gpus count, else one) rather than all the host has, and the link between them
    only when it uses several. A single-GPU benchmark on a 2-GPU host is a 1-GPU figure."""
    gpus = env.get("gpus")
    if not isinstance(gpus, int) or gpus <= 1:
        return env
    used = min(gpus, max(1, result.gpus_used))
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


def metrics_of(result: Result) -> dict[str, dict[str, Any]]:
    """Baseline metrics of a result. Measured: throughput (higher is better) and, on a GPU,
    peak reserved memory (lower is better: memory growth is a regression too). Recorded:
    its value, in its own unit and direction."""
    out: dict[str, dict[str, Any]] = {}
    t = result.throughput
    if result.outcome != "ok" or t is None:
        return out
    if result.kind == "recorded":
        v = t.median
        out["value"] = {
            "unit": t.unit,
            "direction": "higher" if result.higher_is_better else "lower",
            "median": v,
            "ci_low": v,
            "ci_high": v,
            "n": 1,
        }
        return out
    if result.time is None:
        return out
    session: dict[str, Any] = {"flags": result.session_flags} if result.session_flags else {}
    clock = result.clock_mhz
    if clock is not None:
        session["clock_mhz"] = clock
    out["throughput"] = {
        "unit": t.unit,
        "direction": "higher",
        "median": t.median,
        "ci_low": t.ci_low,
        "ci_high": t.ci_high,
        "n": result.time.n,
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
        }
    return out


def reference_of(base_m: dict[str, Any]) -> Reference:
    hist = base_m["history"]
    return Reference(
        tuple(h["median"] for h in hist), tuple(bool(h.get("flags")) for h in hist)
    )


def _base_clock(base_m: dict[str, Any]) -> float | None:
    clocks = [h["clock_mhz"] for h in base_m["history"] if h.get("clock_mhz")]
    return statistics.median(clocks) if clocks else None


def compare(
    metrics: dict[str, dict[str, Any]],
    env: dict[str, Any],
    base_entry: dict[str, Any] | None,
    *,
    tolerance: float,
    memory_tolerance: float,
    allow_cross_gpu: bool = False,
    confidence: float = CONFIDENCE,
) -> dict[str, Verdict]:
    """Verdict per metric of one benchmark against its baseline entry (None: new).

    Compute-bound work (with a throughput per clock metric) is judged in time AND per SM
    clock cycle: see verdict.combine_clocked. The per-clock metric has no verdict of its own.
    """
    out: dict[str, Verdict] = {}
    shown = [m for m in metrics if m != PER_CLOCK]
    if base_entry is None:
        return {m: Verdict(NEW, None, None, None, tolerance, "no baseline") for m in shown}
    reason = incomparable_reason(base_entry.get("environment", {}), env)
    if reason and not (allow_cross_gpu and reason.startswith("gpu differs")):
        return {m: Verdict(INCOMPARABLE, None, None, None, tolerance, reason) for m in shown}

    def one(name: str, m: dict[str, Any], base_m: dict[str, Any] | None, tol: float) -> Verdict:
        if base_m is None or base_m.get("unit") != m["unit"]:
            why = (
                "no baseline for this metric"
                if base_m is None
                else (f"unit changed: baseline {base_m.get('unit')}, now {m['unit']}")
            )
            return Verdict(NEW if base_m is None else INCOMPARABLE, None, None, None, tol, why)
        cur = Current(m["median"], m.get("ci_low", m["median"]), m.get("ci_high", m["median"]))
        return judge(
            cur,
            reference_of(base_m),
            higher_is_better=m["direction"] == "higher",
            tolerance=tol,
            confidence=confidence,
        )

    for name in shown:
        m = metrics[name]
        base_m = base_entry["metrics"].get(name)
        tol = memory_tolerance if name == "peak_reserved" else tolerance
        v = one(name, m, base_m, tol)
        per_clock, base_pc = metrics.get(PER_CLOCK), base_entry["metrics"].get(PER_CLOCK)
        if name == "throughput" and per_clock and base_pc and base_m and v.worse is not None:
            cycles = one(PER_CLOCK, per_clock, base_pc, tol)
            v = combine_clocked(v, cycles, _base_clock(base_m), m.get("clock_mhz"))
        out[name] = v
    return out


def failed_verdicts(base_entry: dict[str, Any] | None, error: str | None) -> dict[str, Verdict]:
    """A benchmark that had a baseline but did not produce a result (e.g. out of memory)."""
    if base_entry is None:
        return {}
    return {
        m: Verdict(FAILED, None, None, None, 0.0, error or "no result")
        for m in base_entry.get("metrics", {})
    }


def verdict_dict(v: Verdict, history_len: int) -> dict[str, Any]:
    d = asdict(v)
    advice = what_would_settle(v, history_len)
    if advice:
        d["advice"] = advice
    return d


def judge_result(
    result: Result,
    entries: dict[str, dict[str, Any]],
    env: dict[str, Any],
    *,
    allow_cross_gpu: bool = False,
    tolerance: float | None = None,
    memory_tolerance: float | None = None,
    confidence: float = CONFIDENCE,
) -> dict[str, dict[str, Any]]:
    """Verdict dicts per metric of one result against the baseline's entries.

    Tolerances are the result's own (its test's resolved settings, stored in
    `result.config`) unless given; a result that failed (out of memory) where the baseline
    has figures is FAILED."""
    cfg = result.config or {}
    tol = tolerance if tolerance is not None else cfg.get("tolerance", DEFAULT_TOLERANCE)
    mem_tol = (
        memory_tolerance
        if memory_tolerance is not None
        else cfg.get("memory_tolerance", DEFAULT_MEMORY_TOLERANCE)
    )
    base = entries.get(result.key)
    metrics = metrics_of(result)
    if not metrics:
        verdicts = failed_verdicts(base, result.error or "the benchmark produced no result")
    else:
        verdicts = compare(
            metrics,
            env_for(env, result),
            base,
            tolerance=tol,
            memory_tolerance=mem_tol,
            allow_cross_gpu=allow_cross_gpu,
            confidence=confidence,
        )
    out = {}
    for name, v in verdicts.items():
        hist = len(base["metrics"].get(name, {}).get("history", [])) if base else 0
        out[name] = verdict_dict(v, hist)
    return out


def failing(result: Result) -> bool:
    return any(v.get("status") in FAILING for v in result.verdicts.values())


def describe_value(value: float, unit: str) -> str:
    if unit == "bytes":
        from .units import format_size

        return format_size(value)
    from .results import _fmt

    return f"{_fmt(value)} {unit}"


def _verdict(vd: dict[str, Any]) -> Verdict:
    return Verdict(**{k: vd[k] for k in Verdict.__dataclass_fields__})


def failure_lines(
    results: Iterable[Result], entries: dict[str, dict[str, Any]], profile: str
) -> list[str]:
    """One readable line per failing metric: what, baseline -> now, change, interval,
    tolerance, which baseline (profile, date, commit, sessions), and whether re-measured."""
    lines = []
    for r in results:
        metrics = metrics_of(r)
        base_entry = entries.get(r.key) or {}
        for name, vd in r.verdicts.items():
            status = vd.get("status")
            if status == FAILED:
                lines.append(
                    f"PERFORMANCE REGRESSION {r.key} {name}: no result now ({vd.get('reason')}) "
                    f"where baseline {profile} has one: "
                    + _base_text(base_entry, name, profile)
                )
                continue
            if status != REGRESSED or name not in metrics:
                continue
            v = _verdict(vd)
            base_m = base_entry["metrics"][name]
            ref = reference_of(base_m).value
            unit = metrics[name]["unit"]
            lines.append(
                f"PERFORMANCE REGRESSION {r.key} {name}: {describe_value(ref, unit)} -> "
                f"{describe_value(metrics[name]['median'], unit)} ({relative_change_text(v)} "
                f"at 99%, tolerance {v.tolerance * 100:.1f}%); baseline "
                + _base_text(base_entry, name, profile)
                + ("; confirmed by a re-measurement" if r.remeasured else "")
            )
    return lines


def _base_text(base_entry: dict[str, Any], metric: str, profile: str) -> str:
    hist = base_entry.get("metrics", {}).get(metric, {}).get("history", [])
    return (
        f"{profile} of {str(base_entry.get('date') or '?')[:10]}"
        + (f" commit {str(base_entry['commit'])[:10]}" if base_entry.get("commit") else "")
        + f", {len(hist)} session(s)"
    )


def selected(entries: Iterable[str], collected: Iterable[str]) -> list[str]:
    """Baseline keys that belong to the collected tests (a key is a node id, or a node id
    with '::metric')."""
    chosen = set(collected)
    out = []
    for key in entries:
        node = key.split("::")
        if any("::".join(node[:cut]) in chosen for cut in range(len(node), 0, -1)):
            out.append(key)
    return out


def missing(
    entries: Iterable[str], measured: Iterable[str], collected: Iterable[str] | None
) -> list[str]:
    """Baseline entries that produced no result in this run: of the collected tests only
    (None: every entry counts, as offline, where the run's selection is unknown)."""
    done = set(measured)
    keys = list(entries) if collected is None else selected(entries, collected)
    return [k for k in keys if k not in done]


def judged_metrics(entries: dict[str, dict[str, Any]], keys: Iterable[str] | None) -> int:
    """How many baseline metrics a run can judge (per-clock figures are part of their
    throughput's verdict): the number the run-wide false-alarm budget is shared by."""
    chosen = None if keys is None else set(keys)
    return sum(
        sum(1 for m in e.get("metrics", {}) if m != PER_CLOCK)
        for k, e in entries.items()
        if chosen is None or k in chosen
    )


def key_collisions(results: Iterable[Result]) -> list[str]:
    """Two results of a run under one baseline key (e.g. a parameter id that ends like
    another test's metric): one would silently replace the other."""
    seen: dict[str, Result] = {}
    out = []
    for r in results:
        other = seen.get(r.key)
        if other is not None:
            out.append(
                f"{r.key}: measured twice in one run (by {other.nodeid}"
                f"{' metric ' + repr(other.metric) if other.metric else ''} and by {r.nodeid}"
                f"{' metric ' + repr(r.metric) if r.metric else ''}): give them distinct "
                "metric names"
            )
        else:
            seen[r.key] = r
    return out


def entries_to_save(
    results: Iterable[Result],
    env: dict[str, Any],
    *,
    date: str,
    commit: str | None,
    durations: dict[str, float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Baseline entries for this run's results that have figures (one environment: a run
    has one device and one emulation)."""
    updates: dict[str, dict[str, Any]] = {}
    for r in results:
        metrics = metrics_of(r)
        if not metrics:
            continue
        flags = {"launch_bound": r.launch_bound, "throttled": r.throttled, "emulated": r.emulated}
        updates[r.key] = {
            "environment": env_for(env, r),
            "date": date,
            "commit": commit,
            "flags": flags,
            "metrics": metrics,
        }
        if durations and r.nodeid in durations:  # the whole test's, for --gpuperf-plan
            updates[r.key]["duration_s"] = round(durations[r.nodeid], 3)
    return updates


def expected_durations(
    entries: dict[str, dict[str, Any]], nodeids: Iterable[str]
) -> dict[str, float]:
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


def worst(statuses: list[str]) -> str:
    return min(statuses, key=lambda s: SEVERITY.get(s, 99)) if statuses else NEW

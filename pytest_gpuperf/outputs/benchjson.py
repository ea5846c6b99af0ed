"""Our results in pytest-benchmark's --benchmark-json file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .summary import RunSummary
from .text import json_safe


def write_benchmark_json(config: pytest.Config, summary: RunSummary, started: float) -> None:
    """Put our results into pytest-benchmark's --benchmark-json file.

    pytest-benchmark writes that file only when one of its own benchmarks ran, and our
    pytest_benchmark_update_json hook adds a "gpuperf" section then. When none of its
    benchmarks ran, we write the file in its layout, with its machine and commit info
    from its public hooks, so --benchmark-json always holds the GPU results. Called by the
    process that reports (never a pytest-xdist worker: run/session.py's finish_outputs).
    """
    option = (
        config.getoption("benchmark_json", None)
        if config.pluginmanager.hasplugin("benchmark")
        else None
    )
    if not option or not summary.results:
        return
    # pytest-benchmark >= 5.3 passes a path; older versions an open binary file, closed
    # once it has written to it
    if hasattr(option, "write"):
        if getattr(option, "closed", False):
            return  # it wrote the file, with our section from pytest_benchmark_update_json
        data = skeleton(config)
        data["gpuperf"] = json_safe(summary.payload())
        data["benchmarks"] = benchmark_entries(summary)  # as for a path, below
        option.write(json.dumps(data, indent=2, default=str).encode())
        option.close()
        return
    target = Path(option)
    if target.is_file() and target.stat().st_mtime >= started and _ours(target, summary):
        return  # pytest-benchmark wrote it, with our section from pytest_benchmark_update_json
    data = skeleton(config)
    data["gpuperf"] = json_safe(summary.payload())
    data["benchmarks"] = benchmark_entries(summary)
    target.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")


def _ours(target: Path, summary: RunSummary) -> bool:
    """Whether the file holds this run's "gpuperf" section (its session id): one written
    by another process since the run began (a fresh process, a second run) is not."""
    try:
        section = json.loads(target.read_text(encoding="utf-8")).get("gpuperf")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(section, dict) and section.get("session_id") == summary.session_id


def skeleton(config: pytest.Config) -> dict[str, Any]:
    """pytest-benchmark's JSON layout, with its machine and commit info (public hooks)."""
    from datetime import UTC, datetime
    from importlib.metadata import version

    hook = config.hook
    machine_info = hook.pytest_benchmark_generate_machine_info(config=config)
    hook.pytest_benchmark_update_machine_info(config=config, machine_info=machine_info)
    commit_info = hook.pytest_benchmark_generate_commit_info(config=config)
    hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
    return {
        "machine_info": machine_info,
        "commit_info": commit_info,
        "benchmarks": [],
        "datetime": datetime.now(UTC).isoformat(),
        "version": version("pytest-benchmark"),
    }


def benchmark_entries(summary: RunSummary) -> list[dict[str, Any]]:
    """Each measured result as a pytest-benchmark entry, so `pytest-benchmark compare` and
    tools that read its JSON (github-action-benchmark's "pytest" format) see it: stats in
    seconds per call, computed by pytest-benchmark's own Stats from our samples; throughput
    (a latency's under `latency`), its interval, the device and the flags in extra_info.
    Recorded figures (a max batch, a latency) are no timings: they are in the "gpuperf"
    section only."""
    from pytest_benchmark.stats import Stats

    out = []
    for r in summary.results:
        if r.kind != "measured" or not r.samples or r.throughput is None:
            continue
        stats = Stats()
        for x in r.samples:
            stats.update(x)
        name = r.nodeid.rsplit("::", 1)[-1] + (f"::{r.metric}" if r.metric else "")
        param = name[name.index("[") + 1 : name.rindex("]")] if "[" in name else None
        fig = r.figure_name
        entry = {
            "group": "gpuperf",
            "name": name,
            # never pytest-benchmark's own fullname (the node id) of a test that uses both
            # fixtures: --benchmark-compare matches entries by fullname
            "fullname": f"{r.key} (gpuperf)",
            "params": {"param": param} if param else None,
            "param": param,
            "extra_info": json_safe(
                {
                    fig: r.throughput.median,  # throughput, or latency (lower is better)
                    f"{fig}_unit": r.throughput.unit,
                    f"{fig}_ci": [r.throughput.ci_low, r.throughput.ci_high],
                    "work_per_call": r.work_per_call,
                    "unit": r.unit,
                    "device": r.device,
                    "profile": summary.profile,
                    "timer": r.timer,
                    "peak_allocated_bytes": r.peak_allocated,
                    "peak_reserved_bytes": r.peak_reserved,
                    "busy_fraction": r.busy_fraction,
                    "energy_per_unit_j": r.energy_per_unit_j,
                    "flags": r.flags(),
                }
            ),
            "options": {"timer": r.timer, "calls_per_sample": r.calls_per_sample},
            "stats": {
                **json_safe(stats.as_dict()),
                "data": list(r.samples),
                "iterations": r.calls_per_sample,
            },
        }
        out.append(entry)
    return out

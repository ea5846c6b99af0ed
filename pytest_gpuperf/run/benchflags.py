"""pytest-benchmark's own flags, honoured by `gpu_benchmark` tests.

A user of both plugins expects `--benchmark-only`, `--benchmark-skip`,
`--benchmark-disable` and `--benchmark-save`/`--benchmark-autosave` to mean for
`gpu_benchmark` tests what they mean for `benchmark` tests. pytest-benchmark decides
"is a benchmark" by its own fixture's name alone, so each flag is applied here:

- `--benchmark-only`: pytest-benchmark marks every test without its fixture skipped
  ("Skipping non-benchmark"); that mark is taken off the `gpu_benchmark` tests again.
- `--benchmark-skip` (unless `--benchmark-only`): `gpu_benchmark` tests are skipped with
  pytest-benchmark's reason.
- `--benchmark-disable` (unless `--benchmark-enable`): `gpu_benchmark(fn)` calls `fn` once
  and measures nothing (GpuBenchmark(disabled=True)).
- `--benchmark-save`/`--benchmark-autosave`: pytest-benchmark saves nothing (and warns)
  when none of its own benchmarks ran; the plugin's results are then saved in its storage,
  in its layout (with its benchmarks, they join its file through
  pytest_benchmark_update_json).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..outputs.summary import RunSummary

ONLY_REASON = "Skipping non-benchmark (--benchmark-only active)."
SKIP_REASON = "Skipping benchmark (--benchmark-skip active)."


def _option(config: pytest.Config, name: str) -> Any:
    if not config.pluginmanager.hasplugin("benchmark"):
        return None
    return config.getoption(name, None)


def uses_gpu_benchmark(item: pytest.Item) -> bool:
    return "gpu_benchmark" in getattr(item, "fixturenames", ())


def apply_selection(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After pytest-benchmark's pytest_collection_modifyitems: --benchmark-only runs the
    gpu_benchmark tests, --benchmark-skip skips them."""
    only = bool(_option(config, "benchmark_only"))
    skip = bool(_option(config, "benchmark_skip")) and not only
    if not (only or skip):
        return
    for item in items:
        if not uses_gpu_benchmark(item) or "benchmark" in getattr(item, "fixturenames", ()):
            continue  # a test with pytest-benchmark's fixture too: its decision stands
        if only:
            item.own_markers[:] = [m for m in item.own_markers if not _is_only_skip(m)]
        else:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


def _is_only_skip(mark: pytest.Mark) -> bool:
    reason = mark.kwargs.get("reason", mark.args[0] if mark.args else None)
    return mark.name == "skip" and reason == ONLY_REASON


def disabled(config: pytest.Config) -> bool:
    """--benchmark-disable without --benchmark-enable, as pytest-benchmark reads them."""
    return bool(_option(config, "benchmark_disable")) and not _option(config, "benchmark_enable")


SAVE_KEY = pytest.StashKey[str]()  # the name pytest-benchmark would have saved under


class SaveHandover:
    """Around pytest-benchmark's pytest_sessionfinish: when none of its own benchmarks ran
    but gpu_benchmark results exist, it would save nothing and warn "Not saving anything,
    no benchmarks have been run!"; the save is handed over to `save_when_alone` instead."""

    def __init__(self, has_results: Callable[[], bool]) -> None:
        self.has_results = has_results

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        bs: Any = getattr(session.config, "_benchmarksession", None)  # pytest-benchmark 4-5
        name = getattr(bs, "save", None) or getattr(bs, "autosave", None)
        if name and not getattr(bs, "benchmarks", None) and self.has_results():
            session.config.stash[SAVE_KEY] = name
            bs.save = bs.autosave = None
        return (yield)


def save_when_alone(config: pytest.Config, summary: RunSummary) -> str | None:
    """--benchmark-save/--benchmark-autosave when none of pytest-benchmark's own benchmarks
    ran (SaveHandover): the plugin's results, saved in its storage and layout. Returns a
    line for the terminal, or None."""
    name = config.stash.get(SAVE_KEY, None)
    bs = getattr(config, "_benchmarksession", None)
    from ..fresh.workers import is_worker

    if not name or bs is None or is_worker(config) or not summary.results:
        return None
    from ..outputs.benchjson import benchmark_entries, skeleton
    from ..outputs.text import json_safe

    data = skeleton(config)
    data["benchmarks"] = benchmark_entries(summary)
    data["gpuperf"] = json_safe(summary.payload())
    bs.storage.save(data, name)
    return f"gpuperf: saved {len(data['benchmarks'])} result(s) in pytest-benchmark's storage"

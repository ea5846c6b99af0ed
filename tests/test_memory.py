"""A measurement's GPU memory (memory.py) is its step's own, whatever ran before it: the
arithmetic on a fake of torch.cuda's memory API (tests/fakes.py), the engine's CUDA path
through it, and the plugin's account of another test's memory. The real allocator's
figures are checked on a GPU in tests/test_gpu.py."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from pytest_gpuperf.core import results
from pytest_gpuperf.core.settings import resolve
from pytest_gpuperf.measure import memory
from pytest_gpuperf.measure.timing import measure

from .fakes import FakeCudaMemory, fake_torch, gpu, snapshot

MIB, GIB = 2**20, 2**30


def _history(cuda: FakeCudaMemory, name: str) -> None:
    """What an earlier test left: nothing, a 1 GiB tensor alive, 1 GiB in the cache, both."""
    if name in ("leaked", "both"):
        cuda.alloc(GIB)
    if name in ("cached", "both"):
        cuda.alloc(GIB)
        cuda.free(GIB)


class Trainer:
    """A step that keeps 64 MiB of state created by its first call (an optimizer's
    moments) and needs 300 MiB more while it runs."""

    def __init__(self, cuda: FakeCudaMemory) -> None:
        self.cuda, self.state = cuda, False

    def step(self) -> None:
        if not self.state:
            self.cuda.alloc(64 * MIB)
            self.state = True
        self.cuda.alloc(300 * MIB)
        self.cuda.free(300 * MIB)


def _measure(cuda: FakeCudaMemory, fn, monkeypatch: pytest.MonkeyPatch, **settings):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda))
    cfg = resolve(
        "cuda",
        dict(min_samples=3, max_samples=3, min_time=0.0, warmup_time=0.0, busy_check=False)
        | settings,
    )
    return measure(fn, work=1, unit="calls", cfg=cfg, backend="cuda")


HISTORIES = ["fresh", "leaked", "cached", "both"]


@pytest.mark.parametrize("history", HISTORIES)
def test_the_step_peak_is_the_same_whatever_an_earlier_test_left(history, monkeypatch):
    cuda = FakeCudaMemory()
    _history(cuda, history)
    r = _measure(cuda, Trainer(cuda).step, monkeypatch)
    assert (r.peak_allocated, r.peak_reserved) == (300 * MIB, 300 * MIB)
    leaked = GIB if history in ("leaked", "both") else 0
    assert r.resident_allocated == leaked + 64 * MIB  # beside it: the leak, the state kept


def test_state_made_by_the_first_call_is_resident_whether_or_not_it_ran_before(monkeypatch):
    """Measured on a fresh trainer or on one an earlier test stepped: the same peak (the
    window opens after the warm-up, which made the state either way)."""
    cuda = FakeCudaMemory()
    fresh = _measure(cuda, Trainer(cuda).step, monkeypatch)
    warm = Trainer(cuda)
    warm.step()
    again = _measure(cuda, warm.step, monkeypatch)
    assert fresh.peak_allocated == again.peak_allocated == 300 * MIB
    assert fresh.peak_reserved == again.peak_reserved == 300 * MIB


def test_the_window_opens_on_an_empty_cache_with_reset_peaks():
    cuda = FakeCudaMemory()
    cuda.alloc(GIB)
    cuda.free(GIB)  # cached: reserved 1 GiB, allocated 0
    mark = memory.open_window(fake_torch(cuda))
    assert mark == memory.Mark(allocated=0, reserved=0)
    assert cuda.calls[-3:] == ["synchronize", "empty_cache", "reset_peak_memory_stats"]
    cuda.alloc(10 * MIB)
    step = memory.close_window(fake_torch(cuda), mark, exclude=0)
    assert step == memory.StepMemory(peak_allocated=10 * MIB, peak_reserved=10 * MIB, resident=0)


def test_the_flush_buffer_is_not_counted_as_resident():
    cuda = FakeCudaMemory()
    cuda.alloc(120 * MIB)  # the L2 flush buffer, allocated before the window opens
    mark = memory.open_window(fake_torch(cuda))
    step = memory.close_window(fake_torch(cuda), mark, exclude=120 * MIB)
    assert step.resident == 0 and step.peak_allocated == 0


def test_the_cpu_path_reports_no_memory():
    cfg = resolve("cpu", dict(min_samples=3, max_samples=3, min_time=0.0, warmup_time=0.0))
    r = measure(lambda: None, work=1, unit="calls", cfg=cfg, backend="cpu")
    assert (r.peak_allocated, r.peak_reserved, r.resident_allocated) == (None, None, None)


def test_allocated_now_is_none_until_cuda_is_in_use(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert memory.allocated_now() is None
    idle = SimpleNamespace(is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=idle))
    assert memory.allocated_now() is None
    cuda = FakeCudaMemory()
    cuda.alloc(5)
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda))
    assert memory.allocated_now() == 5


# ------------------------------------------------------------- another test's memory


def _fixturedef(name: str) -> SimpleNamespace:
    return SimpleNamespace(argname=name)


def test_fixture_memory_tells_a_tests_own_fixtures_from_another_tests_memory():
    held = memory.FixtureMemory()
    model = _fixturedef("model")
    held.setup(model, before=0, after=10 * GIB)  # a module-scoped model
    held.setup(_fixturedef("shrinks"), before=10 * GIB, after=9 * GIB)  # frees: not held
    # a later test of the module, with 2 GiB that an earlier test left alive
    assert held.begin(["model", "gpu_benchmark"], 12 * GIB) == 2 * GIB
    # a test that does not request the model: the model is another test's memory too
    assert held.begin(["gpu_benchmark"], 12 * GIB) == 12 * GIB
    held.finished(model)
    assert held.own(["model"]) == 0
    assert held.begin(["model"], None) is None  # no CUDA


@pytest.mark.parametrize(
    ("at_setup", "own", "allocated", "expected"),
    [
        (2 * GIB, GIB, 5 * GIB, 2 * GIB),  # still there (the test allocated 2 GiB itself)
        (2 * GIB, GIB, 2 * GIB, GIB),  # the test freed 1 GiB of it
        (2 * GIB, GIB, GIB, 0),  # all freed
        (None, 0, GIB, None),
        (0, 0, None, None),
    ],
)
def test_foreign_memory_now_is_bounded_by_what_was_foreign_at_setup(
    at_setup, own, allocated, expected
):
    assert memory.foreign_now(at_setup, own, allocated) == expected


def _bench(foreign: int | None):
    from pytest_gpuperf.measure.bench import GpuBenchmark

    return GpuBenchmark("t.py::t", snapshot(gpu()), [], None, foreign=lambda: foreign)


def test_a_figure_found_beside_another_tests_memory_is_flagged_with_the_amount():
    r = _bench(3 * GIB).record("max_batch", 24, "samples")
    assert r.foreign_allocated == 3 * GIB and r.foreign_resident
    assert "foreign memory 3.0 GiB" in r.flags()
    assert any("3.0 GiB of another test's GPU memory" in n for n in r.notes)
    small = _bench(results.FOREIGN_FLAG_BYTES - 1).record("max_batch", 24, "samples")
    assert not small.foreign_resident and small.flags() == [] and small.notes == []
    assert _bench(None).record("max_batch", 24, "samples").foreign_allocated is None


CONFTEST = """
import pytest
from pytest_gpuperf.measure import memory

HELD = [0]  # the fake GPU's allocated bytes


def pytest_configure(config):
    config._saved_allocated_now = memory.allocated_now
    memory.allocated_now = lambda: HELD[0]


def pytest_unconfigure(config):
    memory.allocated_now = config._saved_allocated_now
"""

TESTS = """
import pytest
from conftest import HELD
from pytest_gpuperf.plugin.fixtures import FOREIGN_KEY

GIB = 2**30


@pytest.fixture(scope="module")
def model():
    HELD[0] += 10 * GIB
    yield
    HELD[0] -= 10 * GIB


def test_1_builds_the_model(gpu_benchmark, model, request):
    assert request.node.stash[FOREIGN_KEY] == 0


def test_2_leaks():
    HELD[0] += 2 * GIB


def test_3_reuses_the_model(gpu_benchmark, model, request):
    assert request.node.stash[FOREIGN_KEY] == 2 * GIB  # the leak, not the model
    assert gpu_benchmark._foreign() == 2 * GIB


def test_4_without_the_model(gpu_benchmark, request):
    assert request.node.stash[FOREIGN_KEY] == 12 * GIB
    HELD[0] -= 2 * GIB  # frees the leak
    assert gpu_benchmark._foreign() == 10 * GIB
"""


def test_the_plugin_counts_another_tests_memory_at_setup(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_m=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=4)


def test_the_cached_gpu_memory_is_given_back_before_a_fresh_process(monkeypatch):
    """A fresh process that ran out of memory turned a regression into "not confirmed":
    the parent's allocator held the blocks it had cached."""
    cuda = FakeCudaMemory()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda))
    cuda.cached = 1 << 30  # a freed block the allocator kept
    assert memory.release_cached() is True
    assert cuda.cached == 0 and cuda.calls[-1] == "empty_cache"
    monkeypatch.setitem(sys.modules, "torch", None)
    assert memory.release_cached() is False


def test_the_gated_peak_is_the_tensors_requested_bytes_when_torch_keeps_them(monkeypatch):
    """On the H200 a bf16 MLP block's max_memory_allocated peak read 129 MiB after other
    tests and 130 MiB alone (a cached block handed out unsplit); torch's requested bytes are
    the tensors' own sizes, the same in any order."""
    cuda = FakeCudaMemory()
    stats = {"requested_bytes.all.current": 5 * MIB, "requested_bytes.all.peak": 5 * MIB}
    cuda.memory_stats = lambda: dict(stats)  # type: ignore[attr-defined]
    torch = fake_torch(cuda)
    mark = memory.open_window(torch)
    stats["requested_bytes.all.peak"] = 5 * MIB + 123_456
    cuda.max_allocated = cuda.allocated + 2 * MIB  # the allocator's block: larger
    step = memory.close_window(torch, mark)
    assert step.peak_allocated == 123_456

"""The paired stage's round processes warm the GPU before a call that may follow an idle
card (paired/worker): when they do, with a clock the test controls, and that nothing of
it runs where it was not asked (a CPU run's rounds). tests/test_gpu.py runs the warm-up
itself on a GPU."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

from pytest_gpuperf.paired import worker as roundworker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def worker(tmp_path, monkeypatch):
    clock, warmed = Clock(), []

    def fake_warm(seconds: float) -> float:
        warmed.append((clock.now, seconds))
        clock.now += seconds
        return seconds

    monkeypatch.setattr(roundworker.time, "monotonic", clock)
    monkeypatch.setattr(roundworker, "warm", fake_warm)
    r, w = os.pipe()
    made = roundworker.Worker(r, w, tmp_path, None, warm_s=2.0)
    yield made, clock, warmed
    made.reader.close()
    made.writer.close()


def call(worker: roundworker.Worker, clock: Clock, takes: float) -> None:
    """One test's call phase through the worker's hook wrapper, taking `takes` seconds."""
    gen = worker.pytest_runtest_call(item=None)
    next(gen)
    clock.now += takes
    with pytest.raises(StopIteration):
        gen.send(None)


def test_the_first_call_of_a_process_and_a_call_after_a_gap_warm_and_others_do_not(worker):
    w, clock, warmed = worker
    w.call_ended, w.warmed = None, 0.0  # run_round's reset: round 0
    call(w, clock, 1.5)  # the process's first test: its GPU idled while the process started
    assert warmed == [(100.0, 2.0)] and w.warmed == 2.0
    clock.now += 0.3  # a short teardown and setup: the card stays loaded
    call(w, clock, 1.5)
    assert len(warmed) == 1
    clock.now += roundworker.IDLE_S  # a model built in the next test's setup
    start = clock.now
    call(w, clock, 1.5)
    assert warmed[1:] == [(start, 2.0)] and w.warmed == 4.0


def test_a_later_rounds_first_call_does_not_warm_the_other_builds_round_loaded_the_card(worker):
    w, clock, warmed = worker
    call(w, clock, 1.0)  # round 0's only test, warmed
    w.call_ended, w.warmed = None, 0.0  # run_round's reset: round 1, after the other side's
    clock.now += 60.0  # the other build's round: this process waited, the card did not
    call(w, clock, 1.0)
    assert len(warmed) == 1 and w.warmed == 0.0


def test_nothing_warms_where_no_warm_up_was_asked(worker):
    w, clock, warmed = worker
    w.warm_s = 0.0
    call(w, clock, 1.0)
    clock.now += 10.0
    call(w, clock, 1.0)
    assert warmed == [] and not w.should_warm(clock.now + 100)


def test_a_failing_call_still_marks_when_it_ended(worker):
    w, clock, _ = worker
    gen = w.pytest_runtest_call(item=None)
    next(gen)
    clock.now += 3.0
    with pytest.raises(RuntimeError):
        gen.throw(RuntimeError("the test failed"))
    assert w.call_ended == clock.now


@pytest.mark.parametrize("raw", ["", "0", "-1", "soon", "nan", "inf"])
def test_a_warm_up_not_asked_for_is_zero_seconds(raw):
    assert roundworker.warm_asked(raw) == 0.0


def test_a_warm_up_asked_for_is_its_seconds():
    assert roundworker.warm_asked("2") == 2.0 and roundworker.warm_asked("0.5") == 0.5


def test_zero_seconds_of_warm_up_imports_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of it would raise
    assert roundworker.warm(0.0) == 0.0


def test_a_warm_up_without_cuda_takes_no_time():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA here: tests/test_gpu.py runs the warm-up")
    assert roundworker.warm(1.0) == 0.0


def test_only_a_cuda_runs_round_processes_are_asked_to_warm(tmp_path):
    from pytest_gpuperf.paired.looks import WARM_S, _env

    assert _env(None, tmp_path / "s.json", cuda=True)[roundworker.WARM] == f"{WARM_S:g}"
    assert roundworker.WARM not in _env(None, tmp_path / "s.json")


def test_the_stage_line_says_how_long_the_gpu_was_warmed():
    from pytest_gpuperf.paired.looks import rounds_said
    from pytest_gpuperf.paired.rounds import Measured

    got = Measured(pair=[0, 0, 1, 1], asked=4)
    got.timing = SimpleNamespace(round_cost=10.0, first_s=20.0, start_s=1.5)
    assert "warmed" not in rounds_said(got, 180.0)
    got.warmed = 8.0
    assert "; the GPU warmed 8 s before calls after idling)" in rounds_said(got, 180.0)

"""On a busy host the CPU default still sees (issue 64, point 2): work on the calling thread
is judged on that thread's CPU time, which other work does not enter; work that waits keeps
its wall time and is judged by its samples' run-queue waits, never by the load alone; a
baseline timed by the wall clock is never judged against thread time silently. The clocks
and the host are virtual (tests/vclock.py, hostload.read_host replaced): no real load."""

import json
import textwrap

from pytest_gpuperf.core.figures import THREAD_TIMER
from pytest_gpuperf.measure.hostload import choose, on_thread, run_wait

from . import vclock
from .gateproject import FAST, saved

LOADED_CONFTEST = vclock.CONFTEST + textwrap.dedent(
    """
    import itertools
    import os

    import pytest_gpuperf.measure.hostload as hostload


    @pytest.fixture(autouse=True)
    def loaded_host(virtual_clock, monkeypatch):
        load = float(os.environ.get("LOAD", "0"))  # on 2 cores, no steal
        if load:
            monkeypatch.setattr(hostload, "read_host", lambda: hostload.HostSample(load, 0, 0, 2))
        every = int(os.environ.get("PREEMPT", "0"))  # of each `every` calls, all but one wait
        if every:
            calls = itertools.count()
            work = virtual_clock.spin

            def preempted(seconds):
                work(seconds)
                if next(calls) % every:
                    virtual_clock.preempt(0.02)  # another process held the CPU for 20 ms

            monkeypatch.setattr(virtual_clock, "spin", preempted)
    """
)

SLEEP = """
import os

from vclock import sleep

def test_sleep(gpu_benchmark):
    slow = float(os.environ.get("SLOW", "0"))
    gpu_benchmark(lambda: sleep(0.004 * (1 + slow)), work=1, unit="calls")
"""


def _loaded(project, monkeypatch, load, preempt=0):
    project.makeconftest(LOADED_CONFTEST)
    monkeypatch.setenv("LOAD", str(load))
    monkeypatch.setenv("PREEMPT", str(preempt))


def test_cpu_bound_work_under_preemption_is_judged_on_its_threads_cpu_time(project, monkeypatch):
    # 11 of 12 calls wait 20 ms for the CPU at load 6 on 2 cores: by the wall clock too few
    # samples had the CPU (busy-host, inconclusive, the save refused); the thread's CPU time
    # of each call is what the work costs, whatever else ran
    saved(project)  # an idle host
    _loaded(project, monkeypatch, 6.0, preempt=12)
    save = project.runpytest(*FAST, "--gpuperf-baseline=save", "--gpuperf-json=save.json")
    save.assert_outcomes(passed=2)
    assert save.ret == 0 and "NOT SAVED" not in save.stdout.str()
    for entry in json.loads((project.path / "baselines" / "cpu.json").read_text())["entries"].values():
        assert len(entry["metrics"]["throughput"]["history"]) == 3
        assert entry["metrics"]["throughput"]["timer"] == THREAD_TIMER
    spin = json.loads((project.path / "save.json").read_text())["results"][0]
    assert spin["timer"] == THREAD_TIMER and spin["host"]["busy"] is False
    assert spin["host"]["preempted"] > spin["host"]["samples"] / 2  # the wall clock's view
    assert spin["wall_time"]["median"] > 5 * spin["time"]["median"]  # kept, as information

    monkeypatch.setenv("SLOW", "0.5")  # 50% slower, on the same busy host
    result = project.runpytest(*FAST, "--gpuperf-json=run.json", "-v")
    result.assert_outcomes(passed=2, failed=1)  # the gate: regressed
    result.stdout.fnmatch_lines(["REGRESSED  test_b.py::test_spin *throughput *-33.3?%*"])
    assert "busy-host" not in result.stdout.str()
    said = [line for line in result.outlines if "thread's CPU time" in line]
    assert len(said) == 1 and said[0].startswith("gpuperf: load average up to 6 on 2 cores: ")


def test_work_that_waits_saves_at_load_above_the_cores_and_twice_its_wait_fails(pytester, monkeypatch):
    # the sleep benchmark at load 2.4 on 2 cores: its samples waited for no CPU (the
    # run-queue wait says so), so they are precise whatever the load average; it is timed
    # by the wall clock (its thread's CPU time is not its cost)
    vclock.add_to(pytester)
    pytester.makepyfile(test_s=SLEEP)
    _loaded(pytester, monkeypatch, 2.4)
    for n in (1, 2, 3):
        r = pytester.runpytest(*FAST, "--gpuperf-baseline=save", "--gpuperf-json=save.json")
        r.assert_outcomes(passed=1)
        assert r.ret == 0 and "NOT SAVED" not in r.stdout.str(), r.stdout.str()
        entry = json.loads((pytester.path / "baselines" / "cpu.json").read_text())["entries"]
        assert len(entry["test_s.py::test_sleep"]["metrics"]["throughput"]["history"]) == n
    res = json.loads((pytester.path / "save.json").read_text())["results"][0]
    assert res["timer"] == "perf_counter" and res["host"]["busy"] is False
    assert "timer" not in entry["test_s.py::test_sleep"]["metrics"]["throughput"]
    monkeypatch.setenv("SLOW", "1")  # twice the sleep
    result = pytester.runpytest(*FAST, "-v")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["REGRESSED  test_s.py::test_sleep *throughput *-50.00%*"])


def test_a_wall_time_baseline_is_incomparable_with_thread_time_and_a_save_restarts_it(
    project, monkeypatch
):
    # sessions saved before thread time (the work spread over threads reads the same: wall
    # time), then the same work on the calling thread: never judged across the two timers
    monkeypatch.setenv("VCLOCK_ON_THREAD", "0.5")
    before = saved(project)["entries"]["test_b.py::test_spin"]["metrics"]["throughput"]
    assert "timer" not in before and len(before["history"]) == 2
    monkeypatch.setenv("VCLOCK_ON_THREAD", "1")
    result = project.runpytest(*FAST, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "INCOMPARABLE  test_b.py::test_spin *throughput*",
    ])  # fmt: skip
    out = result.stdout.str()
    assert "timed differently: the baseline by wall time, now by the calling thread's CPU time" in out
    after = saved(project, times=1)["entries"]["test_b.py::test_spin"]["metrics"]["throughput"]
    assert after["timer"] == THREAD_TIMER
    assert after["history"][:2] == before["history"]  # nothing lost
    restart = after["history"][2]["restart"]
    assert restart["reason"] == (
        "timed by the calling thread's CPU time from here on; the sessions before were timed "
        "by wall time"
    )
    again = project.runpytest(*FAST, "-v")  # judged against the thread-time session only
    assert "INCOMPARABLE" not in again.stdout.str() and "timed differently" not in again.stdout.str()


def test_the_rule_that_picks_thread_time_reads_the_samples_only():
    walls, cpus = [1.0, 4.0, 1.0, 5.0], [1.0, 1.0, 1.0, 1.0]
    # on the calling thread, the rest of each sample waiting for a CPU: thread time
    assert on_thread(walls, cpus, cpus, [0.0, 3.0, 0.0, 4.0])
    threads = [1.0, 1.1, 1.0, 1.1]  # a preempted sample refills its caches
    kept, found = choose(walls, cpus, threads, [0.0, 3.0, 0.0, 4.0], 2)
    assert kept == [1.0, 1.0] and found == {"samples": 4, "preempted": 2, "enough": True, "timer": THREAD_TIMER}
    kept, found = choose(walls, cpus, threads, [0.0, 3.0, 0.0, 4.0], 3)  # too few calm: all
    assert kept == threads and found["enough"] and found["timer"] == THREAD_TIMER
    # half of it on other threads: not the thread's time
    assert not on_thread(walls, cpus, [0.5] * 4, [0.0, 3.0, 0.0, 4.0])
    # waiting for something else than a CPU (a sleep): wall time, the samples that waited
    # for a CPU left out
    idle = [0.001] * 4
    assert not on_thread(walls, idle, idle, [0.0, 0.0, 0.0, 0.0])
    kept, found = choose([1.0, 1.0, 1.5, 1.0], idle, idle, [0.0, 0.0, 0.5, 0.0], 2)
    assert kept == [1.0, 1.0, 1.0] and found == {"samples": 4, "preempted": 1, "enough": True}
    # a kernel that does not say: the best sample's share decides, as before
    assert on_thread(walls, cpus, cpus, [None] * 4)
    assert not on_thread(walls, idle, idle, [None] * 4)


def test_run_wait_reads_schedstat_and_says_none_where_there_is_none(tmp_path):
    stat = tmp_path / "schedstat"
    stat.write_text("63160 2500000000 2\n")
    assert run_wait(str(stat)) == 2.5
    assert run_wait(str(tmp_path / "missing")) is None
    stat.write_text("garbage\n")
    assert run_wait(str(stat)) is None

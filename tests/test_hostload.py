"""A busy host flags its results (hostload.py), and CPU benchmarks under pytest-xdist are
warned about. The host is read through hostload.read_host, replaced here: no real load."""

import json
import subprocess
import sys
import textwrap

import pytest

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.judging.busy import busy_verdicts
from pytest_gpuperf.measure.hostload import (
    HostSample,
    assess,
    open_run_queue,
    read_host,
    undisturbed,
    xdist_cpu_warning,
)

from . import vclock
from .gateproject import BENCH, FAST, saved


def test_read_host_parses_loadavg_and_the_steal_counter(tmp_path):
    (tmp_path / "loadavg").write_text("3.50 2.10 1.00 3/412 9999\n")
    # user nice system idle iowait irq softirq steal guest guest_nice
    (tmp_path / "stat").write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n")
    s = read_host(tmp_path)
    assert s.load1 == 3.5 and s.steal == 40 and s.total == 1000 and s.cores >= 1
    assert read_host(tmp_path / "missing") is None
    (tmp_path / "stat").write_text("intr 1 2 3\n")
    assert read_host(tmp_path) is None


@pytest.mark.parametrize(
    ("before", "after", "busy"),
    [
        (HostSample(0.5, 0, 1000, 2), HostSample(0.7, 10, 2000, 2), False),  # 1% steal
        (HostSample(0.5, 0, 1000, 2), HostSample(2.5, 0, 2000, 2), True),  # load 2.5 > 2 cores
        (HostSample(3.0, 0, 1000, 4), HostSample(1.0, 0, 2000, 4), False),  # at most the cores
        (HostSample(0.5, 0, 1000, 8), HostSample(0.5, 100, 2000, 8), True),  # 10% stolen
        (HostSample(0.5, 5, 1000, 8), HostSample(0.5, 5, 1000, 8), False),  # no time passed
    ],
)
def test_a_host_is_busy_when_loaded_beyond_its_cores_or_robbed(before, after, busy):
    host = assess(before, after)
    assert host["busy"] is busy
    assert host["load1"] == max(before.load1, after.load1) and host["cores"] == after.cores
    assert assess(None, after) is None and assess(before, None) is None


def _verdict(status):
    return {"throughput": from_json({"status": status, "reason": "worse by 40%"})}


def test_on_the_cpu_a_busy_host_makes_a_change_inconclusive():
    busy = {"load1": 5.0, "cores": 2, "steal": 0.0, "busy": True}
    cpu = Result("t.py::a", None, "calls", 1, backend="cpu", host=busy, verdicts=_verdict("regressed"))
    better = Result("t.py::b", None, "calls", 1, backend="cpu", host=busy, verdicts=_verdict("improved"))
    gpu = Result("t.py::c", None, "calls", 1, backend="cuda", host=busy, verdicts=_verdict("regressed"))
    calm = Result("t.py::d", None, "calls", 1, backend="cpu", verdicts=_verdict("regressed"))
    # a figure derived from the busy measurement (samples/s beside tokens/s) is as suspect
    derived = Result("t.py::a", "samples_per_s", "samples/s", 1, kind="recorded", backend="cpu",
                     verdicts={"value": from_json({"status": "regressed",
                                                    "reason": "worse by 40%"})})  # fmt: skip
    busy_verdicts([cpu, better, gpu, calm, derived])
    assert derived.verdicts["value"].status == "inconclusive"
    assert cpu.verdicts["throughput"].status == "inconclusive"
    assert "busy host (load average 5 on 2 cores, 0.0% CPU steal)" in cpu.verdicts["throughput"].reason
    assert better.verdicts["throughput"].status == "inconclusive"
    assert cpu.verdicts["throughput"].advice.startswith("run it again on an idle machine (measured on a busy host")
    assert gpu.verdicts["throughput"].advice is None and calm.verdicts["throughput"].advice is None
    assert gpu.verdicts["throughput"].status == "regressed"  # a GPU result's verdict stands
    assert calm.verdicts["throughput"].status == "regressed"
    assert cpu.flags() == ["busy-host"] and calm.flags() == []


BUSY_CONFTEST = vclock.CONFTEST + textwrap.dedent(
    """
    import itertools
    import os

    import pytest_gpuperf.measure.hostload as hostload


    @pytest.fixture(autouse=True)
    def busy_host(virtual_clock, monkeypatch):
        if os.environ.get("BUSY"):  # 6 runnable on 2 cores, 3% steal
            samples = iter([hostload.HostSample(6.0, 0, 0, 2), hostload.HostSample(6.0, 30, 1000, 2)] * 99)
            monkeypatch.setattr(hostload, "read_host", lambda: next(samples))
        every = int(os.environ.get("PREEMPT", "0"))  # of each `every` calls, all but one wait
        until = int(os.environ.get("PREEMPT_UNTIL", "0"))  # only the first calls, if set
        if every:
            calls = itertools.count()
            work = virtual_clock.spin

            def preempted(seconds):
                work(seconds)
                i = next(calls)
                if i % every and (not until or i < until):
                    virtual_clock.preempt(0.02)  # another process held the CPU for 20 ms

            monkeypatch.setattr(virtual_clock, "spin", preempted)
    """
)


def _busy_run(project, monkeypatch, preempt, *args, run_queue=True):
    saved(project)  # an idle host
    project.makeconftest(BUSY_CONFTEST)
    if not run_queue:  # a kernel that does not say a thread's run-queue wait (no schedstat)
        monkeypatch.setenv("VCLOCK_NO_RUNQUEUE", "1")
    monkeypatch.setenv("BUSY", "1")
    monkeypatch.setenv("PREEMPT", str(preempt))
    monkeypatch.setenv("SLOW", "0.5")  # 50% slower, on a busy host
    return project.runpytest(*FAST, "--gpuperf-json=run.json", "-v", *args)


def test_on_a_loaded_host_the_undisturbed_samples_decide_and_the_verdict_stands(project, monkeypatch):
    # every other call waits 20 ms for the CPU: half the samples are preempted, and the
    # other half, enough of them, are what the work costs when it has the CPU
    result = _busy_run(project, monkeypatch, 2)
    result.assert_outcomes(passed=2, failed=1)  # the gate: regressed, load or not
    result.stdout.fnmatch_lines(["REGRESSED  test_b.py::test_spin *throughput *-33.33%*"])
    assert "busy-host" not in result.stdout.str()
    run = json.loads((project.path / "run.json").read_text())
    spin = run["results"][0]
    assert spin["preemption"]["enough"] and spin["preemption"]["preempted"] > 0
    assert spin["host"]["busy"] is False and spin["host"]["load1"] == 6.0
    # said once for the run: how many samples the load cost
    lines = [line for line in result.outlines if "undisturbed samples" in line]
    assert len(lines) == 1 and lines[0].startswith("gpuperf: load average up to 6 on 2 cores: ")


def test_a_busy_host_that_preempted_most_samples_is_flagged_and_decides_no_verdict(project, monkeypatch):
    result = _busy_run(project, monkeypatch, 40)  # 39 of 40 calls wait: too few undisturbed
    result.assert_outcomes(passed=2)  # no gate failure: the load may explain it
    result.stdout.fnmatch_lines(["INCONCLUSIVE  test_b.py::test_spin *throughput *busy-host, measured on a busy host*"])
    assert "PERFORMANCE REGRESSION" not in result.stdout.str()
    run = json.loads((project.path / "run.json").read_text())
    host = run["results"][0]["host"]
    # too few samples had the CPU (none at all: then the work cannot be told CPU-bound)
    assert host["busy"] is True and host.get("samples", 0) - host.get("preempted", 0) < 5
    verdict = run["results"][0]["verdicts"]["throughput"]
    assert verdict["status"] == "inconclusive" and "busy host (load average 6" in verdict["reason"]
    # the busy host is said once per run, never once per test (both tests were busy)
    # (the verdict table's rows, which start with their status, give each row's reason)
    said = [line for line in result.outlines if "busy host" in line and "busy-host" in line
            and not line.split(" ")[0].isupper()]  # fmt: skip
    assert len(said) == 1 and "2 CPU benchmark(s) measured on a busy host" in said[0]
    assert not any(line.endswith(": measured on a busy host: load average 6 on 2 cores, 3.0% CPU steal")
                   for line in result.outlines)  # the note each test once had  # fmt: skip
    # `gpuperf compare` judges the saved run as pytest did: no regression
    cli = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", "run.json"],
        capture_output=True, text=True, cwd=project.path,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "INCONCLUSIVE" in cli.stdout and "REGRESSED" not in cli.stdout


def test_sampling_goes_on_past_a_precise_but_disturbed_start_until_enough_samples_had_the_cpu(
    project, monkeypatch
):
    # of the first samples 7 in 8 wait 20 ms for the CPU, then the load goes: their median
    # soon meets the stopping rule, but too few had the CPU; sampling goes on (within
    # max_time) until enough did, and the verdict stands (it stopped there before)
    monkeypatch.setenv("PREEMPT_UNTIL", "60")  # 7 of 8 of the first 60 calls wait
    result = _busy_run(project, monkeypatch, 8)
    result.stdout.fnmatch_lines(["REGRESSED  test_b.py::test_spin *throughput *-33.33%*"])
    spin = json.loads((project.path / "run.json").read_text())["results"][0]
    assert spin["preemption"]["enough"] and spin["preemption"]["preempted"] >= 5, spin["preemption"]


def test_a_save_too_disturbed_to_be_a_baseline_is_refused_and_said(project, monkeypatch):
    result = _busy_run(project, monkeypatch, 40, "--gpuperf-baseline=save")
    result.assert_outcomes(passed=2, failed=1)  # the refusal: gpuperf::baseline-save
    assert result.ret == 1  # the save asked for did not happen: the run fails, as gpu-shared
    line = next(x for x in result.outlines if x.startswith("baseline: "))
    assert "NOT SAVED: 2 test(s) test_b.py::test_other: too disturbed to be a baseline: " in line
    saved_file = json.loads((project.path / "baselines" / "cpu.json").read_text())
    for entry in saved_file["entries"].values():  # the idle sessions only: 2 of them
        assert all(len(m["history"]) == 2 for m in entry["metrics"].values())


SLEEPER = """
import os

from vclock import preempt, sleep, spin

CALLS = iter(range(10**9))


def test_wait(gpu_benchmark):
    slow = float(os.environ.get("SLOW", "0"))

    def call():
        spin(0.0001)
        sleep(0.004 * (1 + slow))  # waits on something else: not CPU-bound
        if os.environ.get("BUSY") and next(CALLS) % 3:
            preempt(0.004)  # 2 of 3 wake-ups wait a time slice for the CPU

    gpu_benchmark(call, work=1, unit="calls")
"""


@pytest.mark.parametrize("run_queue", [True, False])
def test_work_that_waits_saves_and_is_judged_on_a_busy_host_where_the_run_queue_says(
    pytester, monkeypatch, run_queue
):
    # a sleep-bound benchmark (its samples precise) at load 6 on 2 cores: its saves are
    # refused by the load alone where nothing tells a preemption (no schedstat); with the
    # run-queue wait, 3 saves are taken and twice the sleep fails
    monkeypatch.delenv("SLOW", raising=False)
    vclock.add_to(pytester)
    pytester.makeconftest(BUSY_CONFTEST)
    pytester.makepyfile(test_w=SLEEPER)
    if not run_queue:
        monkeypatch.setenv("VCLOCK_NO_RUNQUEUE", "1")
    monkeypatch.setenv("BUSY", "1")
    saves = [pytester.runpytest(*FAST, "--gpuperf-baseline=save") for _ in range(3)]
    if not run_queue:
        assert all(r.ret == 1 for r in saves)
        assert "too disturbed to be a baseline: measured on a busy host" in saves[0].stdout.str()
        return
    assert [r.ret for r in saves] == [0, 0, 0], saves[-1].stdout.str()
    entry = json.loads((pytester.path / "baselines" / "cpu.json").read_text())["entries"]
    history = entry["test_w.py::test_wait"]["metrics"]["throughput"]["history"]
    assert len(history) == 3
    same = pytester.runpytest(*FAST)
    assert same.ret == 0, same.stdout.str()
    monkeypatch.setenv("SLOW", "1")
    slow = pytester.runpytest(*FAST)
    assert slow.ret == 1
    slow.stdout.fnmatch_lines(["REGRESSED  test_w.py::test_wait *throughput *"])


@pytest.mark.slow
def test_cpu_benchmarks_under_xdist_are_warned_about_once(pytester):
    vclock.add_to(pytester)
    pytester.makepyfile(test_b=BENCH)
    result = pytester.runpytest(*FAST, "-n", "2")
    result.assert_outcomes(passed=2)
    warning = [line for line in result.outlines if "ran under pytest-xdist" in line]
    assert warning == [
        "gpuperf: WARNING: 2 CPU benchmark(s) ran under pytest-xdist with 2 workers, which "
        "share the CPU and time each other; run them without -n for figures worth comparing"
    ]
    alone = pytester.runpytest(*FAST, "-n", "1")
    alone.assert_outcomes(passed=2)
    assert "ran under pytest-xdist" not in alone.stdout.str()
    # a save refuses them: each timed the other worker's benchmark as much as its own; a
    # figure the test recorded is saved (key by figure, not by test)
    pytester.makepyfile(test_r="""
        from vclock import spin

        def test_rec(gpu_benchmark):
            gpu_benchmark.record("max_batch", 24, "samples")
            gpu_benchmark(lambda: spin(0.001), work=1, unit="calls")
        """)  # fmt: skip
    cpu_json = pytester.path / "baselines" / "cpu.json"
    for argv in (["-n", "2"], ["--tx", "2*popen", "--dist", "load"]):
        cpu_json.unlink(missing_ok=True)
        saved = pytester.runpytest(*FAST, *argv, "--gpuperf-baseline=save", "--gpuperf-json=x.json")
        saved.assert_outcomes(passed=3, failed=1)  # the refusal: gpuperf::baseline-save
        assert saved.ret == 1  # the save asked for did not happen
        line = next(x for x in saved.outlines if x.startswith("baseline: "))
        assert (
            "NOT SAVED: 3 test(s) test_b.py::test_other: too disturbed to be a baseline: "
            "measured on the CPU beside 1 other pytest-xdist worker(s); save CPU baselines "
            "without -n" in line
        ), line
        assert set(json.loads(cpu_json.read_text())["entries"]) == {"test_r.py::test_rec::max_batch"}
        # the warning counts the workers started, as the refusal does (--tx without -n too)
        assert "3 CPU benchmark(s) ran under pytest-xdist with 2 workers" in saved.stdout.str()
        # and the run's file says so: `gpuperf baseline accept` refuses its CPU figures too
        assert json.loads((pytester.path / "x.json").read_text())["xdist_workers"] == 2
    cpu_json.unlink()
    one = pytester.runpytest(*FAST, "-n", "2", "--maxprocesses", "1", "--gpuperf-baseline=save")
    assert one.ret == 0 and len(json.loads(cpu_json.read_text())["entries"]) == 4
    assert "ran under pytest-xdist" not in one.stdout.str()  # one worker started: no warning


def test_the_xdist_warning_is_for_cpu_measurements_only():
    cpu = Result("t.py::a", None, "calls", 1, backend="cpu")
    gpu = Result("t.py::b", None, "calls", 1, backend="cuda")
    rec = Result("t.py::c", "x", "ms", 1, backend="cpu", kind="recorded")
    assert xdist_cpu_warning(4, [gpu, rec]) is None
    assert xdist_cpu_warning(None, [cpu]) is None and xdist_cpu_warning(1, [cpu]) is None
    assert "1 CPU benchmark(s) ran under pytest-xdist with 4 workers" in xdist_cpu_warning(4, [cpu, gpu])


def test_under_xdist_a_cpu_measurement_is_too_disturbed_to_save_and_a_gpu_one_is_not():
    from pytest_gpuperf.measure.hostload import too_disturbed

    cpu = Result("t.py::a", None, "calls", 1, backend="cpu")
    gpu = Result("t.py::b", None, "calls", 1, backend="cuda")
    rec = Result("t.py::c", "x", "ms", 1, backend="cpu", kind="recorded")
    assert "beside 3 other pytest-xdist worker(s)" in too_disturbed(cpu, 4)
    assert too_disturbed(cpu, 1) is None and too_disturbed(cpu) is None
    assert too_disturbed(gpu, 4) is None and too_disturbed(rec, 4) is None


def test_undisturbed_keeps_the_samples_that_had_the_cpu_when_enough_remain():
    walls = [1.0, 1.0, 5.0, 1.0, 6.0, 1.0]
    cpus = [1.0, 0.98, 1.0, 0.99, 1.0, 1.0]  # samples 2 and 4 waited 4-5 s for the CPU
    kept, found = undisturbed(walls, cpus, need=4)
    assert kept == [1.0] * 4 and found == {"samples": 6, "preempted": 2, "enough": True}
    kept, found = undisturbed(walls, cpus, need=5)  # too few: all of them, and said so
    assert kept == walls and found == {"samples": 6, "preempted": 2, "enough": False}
    # two threads busy at their best: a sample at 1.2 CPU seconds per second lost a thread
    kept, found = undisturbed([1.0, 1.0, 1.0], [2.0, 1.95, 1.2], need=1)
    assert kept == [1.0, 1.0] and found["preempted"] == 1
    # work that waits on something else (a sleep, a device): nothing to judge by
    assert undisturbed([1.0, 2.0], [0.1, 0.05], need=1) == ([1.0, 2.0], None)
    assert undisturbed([1.0], [], need=1) == ([1.0], None)


def test_a_few_samples_with_more_threads_than_the_work_set_no_bar_the_rest_cannot_reach():
    # one-thread work whose idle thread team spun through the first samples (CPU share 2)
    walls = [1.0] * 20
    cpus = [2.0, 1.9] + [0.99] * 17 + [0.4]  # the last one waited for the CPU
    kept, found = undisturbed(walls, cpus, need=5)
    assert found == {"samples": 20, "preempted": 1, "enough": True} and len(kept) == 19


def test_a_process_that_never_had_one_core_to_itself_has_no_undisturbed_sample():
    # every sample preempted, the best at 0.6 of a core: none of them is the work's cost
    kept, found = undisturbed([1.0, 1.0, 1.0], [0.6, 0.55, 0.2], need=1)
    assert kept == [1.0, 1.0, 1.0] and found == {"samples": 3, "preempted": 3, "enough": False}


def test_a_busy_host_cpu_result_never_enters_a_baseline_a_gpu_one_does():
    from pytest_gpuperf.measure.hostload import too_disturbed

    loaded = {"load1": 9.0, "cores": 2, "steal": 0.0, "busy": True}
    unchecked = Result("t.py::a", None, "calls", 1, backend="cpu", host=loaded)
    checked = Result("t.py::b", None, "calls", 1, backend="cpu", host={**loaded, "samples": 30, "preempted": 29})
    rescued = Result("t.py::c", None, "calls", 1, backend="cpu",
                     host={**loaded, "busy": False, "samples": 30, "preempted": 20})  # fmt: skip
    gpu = Result("t.py::d", None, "calls", 1, backend="cuda", host=loaded)
    assert "measured on a busy host (load average 9 on 2 cores" in too_disturbed(unchecked)
    assert "29 of 30 samples preempted, 1 undisturbed" in too_disturbed(checked)
    assert too_disturbed(rescued) is None and too_disturbed(gpu) is None


THREADS = """
import pytest
import torch

def _measure(gpu_benchmark):
    torch.set_num_threads(2)
    seen = set()
    gpu_benchmark(lambda: seen.add(torch.get_num_threads()), work=1, unit="calls")
    return seen, torch.get_num_threads()

def test_default(gpu_benchmark):
    seen, after = _measure(gpu_benchmark)
    assert seen == {1} and after == 2, (seen, after)

@pytest.mark.gpuperf(cpu_threads=0)
def test_torch_own(gpu_benchmark):
    seen, after = _measure(gpu_benchmark)
    assert seen == {2} and after == 2, (seen, after)
"""


def test_a_cpu_benchmark_runs_on_one_torch_thread_and_the_count_is_restored(pytester):
    # a team of threads on a loaded host stalls in every sample (the README's matmul beside
    # three busy loops measured 100x slower on two threads, and no sample ran whole); one
    # thread is preempted whole samples at a time, which are left out
    pytester.makepyfile(test_threads=THREADS)
    result = pytester.runpytest_subprocess(*FAST, "--gpuperf-baseline=off")
    result.assert_outcomes(passed=2)


def test_a_measurement_too_disturbed_to_ever_be_enough_ends_at_its_max_time(project, monkeypatch):
    """Found in review: work that waits part of every call (a sleep: 0.7 of a core in each
    sample here) is precise, yet no sample counts as undisturbed, and "precise, but
    disturbed" went on past max_time, one sample a chunk, until max_samples (100,000): a
    benchmark that never ended. It ends within DISTURBED_GRACE times its max_time, flagged
    busy-host, undecided. (Without the run-queue wait: with it, the sleep is part of the
    work's time and every sample counts.)"""
    saved(project)
    monkeypatch.setenv("VCLOCK_NO_RUNQUEUE", "1")
    project.makeconftest(BUSY_CONFTEST + textwrap.dedent(
        """
        @pytest.fixture(autouse=True)
        def waits(virtual_clock, monkeypatch):
            work = virtual_clock.spin

            def part_asleep(seconds):
                work(seconds)
                virtual_clock.preempt(0.4 * seconds)  # off the CPU 0.4 of the work's time

            monkeypatch.setattr(virtual_clock, "spin", part_asleep)
        """))  # fmt: skip
    monkeypatch.setenv("BUSY", "1")
    result = project.runpytest_subprocess(*FAST, "--gpuperf-json=run.json", "-k", "spin",
                                          timeout=60)  # before: never ended
    result.assert_outcomes(passed=1)
    spin = json.loads((project.path / "run.json").read_text())["results"][0]
    max_time = float(next(a for a in FAST if a.startswith("--gpuperf-max-time=")).split("=")[1])
    from pytest_gpuperf.measure.timing import DISTURBED_GRACE

    assert spin["measure_s"] <= 1.5 * DISTURBED_GRACE * max_time, spin["measure_s"]
    assert spin["host"]["busy"] is True


def test_with_run_queue_waits_a_sample_that_waited_is_disturbed():
    # a sleep (not CPU-bound): the samples that never waited, where enough did
    walls, cpus = [1.0, 2.0, 1.0, 1.0, 1.5], [0.01] * 5
    kept, found = undisturbed(walls, cpus, need=3, waits=[0.0, 1.0, 0.0, 0.0, 0.5])
    assert kept == [1.0, 1.0, 1.0]
    assert found == {"samples": 5, "preempted": 2, "enough": True, "waited": 2}
    # too few never waited: each sample less its wait (a wait longer than its sample was
    # read across its edges: its wall time)
    kept, found = undisturbed(walls, cpus, need=4, waits=[0.0, 1.0, 0.0, 1.5, 0.5])
    assert kept == [1.0, 1.0, 1.0, 1.0, 1.0] and found["enough"] and found["unqueued"]
    # CPU-bound work: too few that never waited leave it disturbed (a preempted sample's
    # own CPU time grows too), as without the run queue
    kept, found = undisturbed([1.0, 2.0, 2.0], [1.0, 1.0, 1.0], need=2, waits=[0.0, 1.0, 1.0])
    assert kept == [1.0, 2.0, 2.0] and not found["enough"] and "unqueued" not in found
    # two threads: a sample where the other thread lost the CPU is out though it never waited
    kept, found = undisturbed([1.0, 1.0, 1.5, 1.0], [2.0, 2.0, 1.5, 2.0], need=2,
                              waits=[0.0, 0.0, 0.0, 0.0])  # fmt: skip
    assert kept == [1.0, 1.0, 1.0] and found["preempted"] == 1


def test_open_run_queue_reads_the_threads_wait_where_the_kernel_counts(tmp_path):
    zeros = tmp_path / "schedstat"
    zeros.write_text("0 0 0\n")  # a kernel without schedstat accounting
    assert open_run_queue(str(zeros)) is None
    assert open_run_queue(str(tmp_path / "missing")) is None
    (tmp_path / "counted").write_text("5000000 2500000000 7\n")
    assert open_run_queue(str(tmp_path / "counted")).read() == 2.5
    queue = open_run_queue()  # this thread's, where this kernel says
    if queue is not None:
        assert 0.0 <= queue.read() <= queue.read()

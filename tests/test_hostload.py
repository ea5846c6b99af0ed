"""A busy host flags its results (hostload.py), and CPU benchmarks under pytest-xdist are
warned about. The host is read through hostload.read_host, replaced here: no real load."""

import json
import subprocess
import sys
import textwrap

import pytest

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.judging.busy import busy_verdicts
from pytest_gpuperf.measure.hostload import HostSample, assess, read_host, xdist_cpu_warning

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
    return {"throughput": {"status": status, "reason": "worse by 40%"}}


def test_on_the_cpu_a_busy_host_makes_a_change_inconclusive():
    busy = {"load1": 5.0, "cores": 2, "steal": 0.0, "busy": True}
    cpu = Result("t.py::a", None, "calls", 1, backend="cpu", host=busy, verdicts=_verdict("regressed"))
    better = Result("t.py::b", None, "calls", 1, backend="cpu", host=busy, verdicts=_verdict("improved"))
    gpu = Result("t.py::c", None, "calls", 1, backend="cuda", host=busy, verdicts=_verdict("regressed"))
    calm = Result("t.py::d", None, "calls", 1, backend="cpu", verdicts=_verdict("regressed"))
    # a figure derived from the busy measurement (samples/s beside tokens/s) is as suspect
    derived = Result("t.py::a", "samples_per_s", "samples/s", 1, kind="recorded", backend="cpu",
                     verdicts={"value": {"status": "regressed", "reason": "worse by 40%"}})  # fmt: skip
    busy_verdicts([cpu, better, gpu, calm, derived])
    assert derived.verdicts["value"]["status"] == "inconclusive"
    assert cpu.verdicts["throughput"]["status"] == "inconclusive"
    assert "busy host (load average 5 on 2 cores, 0.0% CPU steal)" in cpu.verdicts["throughput"]["reason"]
    assert better.verdicts["throughput"]["status"] == "inconclusive"
    assert cpu.verdicts["throughput"]["advice"].startswith("run it again on an idle machine (measured on a busy host")
    assert "advice" not in gpu.verdicts["throughput"] and "advice" not in calm.verdicts["throughput"]
    assert gpu.verdicts["throughput"]["status"] == "regressed"  # a GPU result's verdict stands
    assert calm.verdicts["throughput"]["status"] == "regressed"
    assert cpu.flags() == ["busy-host"] and calm.flags() == []


BUSY_CONFTEST = vclock.CONFTEST + textwrap.dedent(
    """
    import os

    import pytest_gpuperf.measure.hostload as hostload


    @pytest.fixture(autouse=True)
    def busy_host(virtual_clock, monkeypatch):
        if os.environ.get("BUSY"):  # 6 runnable on 2 cores, 3% steal
            samples = iter([hostload.HostSample(6.0, 0, 0, 2), hostload.HostSample(6.0, 30, 1000, 2)] * 99)
            monkeypatch.setattr(hostload, "read_host", lambda: next(samples))
    """
)


def test_a_busy_host_is_flagged_and_decides_no_verdict_on_the_cpu(project, monkeypatch):
    saved(project)  # an idle host
    project.makeconftest(BUSY_CONFTEST)
    monkeypatch.setenv("BUSY", "1")
    monkeypatch.setenv("SLOW", "0.5")  # 50% slower, on a busy host
    result = project.runpytest(*FAST, "--gpuperf-json=run.json", "-v")
    result.assert_outcomes(passed=2)  # no gate failure: the load may explain it
    result.stdout.fnmatch_lines(
        [
            "test_b.py::test_spin * busy-host",
            "  test_b.py::test_spin: measured on a busy host: load average 6 on 2 cores, 3.0% CPU steal",
            "INCONCLUSIVE  test_b.py::test_spin *throughput *-33.33%* busy-host",
        ]
    )
    assert "PERFORMANCE REGRESSION" not in result.stdout.str()
    run = json.loads((project.path / "run.json").read_text())
    hosts = [r["host"] for r in run["results"]]
    assert hosts == [{"load1": 6.0, "cores": 2, "steal": 0.03, "busy": True}] * 2
    verdict = run["results"][0]["verdicts"]["throughput"]
    assert verdict["status"] == "inconclusive" and "busy host" in verdict["reason"]
    # `gpuperf compare` judges the saved run as pytest did: no regression
    cli = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", "run.json"],
        capture_output=True, text=True, cwd=project.path,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "INCONCLUSIVE" in cli.stdout and "REGRESSED" not in cli.stdout


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


def test_the_xdist_warning_is_for_cpu_measurements_only():
    cpu = Result("t.py::a", None, "calls", 1, backend="cpu")
    gpu = Result("t.py::b", None, "calls", 1, backend="cuda")
    rec = Result("t.py::c", "x", "ms", 1, backend="cpu", kind="recorded")
    assert xdist_cpu_warning(4, [gpu, rec]) is None
    assert xdist_cpu_warning(None, [cpu]) is None and xdist_cpu_warning(1, [cpu]) is None
    assert "1 CPU benchmark(s) ran under pytest-xdist with 4 workers" in xdist_cpu_warning(4, [cpu, gpu])


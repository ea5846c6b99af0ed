"""Under pytest -n N, a test needing more GPUs than a worker has runs after the workers, in
one fresh process that sees them all (deferred.py). The device is a fake two-GPU host set
through the plugin's session API (tests/fakes.py); pytest-xdist, the fresh process, the
baseline file and the verdicts are real."""

import json
import os
from pathlib import Path

import pytest

from pytest_gpuperf.deferred import Outcome, outcomes, report_of, should_defer
from pytest_gpuperf.results import Result
from tests.fakes import TWO_GPU_HOST

pytest.importorskip("xdist")


TESTS = """
import os

import pytest

def test_one_gpu(gpu_benchmark):
    gpu_benchmark.record("max_batch", 24, "samples")

@pytest.mark.gpu_requires_gpus(2)
def test_both_gpus(gpu_benchmark):
    # in the fresh process: no xdist worker, and the GPUs the controller sees
    assert "PYTEST_XDIST_WORKER" not in os.environ
    gpu_benchmark.record("busbw", float(os.environ.get("BUSBW", "325")), "GB/s",
                         higher_is_better=True)

@pytest.mark.gpu_requires_gpus(3)
def test_three_gpus():
    pass
"""


@pytest.fixture
def host(pytester, request, monkeypatch):
    root = str(Path(request.config.rootpath))
    monkeypatch.setenv("PYTHONPATH", root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    pytester.makeconftest(TWO_GPU_HOST)
    pytester.makepyfile(test_g=TESTS)
    return pytester


def run(p, *args):
    return p.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "-rs", *args)


def test_a_two_gpu_test_runs_after_the_workers_is_saved_and_judged(host, monkeypatch):
    import xml.etree.ElementTree as ET

    result = run(host, "--gpuperf-baseline=save", "--junitxml=j.xml")
    counts = result.parseoutcomes()
    assert (counts.get("passed"), counts.get("skipped")) == (2, 1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["2 workers [2 items]"])  # the workers never see it
    cases = [c.get("name") for c in ET.parse(host.path / "j.xml").iter("testcase")]
    assert sorted(cases) == ["test_both_gpus", "test_one_gpu", "test_three_gpus"]
    result.stdout.fnmatch_lines(
        [
            "gpuperf: running 1 deferred test(s) that need more GPUs than a worker has, in "
            "one fresh process that sees all 2",
            "gpuperf: deferred tests, run after the workers: 1 passed in * s",
        ]
    )
    # a test needing more GPUs than the host has is skipped, not deferred
    result.stdout.fnmatch_lines(["SKIPPED * test_g.py:*: needs 3 GPU(s), 2 visible"])
    entries = json.loads((host.path / "baselines" / "h200.json").read_text())["entries"]
    two = entries["test_g.py::test_both_gpus::busbw"]
    assert two["environment"]["gpus"] == 2
    assert two["metrics"]["value"]["median"] == 325.0
    assert "test_g.py::test_one_gpu::max_batch" in entries

    # without pytest-xdist nothing is deferred; a second session of the same entries
    serial = host.runpytest_subprocess("-p", "no:cacheprovider", "--gpuperf-baseline=save")
    assert serial.ret == pytest.ExitCode.OK
    assert (serial.parseoutcomes().get("passed"), serial.parseoutcomes().get("skipped")) == (2, 1)
    assert "deferred test(s)" not in serial.stdout.str()

    # the deferred figure is judged with the run: -38% against its two sessions
    monkeypatch.setenv("BUSBW", "200")
    result = run(host, "--gpuperf-baseline=compare", "--gpuperf-json=run.json")
    result.stdout.fnmatch_lines(["REGRESSED *test_g.py::test_both_gpus::busbw*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    saved = json.loads((host.path / "run.json").read_text())
    mine = [r for r in saved["results"] if r["nodeid"] == "test_g.py::test_both_gpus"]
    assert [r["gpus_used"] for r in mine] == [2]


def test_a_failing_deferred_test_fails_the_run(host):
    host.makepyfile(
        test_h="""
import pytest

@pytest.mark.gpu_requires_gpus(2)
def test_broken():
    raise RuntimeError("NCCL said no")
"""
    )
    result = run(host, "--gpuperf-baseline=off", "test_h.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*= 1 failed in *"])
    result.stdout.fnmatch_lines(["*RuntimeError: NCCL said no*"])


def test_a_run_of_deferred_tests_alone_passes(host):
    """The workers run nothing (pytest would say exit 5, no tests); the deferred test ran."""
    result = run(host, "--gpuperf-baseline=off", "test_g.py::test_both_gpus")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*= 1 passed in *"])


@pytest.mark.parametrize(
    ("needed", "visible", "host_gpus", "defer"),
    [
        (2, 1, 2, True),
        (2, 1, 8, True),
        (3, 1, 2, False),
        (1, 1, 2, False),
        (2, 1, None, False),
        (2, 2, 2, False),
    ],
)
def test_should_defer(needed, visible, host_gpus, defer):
    assert should_defer(needed, visible, host_gpus) is defer


def test_outcomes_of_the_fresh_process():
    reports = [
        {
            "nodeid": "t.py::a",
            "when": "setup",
            "outcome": "passed",
            "longrepr": "",
            "duration": 1.0,
        },
        {"nodeid": "t.py::a", "when": "call", "outcome": "passed", "longrepr": "", "duration": 2.0},
        {
            "nodeid": "t.py::b",
            "when": "call",
            "outcome": "failed",
            "longrepr": "boom",
            "duration": 1,
        },
        {
            "nodeid": "t.py::b",
            "when": "teardown",
            "outcome": "failed",
            "longrepr": "again",
            "duration": 0,
        },
        {
            "nodeid": "t.py::c",
            "when": "setup",
            "outcome": "skipped",
            "longrepr": "why",
            "duration": 0,
        },
        {
            "nodeid": "t.py::other",
            "when": "call",
            "outcome": "failed",
            "longrepr": "x",
            "duration": 0,
        },
    ]
    results = [Result("t.py::a", None, "GB/s", 300.0, gpus_used=2)]
    got = {
        o.nodeid: o
        for o in outcomes(["t.py::a", "t.py::b", "t.py::c", "t.py::d"], reports, results)
    }
    assert (got["t.py::a"].outcome, got["t.py::a"].duration, len(got["t.py::a"].results)) == (
        "passed",
        3.0,
        1,
    )
    assert (got["t.py::b"].outcome, got["t.py::b"].when, got["t.py::b"].longrepr) == (
        "failed",
        "call",
        "boom",
    )
    assert (got["t.py::c"].outcome, got["t.py::c"].longrepr) == ("skipped", "why")
    assert got["t.py::d"].outcome == "failed" and "did not run" in got["t.py::d"].longrepr
    assert "t.py::other" not in got


def test_report_of_carries_the_results():
    r = Result("t.py::a", None, "GB/s", 300.0, gpus_used=2)
    rep = report_of(Outcome("t.py::a", results=[r]))
    assert (rep.nodeid, rep.outcome, rep.when) == ("t.py::a", "passed", "call")
    back = Result.from_dict(rep.gpuperf[0])
    assert (back.nodeid, back.gpus_used) == ("t.py::a", 2)
    skipped = report_of(Outcome("t.py::s", "skipped", "setup", "needs 4 GPU(s)"))
    assert skipped.skipped and skipped.longrepr[2] == "needs 4 GPU(s)"


def test_a_multi_gpu_confirmation_is_not_pinned_to_one_gpu():
    """The confirmation's fresh process runs on the GPU of the flagged result, except for a
    test that used several: pinned to one, a gpu_requires_gpus(2) test would skip there."""
    from pytest_gpuperf.confirm import _gpu_of

    one = Result("t.py::one", None, "GB/s", 1.0, gpu_uuid="GPU-a")
    two = Result("t.py::two", None, "GB/s", 1.0, gpu_uuid="GPU-a", gpus_used=2)
    assert _gpu_of([one, two], ["t.py::one"]) == "GPU-a"
    assert _gpu_of([one, two], ["t.py::two"]) is None
    assert _gpu_of([one, two], ["t.py::one", "t.py::two"]) is None


def test_the_workers_are_ended_before_the_deferred_tests_run():
    """Their CUDA contexts would hold memory on the GPUs the deferred tests need."""
    from types import SimpleNamespace

    from pytest_gpuperf.deferred import stop_workers

    ended = []
    manager = SimpleNamespace(teardown_nodes=lambda: ended.append(True))
    plugins = {"dsession": SimpleNamespace(nodemanager=manager)}
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=plugins.get))
    stop_workers(config)
    assert ended == [True]
    stop_workers(SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: None)))

"""Under pytest -n N, a test needing more GPUs than a worker has runs after the workers, in
one fresh process that sees them all (deferred.py). The device is a fake two-GPU host set
through the plugin's session API (tests/fakes.py); pytest-xdist, the fresh process, the
baseline file and the verdicts are real."""

import json
import os
from pathlib import Path

import pytest

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.fresh.deferred import (
    Outcome,
    outcomes,
    record,
    report_of,
    reports_of,
    should_defer,
)
from pytest_gpuperf.fresh.workers import RESULTS_ATTR, is_worker
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert got["t.py::d"].outcome == "error" and "did not run" in got["t.py::d"].longrepr
    assert "t.py::other" not in got


def test_report_of_carries_the_results():
    r = Result("t.py::a", None, "GB/s", 300.0, gpus_used=2)
    call = {"nodeid": "t.py::a", "when": "call", "outcome": "passed", "duration": 2.0}
    rep = report_of("t.py::a", call, [r])
    assert (rep.nodeid, rep.outcome, rep.when) == ("t.py::a", "passed", "call")
    back = Result.from_dict(getattr(rep, RESULTS_ATTR)[0])
    assert (back.nodeid, back.gpus_used) == ("t.py::a", 2)
    # only the call's report carries them
    assert not hasattr(report_of("t.py::a", {**call, "when": "teardown"}, [r]), RESULTS_ATTR)
    skipped = report_of(
        "t.py::s", {"when": "setup", "outcome": "skipped", "longrepr": "needs 4 GPU(s)"}
    )
    assert skipped.skipped and skipped.longrepr == ("t.py", None, "needs 4 GPU(s)")
    # a test that did not run: one failed setup
    (alone,) = reports_of(Outcome("t.py::n", "error", "setup", "not run"))
    assert (alone.when, alone.outcome, str(alone.longrepr)) == ("setup", "failed", "not run")


def phase(when, outcome="passed", **more):
    return {"nodeid": "t.py::x", "when": when, "outcome": outcome, "duration": 0.5, **more}


@pytest.mark.parametrize(
    ("phases", "folded", "when"),
    [
        ([phase("setup"), phase("call"), phase("teardown")], "passed", "call"),
        ([phase("setup"), phase("call"), phase("teardown", "failed")], "error", "teardown"),
        ([phase("setup", "failed"), phase("teardown")], "error", "setup"),
        ([phase("setup"), phase("call", "failed"), phase("teardown", "failed")], "failed", "call"),
        (
            [phase("setup"), phase("call", "skipped", wasxfail="known"), phase("teardown")],
            "xfailed",
            "call",
        ),
        ([phase("setup"), phase("call", wasxfail="known"), phase("teardown")], "xpassed", "call"),
        (
            [phase("setup", "skipped", longrepr=["/r/t.py", 3, "why"]), phase("teardown")],
            "skipped",
            "setup",
        ),
    ],
)
def test_a_test_is_folded_from_its_phases_as_pytest_counts_it(phases, folded, when):
    (o,) = outcomes(["t.py::x"], phases, [])
    assert (o.outcome, o.when, o.duration) == (folded, when, 0.5 * len(phases))
    assert o.failed is (folded in ("failed", "error"))
    reports = reports_of(o)  # one report per phase, as pytest's own
    assert [(r.when, r.outcome) for r in reports] == [(p["when"], p["outcome"]) for p in phases]


def test_a_phase_report_survives_the_outcomes_file():
    """What the fresh process's report says comes back in the controller's: the location,
    xfail, user properties (a value JSON cannot hold as its str()), a skip's line, the
    crash line of a failure."""

    class Odd:
        def __str__(self):
            return "odd"

    xfailed = pytest.TestReport(
        "t.py::x",
        ("t.py", 11, "x"),
        {"x": 1, "xfail": 1},
        "skipped",
        "Traceback ...\nE  assert 0",
        "call",
        sections=[("Captured stdout call", "hi")],
        duration=0.25,
        user_properties=[("n", 42), ("odd", Odd())],
        wasxfail="known",
    )
    rec = json.loads(json.dumps(record(xfailed)))
    back = report_of("t.py::x", rec)
    assert (back.location, back.wasxfail, back.duration) == (("t.py", 11, "x"), "known", 0.25)
    assert back.user_properties == [("n", 42), ("odd", "odd")]
    assert (back.sections, back.keywords) == (
        [("Captured stdout call", "hi")],
        {"x": 1, "xfail": 1},
    )
    assert str(back.longrepr) == "Traceback ...\nE  assert 0"

    skip = pytest.TestReport(
        "t.py::s", ("t.py", 3, "s"), {}, "skipped", ("t.py", 5, "no NVLink"), "call"
    )
    back = report_of("t.py::s", json.loads(json.dumps(record(skip))))
    assert back.longrepr == (os.path.abspath("t.py"), 5, "no NVLink")

    failed = report_of(
        "t.py::f", {"when": "call", "outcome": "failed", "longrepr": "long\ntext", "crash": "E1"}
    )
    assert (str(failed.longrepr), failed.longrepr.reprcrash.message) == ("long\ntext", "E1")
    assert failed.longreprtext == "long\ntext"


KINDS = """
import pytest

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown boom")

@pytest.mark.gpu_requires_gpus(2)
def test_teardown_error(gpu_benchmark, bad_teardown):
    gpu_benchmark.record("busbw", 325.0, "GB/s")

@pytest.mark.gpu_requires_gpus(2)
@pytest.mark.xfail(reason="known bug")
def test_xfailed():
    assert 0

@pytest.mark.gpu_requires_gpus(2)
@pytest.mark.xfail(reason="fixed since")
def test_xpassed():
    pass

@pytest.mark.gpu_requires_gpus(2)
def test_property(record_property):
    record_property("model", "70b")

@pytest.mark.gpu_requires_gpus(2)
def test_skipped():
    pytest.skip("no NVLink")
"""


@pytest.mark.slow
def test_deferred_tests_are_reported_as_a_serial_run_reports_them(host):
    """xfail and xpass, a teardown error after a passed call (its figures kept), user
    properties in JUnit XML, a skip's line number: as pytest reports them without -n."""
    import xml.etree.ElementTree as ET

    host.makepyfile(test_k=KINDS)
    result = run(
        host,
        "-rsxXE",
        "--gpuperf-baseline=off",
        "--gpuperf-json=run.json",
        "--junitxml=j.xml",
        "-o",
        "junit_family=xunit1",
        "test_k.py",
    )
    result.assert_outcomes(passed=2, errors=1, xfailed=1, xpassed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the teardown error
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [1] test_k.py:28: no NVLink",
            "XFAIL test_k.py::test_xfailed - known bug",
            "XPASS test_k.py::test_xpassed - fixed since",
            "ERROR test_k.py::test_teardown_error - RuntimeError: teardown boom",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "gpuperf: deferred tests, run after the workers: 1 error, 2 passed, 1 skipped, "
            "1 xfailed, 1 xpassed in * s"
        ]
    )
    saved = json.loads((host.path / "run.json").read_text())
    assert [r["nodeid"] for r in saved["results"]] == ["test_k.py::test_teardown_error"]
    cases = {c.get("name"): c for c in ET.parse(host.path / "j.xml").iter("testcase")}
    xfailed = cases["test_xfailed"].find("skipped")
    assert (xfailed.get("type"), xfailed.get("message")) == ("pytest.xfail", "known bug")
    props = {p.get("name"): p.get("value") for p in cases["test_property"].iter("property")}
    assert props == {"model": "70b"}
    teardown = cases["test_teardown_error"]
    assert "teardown boom" in teardown.find("error").get("message")
    names = [p.get("name") for p in teardown.iter("property")]
    assert "gpuperf:test_k.py::test_teardown_error::busbw" in names


def test_a_multi_gpu_confirmation_is_not_pinned_to_one_gpu():
    """The confirmation's fresh process runs on the GPU of the flagged result, except for a
    test that used several: pinned to one, a gpu_requires_gpus(2) test would skip there."""
    from pytest_gpuperf.fresh.confirm import gpu_of

    one = Result("t.py::one", None, "GB/s", 1.0, gpu_uuid="GPU-a")
    two = Result("t.py::two", None, "GB/s", 1.0, gpu_uuid="GPU-a", gpus_used=2)
    assert gpu_of([one, two], ["t.py::one"]) == "GPU-a"
    assert gpu_of([one, two], ["t.py::two"]) is None
    assert gpu_of([one, two], ["t.py::one", "t.py::two"]) is None


def test_the_workers_are_ended_before_the_deferred_tests_run():
    """Their CUDA contexts would hold memory on the GPUs the deferred tests need."""
    from types import SimpleNamespace

    from pytest_gpuperf.fresh.deferred import stop_workers

    ended = []
    manager = SimpleNamespace(teardown_nodes=lambda: ended.append(True))
    plugins = {"dsession": SimpleNamespace(nodemanager=manager)}
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=plugins.get))
    stop_workers(config)
    assert ended == [True]
    stop_workers(SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: None)))


def test_a_stopped_run_says_its_deferred_tests_did_not_run(host):
    """-x: a worker's test failed, so the deferred test is not run, and the run says so even
    though it has no figures (the note was dropped when a run had no results)."""
    host.makepyfile(
        test_x="""
import pytest

def test_fails_first():
    assert False

@pytest.mark.gpu_requires_gpus(2)
def test_later():
    pass
"""
    )
    result = run(host, "-x", "--gpuperf-baseline=off", "test_x.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest-xdist's -x: "stopping after 1 failures"
    result.stdout.fnmatch_lines(["gpuperf: 1 deferred test(s) not run: the run was stopped"])


def test_ctrl_c_in_the_deferred_tests_ends_the_run_as_interrupted(monkeypatch):
    """A KeyboardInterrupt while the fresh process ran escaped as a raw traceback (a break-it
    pass): nothing of it is reported, the run ends as interrupted (exit 2) and says why."""
    from types import SimpleNamespace

    import pytest_gpuperf.fresh.deferred as deferred
    from pytest_gpuperf.fresh.confirm import INTERRUPTED

    monkeypatch.setattr(deferred, "run", lambda config, nodeids: (None, ""))
    plugins = SimpleNamespace(get_plugin=lambda name: None, getplugin=lambda name: None)
    session = SimpleNamespace(config=SimpleNamespace(pluginmanager=plugins), exitstatus=pytest.ExitCode.OK)
    note = deferred.run_after_workers(session, ["t.py::a", "t.py::b"], 2, stopped=False)
    assert note == f"gpuperf: 2 deferred test(s) not run: {INTERRUPTED}"
    assert session.exitstatus == pytest.ExitCode.INTERRUPTED


def test_is_worker_is_what_pytest_xdist_gives_a_worker():
    """is_worker (fresh/workers.py), the one place that asks: xdist gives a worker's config
    its `workerinput`; the controller's and a plain run's config have none."""
    from types import SimpleNamespace

    assert is_worker(SimpleNamespace(workerinput={"workerid": "gw0", "workercount": 2}))  # type: ignore[arg-type]
    assert not is_worker(SimpleNamespace(option=SimpleNamespace(numprocesses=2)))  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_deferred_run_that_imported_other_files_reports_nothing_of_this_build(host, tmp_path):
    """Issue 57: the deferred tests' fresh process claimed to run this build without showing
    it: one that loaded another copy of the code (here by hand, from an installed copy)
    passed as this run's test."""
    (host.path / "mypkg").mkdir()
    (host.path / "mypkg" / "__init__.py").write_text("WHERE = 'local source tree'\n")
    other = tmp_path / "site" / "mypkg" / "__init__.py"
    other.parent.mkdir(parents=True)
    other.write_text("WHERE = 'installed copy'\n")
    host.makeconftest(TWO_GPU_HOST + f"""
import importlib.util, os, sys
if os.environ.get("PYTEST_GPUPERF_OUTCOMES"):  # the deferred tests' fresh process
    spec = importlib.util.spec_from_file_location("mypkg", {str(other)!r})
    sys.modules["mypkg"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["mypkg"])
import mypkg
""")
    host.makepyfile(test_h="""
import pytest

@pytest.mark.gpu_requires_gpus(2)
def test_two():
    pass
""")
    result = run(host, "--gpuperf-baseline=off", "test_h.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*the fresh process imported other files than this run: mypkg from {other}*"])

"""Tests that need more GPUs than a pytest-xdist worker has, run after the workers.

Under `pytest -n N` each worker sees one GPU of its own (workers.py), so a test marked
`gpu_requires_gpus(2)` cannot run in a worker. Rather than skip it (and leave the full
suite's multi-GPU figures out of the gate), every worker leaves it out of the tests it runs
and names it to the controller (pytest-xdist's workeroutput). When every worker has finished
and its processes are gone (their CUDA contexts and cached memory with them), the controller
runs the deferred tests in one fresh pytest process that sees all the GPUs, with this run's
settings and plugins and baselines off. Each test's outcome and its results come back
through files, and the controller reports them as the tests' own reports: they are counted,
judged against the baseline, saved, in JUnit XML and shown like the workers' results.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .results import Result

OUTCOMES_ENV = "PYTEST_GPUPERF_OUTCOMES"  # the fresh process writes each test's outcome here
PASSED_ON = ("--benchmark-skip", "--benchmark-only", "--benchmark-disable")


def should_defer(needed: int, visible: int, host_gpus: int | None) -> bool:
    """In a worker given one GPU of a host with `host_gpus`: a test needing more GPUs than
    the worker sees, and no more than the host has, runs after the workers."""
    return host_gpus is not None and visible < needed <= host_gpus


@dataclass
class Outcome:
    """One deferred test's outcome in the fresh process."""

    nodeid: str
    outcome: str = "passed"  # passed, failed, skipped
    when: str = "call"
    longrepr: str = ""
    duration: float = 0.0
    results: list[Result] = field(default_factory=list)


class OutcomeLog:
    """Registered in the fresh process (OUTCOMES_ENV set): writes each test's outcome."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reports: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(
            {
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "longrepr": _longrepr(report),
                "duration": float(report.duration),
            }
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.path.write_text(json.dumps(self.reports))


def _longrepr(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return str(report.longreprtext or "")


def outcomes(
    nodeids: list[str], reports: list[dict[str, Any]], results: list[Result]
) -> list[Outcome]:
    """Each deferred test's outcome from the fresh process's reports: failed if any phase
    failed, skipped if its setup skipped, else passed; with its results."""
    out = {n: Outcome(n) for n in nodeids}
    seen: set[str] = set()
    for rep in reports:
        o = out.get(str(rep.get("nodeid")))
        if o is None:
            continue
        seen.add(o.nodeid)
        o.duration += float(rep.get("duration") or 0.0)
        if rep.get("outcome") == "failed" and o.outcome != "failed":
            o.outcome, o.when, o.longrepr = "failed", str(rep.get("when")), str(rep.get("longrepr"))
        elif rep.get("outcome") == "skipped" and o.outcome == "passed":
            o.outcome, o.when, o.longrepr = (
                "skipped",
                str(rep.get("when")),
                str(rep.get("longrepr")),
            )
    for n in nodeids:
        if n not in seen:
            out[n].outcome, out[n].when = "failed", "setup"
            out[n].longrepr = "gpuperf: the deferred test did not run in the fresh process"
    for r in results:
        if r.nodeid in out:
            out[r.nodeid].results.append(r)
    return list(out.values())


def command(config: Any, nodeids: list[str], json_path: Path) -> list[str]:
    """The confirmation's command line (this run's settings and plugins, baselines off,
    results as JSON), and pytest-benchmark's selection flags as given."""
    from .confirm import command as fresh_command

    given = [str(a) for a in config.invocation_params.args]
    return [*fresh_command(config, nodeids, json_path), *(a for a in PASSED_ON if a in given)]


def stop_workers(config: Any) -> None:
    """End the pytest-xdist worker processes now (their CUDA contexts hold memory on the
    GPUs the deferred tests need); pytest-xdist's own teardown then finds nothing to do."""
    dsession = config.pluginmanager.getplugin("dsession")
    nodemanager = getattr(dsession, "nodemanager", None)
    if nodemanager is not None:
        nodemanager.teardown_nodes()


def run(config: Any, nodeids: list[str]) -> tuple[list[Outcome], str]:
    """Run the deferred tests in one fresh process. Returns their outcomes and a line
    saying how it went."""
    from .confirm import fresh_process, said
    from .runfile import ResultsFileError, read_run

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpuperf-deferred-") as tmp:
        json_path, log_path = Path(tmp) / "results.json", Path(tmp) / "outcomes.json"
        proc, failure = fresh_process(
            command(config, nodeids, json_path), config, {OUTCOMES_ENV: str(log_path)}
        )
        if proc is None:
            return _all_failed(nodeids, str(failure)), ""
        if not log_path.exists():
            why = f"the fresh process reported no tests (exit {proc.returncode}: {said(proc)})"
            return _all_failed(nodeids, why), ""
        reports = json.loads(log_path.read_text())
        results: list[Result] = []
        if json_path.exists():
            try:
                results = read_run(json_path)[1].results
            except ResultsFileError as exc:
                return _all_failed(nodeids, f"its results could not be read: {exc}"), ""
    done = outcomes(nodeids, reports, results)
    counts = Counter(o.outcome for o in done)
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return done, f"{tally} in {time.monotonic() - t0:.0f} s"


def _all_failed(nodeids: list[str], why: str) -> list[Outcome]:
    return [
        Outcome(n, "failed", "setup", f"gpuperf: deferred test not run: {why}") for n in nodeids
    ]


def report_of(o: Outcome) -> pytest.TestReport:
    """The deferred test's report in the controller, with its results attached as a
    worker's report carries them."""
    path, _, name = o.nodeid.partition("::")
    longrepr: Any = o.longrepr or None
    if o.outcome == "skipped":
        longrepr = (path, None, o.longrepr or "skipped")
    report = pytest.TestReport(
        nodeid=o.nodeid,
        location=(path, None, name),
        keywords={},
        outcome=o.outcome,  # type: ignore[arg-type]
        longrepr=longrepr,
        when=o.when,  # type: ignore[arg-type]
        duration=o.duration,
    )
    if o.results and o.when == "call":
        report.gpuperf = [r.to_dict() for r in o.results]  # type: ignore[attr-defined]
    return report


def run_after_workers(session: pytest.Session, nodeids: list[str], gpus: int, stopped: bool) -> str:
    """The controller's part: say so, end the workers, run the deferred tests, report
    each as its own test and fail the run when one failed. Returns the line for the end."""
    if stopped:
        return f"gpuperf: {len(nodeids)} deferred test(s) not run: the run was stopped"
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write("\n")  # after the workers' progress line
        tr.write_line(
            f"gpuperf: running {len(nodeids)} deferred test(s) that need more GPUs than a "
            f"worker has, in one fresh process that sees all {gpus}"
        )
    stop_workers(session.config)
    done, line = run(session.config, nodeids)
    session.testscollected += len(done)
    for outcome in done:
        session.config.hook.pytest_runtest_logreport(report=report_of(outcome))
    if any(o.outcome == "failed" for o in done):
        session.testsfailed += sum(o.outcome == "failed" for o in done)
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:  # the workers ran none
        session.exitstatus = pytest.ExitCode.OK
    return f"gpuperf: deferred tests, run after the workers: {line or 'none ran'}"

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
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from .confirm import INTERRUPTED
from .workers import RESULTS_ATTR

if TYPE_CHECKING:
    from ..core.results import Result

OUTCOMES_ENV = "PYTEST_GPUPERF_OUTCOMES"  # the fresh process writes each test's outcome here
DEFERRED_KEY = "gpuperf_deferred"  # a worker's workeroutput: the tests it left for later


def should_defer(needed: int, visible: int, host_gpus: int | None) -> bool:
    """In a worker given one GPU of a host with `host_gpus`: a test needing more GPUs than
    the worker sees, and no more than the host has, runs after the workers."""
    return host_gpus is not None and visible < needed <= host_gpus


@dataclass
class Outcome:
    """One deferred test's outcome in the fresh process: folded from its phases' reports
    (`phases`, as OutcomeLog wrote them), which the controller reports one by one."""

    nodeid: str
    outcome: str = "passed"  # passed, failed, error, skipped, xfailed, xpassed
    when: str = "call"  # the phase that decided it
    longrepr: str = ""
    duration: float = 0.0
    results: list[Result] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.outcome in ("failed", "error")


class OutcomeLog:
    """Registered in the fresh process (OUTCOMES_ENV set): writes each test's reports, one
    per phase, with what the controller needs to report them as pytest's own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reports: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(record(report))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.path.write_text(json.dumps(self.reports))


def record(report: pytest.TestReport) -> dict[str, Any]:
    """One phase's report as plain JSON data."""
    path, lineno, domain = report.location
    rec: dict[str, Any] = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "longrepr": _longrepr(report),
        "duration": float(report.duration),
        "location": [str(path), lineno if isinstance(lineno, int) else None, str(domain)],
        "keywords": sorted(str(k) for k in report.keywords),
        "sections": [[str(title), str(text)] for title, text in report.sections],
        "user_properties": [[str(k), _plain(v)] for k, v in report.user_properties],
    }
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        rec["crash"] = str(getattr(crash, "message", ""))
    if hasattr(report, "wasxfail"):  # xfailed (skipped) or xpassed (passed)
        rec["wasxfail"] = str(report.wasxfail)
    return rec


def _plain(value: Any) -> Any:
    """A user property's value as JSON can hold it; else its str() (what JUnit XML shows)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _longrepr(report: pytest.TestReport) -> str | list[Any]:
    """A skip's (path, lineno, reason), the path absolute; else the report's text."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        path, lineno, reason = longrepr
        return [
            os.path.abspath(str(path)),
            lineno if isinstance(lineno, int) else None,
            str(reason),
        ]
    return str(report.longreprtext or "")


def _reason(longrepr: Any) -> str:
    return str(longrepr[2]) if isinstance(longrepr, list) and len(longrepr) == 3 else str(longrepr)


def _fold(phases: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A test's outcome from its phases' reports, as pytest counts it (a failed setup or
    teardown is an error), and the report that decided it."""
    failed = [p for p in phases if p.get("outcome") == "failed"]
    call = next((p for p in phases if p.get("when") == "call"), None)
    if failed:
        rep = call if call in failed else failed[0]
        return ("failed" if rep is call else "error"), rep
    skipped = next((p for p in phases if p.get("outcome") == "skipped"), None)
    if skipped is not None:
        return ("xfailed" if "wasxfail" in skipped else "skipped"), skipped
    if call is not None and "wasxfail" in call:
        return "xpassed", call
    return "passed", call or phases[-1]


def outcomes(
    nodeids: list[str], reports: list[dict[str, Any]], results: list[Result]
) -> list[Outcome]:
    """Each deferred test's outcome from the fresh process's reports (failed if its call
    failed, an error if its setup or teardown did, skipped or xfailed if a phase was, ...),
    with its phases' reports and its results."""
    out = {n: Outcome(n) for n in nodeids}
    for rep in reports:
        o = out.get(str(rep.get("nodeid")))
        if o is None:
            continue
        o.phases.append(rep)
        o.duration += float(rep.get("duration") or 0.0)
    for o in out.values():
        if not o.phases:
            o.outcome, o.when = "error", "setup"
            o.longrepr = "gpuperf: the deferred test did not run in the fresh process"
            continue
        o.outcome, rep = _fold(o.phases)
        o.when, o.longrepr = str(rep.get("when")), _reason(rep.get("longrepr") or "")
    for r in results:
        if r.nodeid in out:
            out[r.nodeid].results.append(r)
    return list(out.values())


def stop_workers(config: Any) -> None:
    """End the pytest-xdist worker processes now (their CUDA contexts hold memory on the
    GPUs the deferred tests need); pytest-xdist's own teardown then finds nothing to do."""
    dsession = config.pluginmanager.getplugin("dsession")
    nodemanager = getattr(dsession, "nodemanager", None)
    if nodemanager is not None:
        nodemanager.teardown_nodes()


def run(config: Any, nodeids: list[str]) -> tuple[list[Outcome] | None, str]:
    """Run the deferred tests in one fresh process. Returns their outcomes (None when
    Ctrl-C stopped it) and how long it took ("" when it did not run)."""
    from ..outputs.runfile import ResultsFileError, read_run
    from .confirm import run as run_fresh
    from .confirm import said
    from .provenance import other_files

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpuperf-deferred-") as tmp:
        json_path, log_path = Path(tmp) / "results.json", Path(tmp) / "outcomes.json"
        proc, failure = run_fresh(config, nodeids, Path(tmp), {OUTCOMES_ENV: str(log_path)})
        if proc is None:
            if failure == INTERRUPTED:  # Ctrl-C: nothing is reported, the run is interrupted
                return None, ""
            return _all_failed(nodeids, str(failure)), ""
        if not log_path.exists():
            why = f"the fresh process reported no tests (exit {proc.returncode}: {said(proc)})"
            return _all_failed(nodeids, why), ""
        try:
            reports = json.loads(log_path.read_text())
        except (OSError, ValueError) as exc:  # a process killed while it wrote them
            return _all_failed(nodeids, f"its outcomes could not be read: {exc}"), ""
        other = other_files(Path(tmp) / "imports.json")
        if other:  # it ran other code than the run did: its outcomes are not this build's
            why = f"the fresh process imported other files than this run: {other}"
            return _all_failed(nodeids, why), ""
        results: list[Result] = []
        if json_path.exists():
            try:
                results = read_run(json_path)[1].results
            except ResultsFileError as exc:
                return _all_failed(nodeids, f"its results could not be read: {exc}"), ""
    return outcomes(nodeids, reports, results), f"in {time.monotonic() - t0:.0f} s"


def _all_failed(nodeids: list[str], why: str) -> list[Outcome]:
    return [Outcome(n, "error", "setup", f"gpuperf: deferred test not run: {why}") for n in nodeids]


class _Failure:
    """A failure's text with its crash line, as pytest's own has them: JUnit XML's message
    and the short test summary's line are the crash line."""

    def __init__(self, text: str, crash: str) -> None:
        self.text, self.reprcrash = text, SimpleNamespace(message=crash)

    def __str__(self) -> str:
        return self.text

    def toterminal(self, out: Any) -> None:
        out.line(self.text)


def report_of(
    nodeid: str, rec: dict[str, Any], results: list[Result] | None = None
) -> pytest.TestReport:
    """One phase's report in the controller, from the fresh process's (OutcomeLog's
    record); with the test's results when it is the call, as a worker's report carries
    them."""
    path, _, name = nodeid.partition("::")
    outcome, when = str(rec.get("outcome") or "failed"), str(rec.get("when") or "setup")
    extra: dict[str, Any] = {"wasxfail": str(rec["wasxfail"])} if "wasxfail" in rec else {}
    longrepr: Any = rec.get("longrepr") or None
    if isinstance(longrepr, list) and len(longrepr) == 3:
        longrepr = (str(longrepr[0]), longrepr[1], str(longrepr[2]))
    elif outcome == "skipped" and not extra:  # a skip is (path, lineno, reason)
        longrepr = (path, None, str(longrepr or "skipped"))
    elif longrepr is not None and rec.get("crash") is not None:
        longrepr = _Failure(str(longrepr), str(rec["crash"]))
    loc = rec.get("location")
    if isinstance(loc, list) and len(loc) == 3:
        location = (str(loc[0]), loc[1] if isinstance(loc[1], int) else None, str(loc[2]))
    else:
        location = (path, None, name)
    report = pytest.TestReport(
        nodeid=nodeid,
        location=location,
        keywords=dict.fromkeys(map(str, rec.get("keywords") or []), 1),
        outcome=outcome,  # type: ignore[arg-type]
        longrepr=longrepr,
        when=when,  # type: ignore[arg-type]
        sections=[(str(t), str(c)) for t, c in rec.get("sections") or []],
        duration=float(rec.get("duration") or 0.0),
        user_properties=[(str(k), v) for k, v in rec.get("user_properties") or []],
        **extra,
    )
    if results and when == "call":
        setattr(report, RESULTS_ATTR, [r.to_dict() for r in results])
    return report


def reports_of(o: Outcome) -> list[pytest.TestReport]:
    """The deferred test's reports in the controller: one per phase the fresh process
    reported (a passed setup or teardown is counted by no one, as in pytest), its results
    on the call's; one failed setup when it did not run."""
    if not o.phases:
        rec = {"when": o.when, "outcome": "failed", "longrepr": o.longrepr, "duration": o.duration}
        return [report_of(o.nodeid, rec)]
    return [report_of(o.nodeid, p, o.results) for p in o.phases]


def run_deferred(sess: Any, session: pytest.Session) -> None:
    """The controller's GpuPerfSession at the end of the run: run the tests the workers
    deferred, report them as their own, keep the line for the end."""
    ids, sess.deferred = sorted(sess.deferred), set()
    sess.collected.update(ids)
    stopped = bool(session.shouldstop or session.shouldfail or sess.interrupted)
    sess.finish_notes.append(run_after_workers(session, ids, sess.snapshot().gpu_count, stopped))
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:  # Ctrl-C in the deferred tests
        sess.interrupted = True


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
    done, took = run(session.config, nodeids)
    if done is None:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
        return f"gpuperf: {len(nodeids)} deferred test(s) not run: {INTERRUPTED}"
    session.testscollected += len(done)
    hook, counts = session.config.hook, Counter[str]()
    for outcome in done:  # the session counts the failed ones (pytest's testsfailed)
        for report in reports_of(outcome):
            hook.pytest_runtest_logreport(report=report)
            status = hook.pytest_report_teststatus(report=report, config=session.config)
            counts.update([str(status[0])] if status and status[0] else [])  # as pytest's
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if any(o.failed for o in done):
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:  # the workers ran none
        session.exitstatus = pytest.ExitCode.OK
    line = f"{tally} {took}" if took else "none ran"
    return f"gpuperf: deferred tests, run after the workers: {line}"

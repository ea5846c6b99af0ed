"""The run's own failed test items: what fails a run beside its tests shows as a failed test
of its own, so that pytest's last line never reads as a clean pass and JUnit, the short test
summary and `-rf` list it where failed tests show. A performance regression
(`GATE_NODEID`), a gated figure left undecided under --gpuperf-strict (`STRICT_NODEID`),
and a baseline save asked for that was refused or partial (`SAVE_NODEID`)."""

from __future__ import annotations

from typing import Any

import pytest

GATE_NODEID = "gpuperf::performance-gate"  # the failed test a performance regression shows as
STRICT_NODEID = "gpuperf::undecided-gate"  # --gpuperf-strict: a gated figure left undecided
SAVE_NODEID = "gpuperf::baseline-save"  # a save asked for that was refused or partial


def fail_item(session: pytest.Session, nodeid: str, what: str, text: str) -> None:
    """Report one more test, `nodeid`, failed with the failure text `text`, and make the
    run's exit status a failure where it was a pass."""
    report = pytest.TestReport(
        nodeid=nodeid,
        location=("gpuperf", None, what),
        keywords={},
        outcome="failed",
        longrepr=text,
        when="call",
    )
    session.testscollected += 1  # reported as one more test
    session.config.hook.pytest_runtest_logreport(report=report)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def strict_failure(blind: Any) -> str | None:
    """The failure text of --gpuperf-strict where the run left gated figures undecided
    (`blind`: a judging.blind.Blindness; those undecided by design are not counted), or
    None where it left none."""
    if blind is None or not blind.counted:
        return None
    return "\n".join(["GATED FIGURES LEFT UNDECIDED (--gpuperf-strict)", *blind.lines(1)])


def strict_gate(session: Any, sess: Any) -> None:
    """--gpuperf-strict: the gated figures the run left undecided fail it as STRICT_NODEID;
    a run that measured none of its baseline's collected tests (all skipped) too."""
    if not sess.options.strict:
        return
    if not sess.base.ready:
        sess.prepare_baseline()
    undecided = strict_failure(sess.base.blindness(sess.results, sess.collected))
    if undecided:  # a hard gate: blind is not a pass
        fail_item(session, STRICT_NODEID, "strict gate", undecided)

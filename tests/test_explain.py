"""The gate's failure lines (judging/explain.py): each failing verdict ends with the one-line
command that re-runs just that test against the same baseline and profile, quoted for a
POSIX shell; a verdict of the paired stage names the `gpuperf ab` line with its base commit."""

import shlex
from pathlib import PurePosixPath

from pytest_gpuperf.core.verdict import amend, from_json
from pytest_gpuperf.judging.explain import (
    Rerun,
    failure_lines,
    rerun_command,
    rerun_commands,
)

from .reportdata import measured

NODE = "tests/x.py::test_y[b8 it's]"  # a parameter id a shell would split and unquote


def _regressed(nodeid=NODE, paired=None, stage1=True, **rounds):
    r = measured(nodeid, 900.0, {})
    vd = {"status": "regressed", "change": -0.1, "uncertainty": 0.01, "tolerance": 0.03,
          "basis": "±1.00% from its own 3 sessions", "confirmed": True, "reason": "slower"}  # fmt: skip
    if paired:  # a verdict the paired stage decided keeps the first stage's under stage1
        vd["paired"] = {"commit": paired, "rounds": 6, **rounds}
        if stage1:
            vd["stage1"] = {"status": "inconclusive", "change": -0.02}
    r.verdicts = {"throughput": from_json(vd)}
    return r


def _entries(nodeid=NODE):
    history = [{"median": 1000.0}, {"median": 1001.0}, {"median": 999.0}]
    return {nodeid: {"date": "2026-12-01", "metrics": {"throughput": {"history": history}}}}


def test_the_directory_is_named_relative_to_the_rootdir_when_inside_it():
    root = PurePosixPath("/repo")
    inside = Rerun.of("h200", root / "perf" / "baselines", root)
    assert (inside.profile, inside.baseline_dir, inside.emulate) == ("h200", "perf/baselines", None)
    outside = Rerun.of("h200@a100-40gb", PurePosixPath("/data/baselines"), root)
    assert (outside.profile, outside.baseline_dir, outside.emulate) == (
        "h200", "/data/baselines", "a100-40gb")  # fmt: skip


def test_the_command_is_quoted_for_a_posix_shell():
    cmd = rerun_command([NODE], Rerun("h200", "my baselines", "a100-40gb"))
    assert shlex.split(cmd) == [
        "pytest", NODE, "--gpu-profile=h200", "--gpuperf-baseline=compare",
        "--gpuperf-baseline-dir=my baselines", "--gpuperf-emulate=a100-40gb",
    ]  # fmt: skip


def test_a_regressed_line_ends_with_its_reproduce_command():
    rerun = Rerun("h200", "baselines")
    (line,) = failure_lines([_regressed()], _entries(), "h200", None, rerun)
    head, _, cmd = line.partition("; reproduce: ")
    assert head.startswith(f"PERFORMANCE REGRESSION {NODE} throughput:")
    assert head.endswith("; confirmed in a fresh process")
    assert shlex.split(cmd) == ["pytest", NODE, "--gpu-profile=h200",
                                "--gpuperf-baseline=compare", "--gpuperf-baseline-dir=baselines"]  # fmt: skip
    # without a baseline file (no rerun), the line is as it was
    (plain,) = failure_lines([_regressed()], _entries(), "h200")
    assert "reproduce" not in plain and plain == head


def test_a_paired_verdict_names_the_ab_line_with_its_base_commit():
    commit = "0123456789abcdef0123"
    rerun = Rerun("h200", "baselines")
    (line,) = failure_lines([_regressed(paired=commit)], _entries(), "h200", None, rerun)
    ab = line.split("; the paired verdict: ")[1]
    assert shlex.split(ab) == ["gpuperf", "ab", "--base", commit[:12], "--", NODE]
    # the step summary's and `gpuperf compare`'s list: one test's two commands, nothing
    # for a test without a failing verdict
    commands = rerun_commands([_regressed(paired=commit), measured("t.py::ok", 1.0, {})], rerun)
    assert [shlex.split(c)[:2] for c in commands] == [["pytest", NODE], ["gpuperf", "ab"]]


def test_a_paired_verdict_shows_the_rounds_medians_not_the_runs_against_the_history():
    # 1000 -> 900 against the sessions, but the paired rounds measured 950 -> 855: the line's
    # two figures are the ones its -10.00% came from
    r = _regressed(paired="0123456789abcdef0123", base_median=950.0, head_median=855.0)
    # as _apply writes it: no fresh process
    r.verdicts["throughput"] = amend(r.verdicts["throughput"], None, confirmed=None)
    (line,) = failure_lines([r], _entries(), "h200")
    assert "950 tokens/s -> 855 tokens/s (the paired rounds' medians, base build -> this one): " \
        "regressed -10.00%" in line  # fmt: skip
    assert "decided by the paired stage" in line
    (plain,) = failure_lines([_regressed(paired="0123456789abcdef0123")], _entries(), "h200")
    assert "1,000 tokens/s -> 900 tokens/s: regressed" in plain  # no medians recorded


def test_a_first_stage_verdict_the_paired_stage_left_standing_is_not_called_its_own():
    # a checked figure missing from a round: stage 1's confirmed regression stands
    r = _regressed(paired="0123456789abcdef0123", stage1=False)
    rerun = Rerun("h200", "baselines")
    (line,) = failure_lines([r], _entries(), "h200", None, rerun)
    assert "; confirmed in a fresh process" in line and "paired" not in line


def test_a_first_stage_verdict_each_process_pair_bore_out_says_so_and_names_the_ab_line():
    # paired/stage.py _each_pair: noise per process, every pair beyond the tolerance; stage
    # 1's verdict stands, unconfirmed here (--gpuperf-no-confirm): not "NOT re-measured"
    commit = "0123456789abcdef0123"
    r = _regressed(paired=commit, stage1=False, each_pair=[-0.0977, -0.084])
    r.verdicts["throughput"] = amend(r.verdicts["throughput"], None, confirmed=None)
    rerun = Rerun("h200", "baselines")
    (line,) = failure_lines([r], _entries(), "h200", None, rerun)
    assert "NOT re-measured" not in line and "decided by the paired stage" not in line
    assert "1,000 tokens/s -> 900 tokens/s: regressed -10.00%" in line  # stage 1's figures
    assert "; borne out by each process pair of the paired stage, in fresh processes of " \
        "both builds; reproduce: " in line  # fmt: skip
    assert shlex.split(line.split("; the paired verdict: ")[1])[:4] == [
        "gpuperf", "ab", "--base", commit[:12]]  # fmt: skip
    # confirmed too: both said
    r.verdicts["throughput"] = amend(r.verdicts["throughput"], None, confirmed=True)
    (line,) = failure_lines([r], _entries(), "h200")
    assert "; confirmed in a fresh process; borne out by each process pair" in line


def test_the_line_counts_the_sessions_judged_against_since_a_restart():
    (line,) = failure_lines([_regressed()], _entries(), "h200")
    assert ", 3 session(s);" in line and "restart" not in line
    # `gpuperf baseline accept` restarted the history at the third session: two older ones
    # stay in the file, not judged against, and the line counts only the judged one
    history = [{"median": 1000.0}, {"median": 1001.0},
               {"median": 900.0, "restart": {"date": "2026-12-02", "reason": "bigger batch"}}]  # fmt: skip
    entries = {NODE: {"date": "2026-12-02", "metrics": {"throughput": {"history": history}}}}
    (line,) = failure_lines([_regressed()], entries, "h200")
    assert ", 1 session(s) since its restart;" in line, line

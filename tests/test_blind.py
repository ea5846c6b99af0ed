"""Blindness is loud (issue 64, point 1): a judged run that left a gated figure undecided ends
with one line saying how many, the smallest change it could have seen, why and what to do
(terminal, results JSON, markdown); a figure whose level is drawn per process is measured
and named as such; a save says which figures the baseline cannot yet see; --gpuperf-strict
fails such a run; a refused or partial save is a failed item of its own. Exact figures
come from gpu_benchmark.from_samples."""

import json
import math

import pytest

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.verdict import Verdict, from_json
from pytest_gpuperf.measure import hostload  # imported before any in-process run: kept

BENCH = """
import os

import pytest

def test_level(gpu_benchmark):
    level = float(os.environ["LEVEL"])
    gpu_benchmark.from_samples([level * (1 + i * 1e-4) for i in range(9)], work=1, unit="calls")

@pytest.mark.gpuperf(noise_class="bandwidth")
def test_steady(gpu_benchmark):
    s = float(os.environ["SESSION"])
    gpu_benchmark.from_samples([0.01 * (1 + (s + i) * 1e-4) for i in range(9)], work=1,
                               unit="calls")
"""
LEVELS = (0.010, 0.013, 0.008)  # one level per saved process, each measured within ±0.1%
RUN = ["-p", "no:cacheprovider"]


@pytest.fixture
def levels(pytester, monkeypatch):
    """A project whose `test_level` was saved in 3 sessions at 3 levels far apart, each
    measured tightly; `test_steady` the same each session. The save lines, one per save."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makepyfile(test_l=BENCH)
    saves = []
    for i, level in enumerate(LEVELS):
        monkeypatch.setenv("LEVEL", str(level))
        monkeypatch.setenv("SESSION", str(i))
        r = pytester.runpytest(*RUN, "--gpuperf-baseline=save")
        r.assert_outcomes(passed=2)
        saves.append(r.stdout.str())
    monkeypatch.setenv("LEVEL", str(LEVELS[0]))
    monkeypatch.setenv("SESSION", "3")
    return pytester, saves


def _apart() -> str:
    """How far apart the saved levels are, as the run says it: its median throughputs
    (1 / the median sample, the 5th of 9) from their logs."""
    logs = [math.log(1 / (level * (1 + 4e-4))) for level in LEVELS]
    return f"{math.expm1(max(logs) - min(logs)) * 100:.0f}%"


def test_a_run_blind_to_a_figure_ends_with_one_line_in_every_output(levels):
    pytester, _ = levels
    r = pytester.runpytest(*RUN, "--gpuperf-json=r.json", "--gpuperf-markdown=m.md")
    r.assert_outcomes(passed=2)  # blind is not a failure without --gpuperf-strict
    assert r.ret == pytest.ExitCode.OK
    line = ("gpuperf: BLIND to 1 of 2 gated figure(s): the smallest change it could have seen "
            "*% (tolerance 3.0%); why: 1 a level that moves between sessions; to do: more "
            "sessions will not narrow it; larger work per call, gpuperf ab (both builds "
            "alternated) or another measure might*")  # fmt: skip
    r.stdout.fnmatch_lines([line])
    gpuperf_section = r.stdout.str().split("gpuperf results", 1)[1].splitlines()
    assert gpuperf_section[-2].startswith("gpuperf: BLIND")  # the last line before pytest's
    data = json.loads((pytester.path / "r.json").read_text())["blind"]
    assert data["gated"] == 2 and data["counted"] == 1 and data["line"].startswith("gpuperf: BLIND")
    (fig,) = data["figures"]
    assert (fig["key"], fig["metric"], fig["why"]) == ("test_l.py::test_level", "throughput",
                                                       "per-process")  # fmt: skip
    assert fig["detail"].startswith(f"its 3 sessions {_apart()} apart, each within ±")
    assert "**Blind:** gpuperf: BLIND to 1 of 2" in (pytester.path / "m.md").read_text()
    verbose = pytester.runpytest(*RUN, "-v")
    verbose.stdout.fnmatch_lines([f"  undecided: test_l.py::test_level throughput: detects *% "
                                  f"(tol. 3.0%); a level that moves between sessions: its 3 sessions "
                                  f"{_apart()} apart*"])  # fmt: skip


def test_strict_fails_a_blind_run_as_an_item_of_its_own_from_the_flag_or_the_ini(levels):
    pytester, _ = levels
    strict = pytester.runpytest(*RUN, "--gpuperf-strict")
    strict.assert_outcomes(passed=2, failed=1)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines([
        "GATED FIGURES LEFT UNDECIDED (--gpuperf-strict)",
        "  undecided: test_l.py::test_level throughput: *a level that moves between sessions*",
        "FAILED gpuperf::undecided-gate - GATED FIGURES LEFT UNDECIDED (--gpuperf-strict)",
    ])  # fmt: skip
    pytester.makeini("[pytest]\ngpuperf_strict = true\n")
    pytester.runpytest(*RUN).assert_outcomes(passed=2, failed=1)
    pytester.makeini("[pytest]\ngpuperf_strict = maybe\n")
    bad = pytester.runpytest(*RUN)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*gpuperf_strict*use true or false*"])


def test_strict_passes_where_every_gated_figure_was_decided(levels, monkeypatch):
    pytester, _ = levels
    clean = pytester.runpytest(*RUN, "--gpuperf-strict", "-k", "steady")
    clean.assert_outcomes(passed=1)
    assert "BLIND" not in clean.stdout.str()


def test_a_save_names_each_figure_its_baseline_cannot_yet_see(levels):
    _, saves = levels
    first, _, third = saves
    assert ("test_l.py::test_level throughput detects nothing yet (tol. 3.0%; too few "
            "sessions: 1 session(s) saved)") in first  # fmt: skip
    assert "baseline: 1 figure(s) it cannot yet see at their tolerance: " in third
    assert ("test_l.py::test_level throughput detects " in third
            and f"a level that moves between sessions: its 3 sessions {_apart()} apart" in third)  # fmt: skip
    assert "test_steady" not in third.split("cannot yet see", 1)[1]  # it sees that one


def test_a_partial_save_is_a_failed_item_so_the_last_line_is_not_a_clean_pass(levels,
                                                                           monkeypatch):  # fmt: skip
    pytester, _ = levels

    def disturbed(r, workers=0):
        return "too disturbed to be a baseline (test)" if "level" in r.key else None

    monkeypatch.setattr(hostload, "too_disturbed", disturbed)
    r = pytester.runpytest(*RUN, "--gpuperf-baseline=save")
    r.assert_outcomes(passed=2, failed=1)
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.stdout.fnmatch_lines(["*_ baseline save _*",
                            "baseline: saved 1 benchmark(s) *NOT SAVED: 1 test(s) "
                            "test_l.py::test_level: too disturbed*",
                            "FAILED gpuperf::baseline-save - baseline: saved 1 benchmark(s)*"])


def _result(key: str, verdicts: dict, **kw) -> Result:
    r = Result(nodeid=key, metric=None, unit="calls", work_per_call=1.0, **kw)
    r.verdicts = verdicts
    return r


def _v(status: str, reason: str = "", mde: float = 0.2, **kw) -> Verdict:
    return from_json({"status": status, "reason": reason, "mde": mde, "tolerance": 0.03, **kw})


def test_figures_undecided_by_design_are_listed_and_not_counted():
    """A launch-bound wall time beside its kernel time and a derived figure are not counted
    by strict; a kernel time priced out of the paired stage is, with that reason."""
    from pytest_gpuperf.judging.blind import Blindness, blindness

    lb = _result("t::lb", {"throughput": _v("inconclusive"),
                           "throughput_kernels": _v("inconclusive", "x; not re-measured by the "
                                                    "paired stage: its test was left out")},
                 launch_bound=True)  # fmt: skip
    derived = _result("t::d", {"value": _v("inconclusive")}, derived_from="", kind="recorded")
    seen = _result("t::s", {"throughput": _v("unchanged"), "peak_allocated": _v("unchanged")})
    b = blindness([lb, derived, seen], {})
    assert [(f.key, f.metric, f.why) for f in b.figures] == [
        ("t::lb", "throughput", "launch-bound"), ("t::lb", "throughput_kernels", "not-paired"),
        ("t::d", "value", "derived")]  # fmt: skip
    assert [f.metric for f in b.counted] == ["throughput_kernels"] and b.gated == 5
    line = b.line()
    assert line is not None and line.startswith("gpuperf: BLIND to 1 of 3 gated figure(s)")
    assert ("not decided by design, not counted: 1 launch-bound wall time (its GPU kernel "
            "time is the figure gated), 1 derived figure") in line  # fmt: skip
    assert Blindness.from_json(json.loads(json.dumps(b.to_json()))) == b
    quiet = blindness([derived, seen], {})
    assert not quiet.counted and quiet.line().startswith("gpuperf: every gated figure decided")


def test_a_level_per_process_is_told_from_a_noisy_measurement():
    """Sessions far apart with tight intervals: per process; the same medians with
    intervals as wide as their spread: not."""
    from pytest_gpuperf.judging.blind import blindness, per_process

    tight = {"history": [{"median": m, "ci_low": m * 0.999, "ci_high": m * 1.001}
                         for m in (100.0, 130.0, 80.0)]}  # fmt: skip
    wide = {"history": [{"median": m, "ci_low": m * 0.7, "ci_high": m * 1.3}
                        for m in (100.0, 130.0, 80.0)]}  # fmt: skip
    n, between, within, apart = per_process(tight)
    assert n == 3 and between > 40 * within and apart == pytest.approx(130 / 80 - 1)
    r = _result("t::x", {"throughput": _v("inconclusive")})
    assert blindness([r], {"t::x": {"metrics": {"throughput": tight}}}).figures[0].why == \
        "per-process"
    assert blindness([r], {"t::x": {"metrics": {"throughput": wide}}}).figures[0].why == "spread"
    assert per_process({"history": [{"median": 1.0, "ci_low": 0.9, "ci_high": 1.1}]}) is None


def test_the_strict_count_of_runs_5_to_9_in_gating_md_is_what_the_tool_computes(capsys):
    """docs/gating.md states how many of the judged GPU runs 5-9 --gpuperf-strict would have
    failed: tools/strict_evidence.py computes it from their results files."""
    import re
    import runpy
    from pathlib import Path

    root = Path(__file__).parent.parent
    runpy.run_path(str(root / "tools" / "strict_evidence.py"), run_name="__main__")
    out = capsys.readouterr().out
    failed, runs = re.search(r"would have failed (\d+) of (\d+) judged runs", out).groups()
    per_run = re.findall(r"FAILS under --gpuperf-strict: (\d+) of", out)
    gating = " ".join((root / "docs" / "gating.md").read_text().split())
    assert f"strict would have failed **{failed} of {runs}**" in gating
    assert f"(runs 5-9: {', '.join(per_run[:-1])} and {per_run[-1]})" in gating


def test_strict_counts_a_gated_benchmark_with_no_result_this_run(levels, monkeypatch):
    """Found in review: a gated benchmark skipped at run time was MISSING and not counted,
    so --gpuperf-strict passed a run that saw nothing of it."""
    pytester, _ = levels
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_runtest_setup(item):\n"
        "    if 'steady' in item.name:\n"
        "        pytest.skip('not today')\n"
    )
    r = pytester.runpytest(*RUN, "--gpuperf-strict", "-k", "steady")
    r.assert_outcomes(skipped=1, failed=1)
    r.stdout.fnmatch_lines(["*BLIND to 1 of 1 gated figure(s)*why: 1 no result this run*",
                            "FAILED gpuperf::undecided-gate*"])


def test_an_incomparable_figure_and_a_refused_base_are_undecided_and_counted():
    """Found in review: an INCOMPARABLE figure (a unit changed) was not counted by strict,
    and a figure the paired stage did not judge because its base build was off its own
    sessions read 'the paired rounds' spread' (advice: more rounds)."""
    from pytest_gpuperf.judging.blind import blindness

    unit = _result("t::u", {"throughput": _v("incomparable", "unit changed: calls -> items")})
    held = _result("t::b", {"throughput": _v("inconclusive", "wide; not judged by the paired "
                                              "stage: the base build measured -23.00% off",
                                              paired={"rounds": 6,
                                                      "base_check": {"off": -0.23}})})  # fmt: skip
    b = blindness([unit, held], {})
    assert [(f.key, f.why) for f in b.counted] == [("t::u", "incomparable"), ("t::b", "base-off")]
    assert b.gated == 2
    line = b.line()
    assert line is not None and "1 incomparable with its baseline" in line
    assert "1 the base build off its own sessions" in line


def test_the_paired_stages_leaving_a_figure_out_is_read_from_its_trail():
    """A figure the paired stage left out says so by its trail's rule, whatever its reason
    reads; a file written before trails is read by its reason's words, as before."""
    from pytest_gpuperf.core.verdict import Rule, amend
    from pytest_gpuperf.judging.blind import why_undecided

    r = _result("t::k", {})
    first = from_json({"status": "regressed", "reason": "beyond", "tolerance": 0.03,
                       "trail": [{"rule": Rule.LADDER, "stage": "stage 1",
                                  "status": "regressed", "figures": {}}]})  # fmt: skip
    left = amend(first, Rule.LEFT_OUT, "paired stage", status="inconclusive",
                 reason="worded in any way")  # fmt: skip
    assert why_undecided(r, "throughput_kernels", left, {})[0] == "not-paired"
    undecided = amend(first, Rule.LADDER, "paired stage", status="inconclusive",
                      reason="x; not re-measured by the paired stage: words alone")  # fmt: skip
    assert why_undecided(r, "throughput_kernels", undecided, {})[0] != "not-paired"
    old = _v("inconclusive", "x; not checked by the paired stage: its test was left out")
    assert why_undecided(r, "throughput_kernels", old, {})[0] == "not-paired"

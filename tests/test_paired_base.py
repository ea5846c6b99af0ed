"""The paired stage's base must be the baseline (issue 57): a base build that does not
reproduce the level the baseline saved at its commit judges nothing (paired/basecheck.py),
and a confirmed first-stage regression stands as one outside the code. Exact figures
(`gpu_benchmark.from_samples`), so no verdict depends on the runner's load."""

from __future__ import annotations

import json
import subprocess

import pytest

from .gateproject import FAST

# a dependency upgraded, or an environment setting, slows the work: both builds alike
ENV_BENCH = """
import os

def test_step(gpu_benchmark):
    slow = float(os.environ.get("DEPENDENCY_SLOWDOWN", "1"))
    gpu_benchmark.from_samples([0.01 * slow * x for x in (1.0, 1.001, 0.999, 1.0005, 0.9995)],
                               work=64, unit="tokens")
"""

# a gitignored in-place build (an extension) with a slow pure-Python fallback
BUILD_BENCH = """
try:
    import fastbuild as impl  # built in place, ignored by git
except ImportError:
    import fallback as impl

import work

def test_step(gpu_benchmark):
    t = 0.01 * impl.COST * work.FACTOR
    gpu_benchmark.from_samples([t * x for x in (1.0, 1.001, 0.999, 1.0005, 0.9995)],
                               work=64, unit="tokens")
"""


def git(path, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=path,
                   check=True, capture_output=True)  # fmt: skip


def committed(pytester, monkeypatch, bench, **files):
    """A git repository of `bench` (and `files`), committed, with 3 baseline sessions saved
    at that commit."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("DEPENDENCY_SLOWDOWN", raising=False)
    pytester.makepyfile(test_p=bench, **files)
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "base")
    for _ in range(3):
        pytester.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    return pytester


def verdict(pytester):
    data = json.loads((pytester.path / "run.json").read_text())
    return data["results"][0]["verdicts"]["throughput"]


@pytest.mark.slow
def test_a_slowdown_from_outside_the_code_is_a_regression_not_unchanged(pytester, monkeypatch):
    """Issue 57: an environment variable (a dependency's stand-in) made the test 1.5x slower;
    stage 1 said REGRESSED -33.33%, confirmed, and the paired stage, measuring both builds
    under it, UNCHANGED +0.00%, exit 0."""
    repo = committed(pytester, monkeypatch, ENV_BENCH)
    monkeypatch.setenv("DEPENDENCY_SLOWDOWN", "1.5")
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    out = r.stdout.str()
    assert r.ret == pytest.ExitCode.TESTS_FAILED, out
    v = verdict(repo)
    assert v["status"] == "regressed" and v["change"] == pytest.approx(-1 / 3, abs=0.002), v
    assert v["paired"]["base_check"]["off"] == pytest.approx(-1 / 3, abs=0.002), v
    assert "a regression outside the code" in v["reason"], v["reason"]
    line = next(x for x in out.splitlines() if "paired stage against" in x)
    assert "base check: 1 figure(s) not judged, the base build measured -33.3" in line, line
    assert "a change outside the code (environment, dependency, build or install)" in line
    assert "no recorded version differs" in line, line


@pytest.mark.slow
def test_a_build_the_base_worktree_lacks_never_turns_a_regression_into_an_improvement(
        pytester, monkeypatch):  # fmt: skip
    """Issue 57: the base worktree had no in-place build, measured the fallback, and a 30%
    regression read IMPROVED +53.85%, exit 0."""
    pytester.path.joinpath(".gitignore").write_text("fastbuild.py\n")
    repo = committed(pytester, monkeypatch, BUILD_BENCH, fallback="COST = 2.0\n",
                     fastbuild="COST = 1.0\n", work="FACTOR = 1.0\n")  # fmt: skip
    (repo.path / "work.py").write_text("FACTOR = 1.3\n")  # the head: 30% slower
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    out = r.stdout.str()
    assert r.ret == pytest.ExitCode.TESTS_FAILED, out
    v = verdict(repo)
    assert v["status"] == "regressed", v
    assert v["paired"]["base_check"]["off"] == pytest.approx(-0.5, abs=0.002), v
    assert "--gpuperf-paired-setup" in out, out


# ------------------------------------------------------ the stage's setup in the base worktree

INPLACE_BUILD = "python -c \"open('fastbuild.py', 'w').write('COST = 1.0\\n')\""


@pytest.mark.slow
def test_a_setup_builds_the_base_in_place_and_the_stage_then_judges_it(pytester, monkeypatch):
    """--gpuperf-paired-setup runs in the base worktree before its rounds (as gpuperf ab's
    --setup does): with the in-place build made there, the base reproduces its sessions and
    the stage measures the head's 30% regression itself."""
    pytester.path.joinpath(".gitignore").write_text("fastbuild.py\n")
    repo = committed(pytester, monkeypatch, BUILD_BENCH, fallback="COST = 2.0\n",
                     fastbuild="COST = 1.0\n", work="FACTOR = 1.0\n")  # fmt: skip
    (repo.path / "work.py").write_text("FACTOR = 1.3\n")
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-no-confirm",
                       f"--gpuperf-paired-setup={INPLACE_BUILD}")  # fmt: skip
    assert r.ret == pytest.ExitCode.TESTS_FAILED, r.stdout.str()
    v = verdict(repo)
    assert v["status"] == "regressed" and v["stage1"]["status"] == "regressed", v
    assert "base_check" not in v["paired"], v
    assert v["change"] == pytest.approx(-0.3 / 1.3, abs=0.002), v


def test_a_failed_setup_says_so_in_one_line_and_the_first_stage_stands(pytester, monkeypatch):
    repo = committed(pytester, monkeypatch, ENV_BENCH)
    monkeypatch.setenv("DEPENDENCY_SLOWDOWN", "1.5")
    pytester.makeini("[pytest]\ngpuperf_paired_setup = echo no compiler here >&2; exit 3\n")
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-no-confirm")
    out = r.stdout.str()
    assert r.ret == pytest.ExitCode.TESTS_FAILED, out
    line = next(x for x in out.splitlines() if "paired stage against" in x)
    assert ("not measured: --gpuperf-paired-setup 'echo no compiler here >&2; exit 3' failed in "
            "the base worktree (exit 3): no compiler here; the first stage's verdicts stand"
            ) in line, line  # fmt: skip
    v = verdict(repo)
    assert v["status"] == "regressed" and "stage1" not in v, v


SUB_BENCH = """
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent / "lib"))
import work  # the project's code, in the git submodule lib

def test_step(gpu_benchmark):
    t = 0.01 * work.FACTOR
    gpu_benchmark.from_samples([t * x for x in (1.0, 1.001, 0.999, 1.0005, 0.9995)],
                               work=64, unit="tokens")
"""


@pytest.mark.slow
def test_code_in_a_submodule_needs_a_setup_and_the_line_names_the_submodule(
        pytester, monkeypatch, tmp_path_factory):  # fmt: skip
    """Issue 57: the base worktree of a project whose code lives in a git submodule has it
    empty, and the stage's line blamed pytest.console_main()'s deprecation."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # a submodule cloned from a local path
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "always")
    sub = tmp_path_factory.mktemp("libsrc")
    sub.joinpath("work.py").write_text("FACTOR = 1.0\n")
    git(sub, "init", "-q")
    git(sub, "add", "-A")
    git(sub, "commit", "-qm", "lib")
    git(pytester.path, "init", "-q")
    git(pytester.path, "submodule", "add", "-q", str(sub), "lib")
    repo = committed(pytester, monkeypatch, SUB_BENCH)
    (repo.path / "lib" / "work.py").write_text("FACTOR = 1.3\n")  # the head: 30% slower
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-no-confirm")
    line = next(x for x in r.stdout.str().splitlines() if "paired stage against" in x)
    assert "the base worktree's submodule(s) lib are not checked out" in line, line
    assert "console_main" not in line, line
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-no-confirm",
                       "--gpuperf-paired-setup=git submodule update --init -q")  # fmt: skip
    v = verdict(repo)
    assert v["status"] == "regressed" and v["stage1"]["status"] == "regressed", (
        v, r.stdout.str())


def test_a_setup_that_outlasts_the_stages_budget_is_stopped_in_one_line(tmp_path):
    """Found in review: --gpuperf-paired-setup had no time limit, so a setup that hangs
    hung the run. It gets the stage's budget; past it the command's process group is
    stopped and the stage says so in one line (stage 1 stands)."""
    from pytest_gpuperf.fresh.abtree import run_setup
    from pytest_gpuperf.judging.abjudge import ABError

    with pytest.raises(ABError) as err:
        run_setup("sleep 60", tmp_path, "--gpuperf-paired-setup", 0.5)
    assert str(err.value) == ("--gpuperf-paired-setup 'sleep 60' did not end within 0.5 s in "
                              "the base worktree (stopped)")  # fmt: skip
    run_setup("true", tmp_path, "--gpuperf-paired-setup", 30)  # in time: nothing said

"""`gpuperf bisect` (cli/bisect.py) on git repositories of made-up commits. The test under
bisection reports exact figures (`gpu_benchmark.from_samples`), so no timing luck is
involved: a commit is 5% slower because its module says so."""

import json
import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_gpuperf.cli.bisect import Builds, Measurer, choose_figure, commit_range
from pytest_gpuperf.cli.main import main
from pytest_gpuperf.judging.bisection import BisectError, Skip

TEST = """
import lib

def test_x(gpu_benchmark):
    gpu_benchmark.from_samples([lib.LEVEL] * 5, work=1, unit="calls")
"""


def git(path, *args):
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True).stdout


def commit(path, message, level=None, extra=""):
    if level is not None:
        (path / "lib.py").write_text(f"LEVEL = {level!r}\n{extra}")
    else:
        (path / "notes.txt").write_text(message + "\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", message)
    return git(path, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("PYTHONPATH", ".")
    path = tmp_path / "proj"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "dev@example.invalid")
    git(path, "config", "user.name", "Dev")
    (path / "test_x.py").write_text(TEST)
    commit(path, "good", 0.01)
    monkeypatch.chdir(path)
    return path


def workers_of(repo):
    """The round workers still running whose import proof watches `repo` (their pids)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc.name.isdigit() and b"gpuperf_rounds_worker" in (proc / "cmdline").read_bytes()
                    and str(repo.resolve()).encode() in (proc / "environ").read_bytes()):
                found.append(proc.name)
        except OSError:
            continue
    return found


def bisect_cli(path, *args):
    return subprocess.run([sys.executable, "-m", "pytest_gpuperf", "bisect", *args],
                          cwd=path, capture_output=True, text=True)  # fmt: skip


def err(capsys, *argv):
    code = main(["bisect", *argv])
    return code, capsys.readouterr().err


def test_a_dirty_tree_is_refused_saying_so(repo, capsys):
    commit(repo, "second")
    (repo / "lib.py").write_text("LEVEL = 0.02\n")
    code, said = err(capsys, "--good", "HEAD~1", "--", "test_x.py")
    assert code == 2
    assert "uncommitted changes to 1 tracked file(s): bisect measures commits only" in said
    assert "(refused)" in said


def test_a_shallow_clone_is_one_line_naming_git_fetch_unshallow(repo, tmp_path, capsys, monkeypatch):
    for i in range(3):
        commit(repo, f"c{i}")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True)
    monkeypatch.chdir(clone)
    code, said = err(capsys, "--good", "HEAD~2", "--", "test_x.py")
    assert code == 2 and len(said.strip().splitlines()) == 1
    assert "shallow clone" in said and "git fetch --unshallow" in said


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--good", "nope", "--", "test_x.py"], "ref 'nope' does not exist"),
        (["--good", "HEAD", "--", "test_x.py"], "are the same commit"),
        (["--good", "HEAD", "--bad", "HEAD~1", "--", "test_x.py"], "is not an ancestor of --bad HEAD~1"),
        (["--good", "HEAD~1"], "name the tests after --"),
        (["--good", "HEAD~1", "--rounds", "1", "--", "test_x.py"], "--rounds must be between 2 and"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(repo, capsys, argv, message):
    commit(repo, "second")
    code, said = err(capsys, *argv)
    assert code == 2 and message in said and len(said.strip().splitlines()) == 1


def test_merges_are_first_parent_by_default_and_entered_with_all_parents(repo):
    good = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-qb", "side")
    side = [commit(repo, f"side {i}") for i in range(2)]
    git(repo, "checkout", "-q", "-")
    main_one = commit(repo, "main one", 0.01, "# main\n")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = git(repo, "rev-parse", "HEAD").strip()
    _, first = commit_range(repo, good, "HEAD", all_parents=False)
    assert first == [good, main_one, merge]
    _, every = commit_range(repo, good, "HEAD", all_parents=True)
    assert set(every) == {good, main_one, merge, *side} and every[0] == good and every[-1] == merge


def test_an_unfinished_state_is_not_overwritten_without_resume(repo, capsys):
    commit(repo, "second")
    state = repo / ".git" / "gpuperf-bisect-state.json"
    state.write_text(json.dumps({"key": {}, "finished": False, "engine": {}}))
    code, said = err(capsys, "--good", "HEAD~1", "--", "test_x.py")
    assert code == 2 and "unfinished bisection's state" in said and "--resume" in said
    code, said = err(capsys, "--good", "HEAD~1", "--resume", "--", "test_x.py")
    assert code == 2 and "of another bisection" in said
    assert json.loads(state.read_text())["finished"] is False  # left as it was


def test_the_figure_bisected_is_the_one_that_moved_most():
    a = {("t::x", "throughput"): (100.0, "calls/s", True), ("t::y", "throughput"): (50.0, "calls/s", True)}
    b = {("t::x", "throughput"): (99.0, "calls/s", True), ("t::y", "throughput"): (40.0, "calls/s", True)}
    assert choose_figure([(b, a), (b, a)])["key"] == "t::y"
    # a figure of 0 (a copy's peak memory: 0 B) has no ratio: never chosen, never a crash
    # (found on an H200: ZeroDivisionError)
    zero = {("t::x", "peak_allocated"): (0.0, "bytes", False)}
    assert choose_figure([({**b, **zero}, {**a, **zero})])["key"] == "t::y"
    with pytest.raises(BisectError, match="no figure in common"):
        choose_figure([({}, a)])


@pytest.mark.slow
def test_a_culprit_is_named_a_broken_commit_skipped_a_budget_and_a_kill_resumed(repo):
    c1 = commit(repo, "make it 5% slower", 0.0105)
    broken = commit(repo, "break the import", 0.0105, "import no_such_module_62\n")
    commit(repo, "fix the import", 0.0105)
    commit(repo, "bad", 0.0105, "# bad\n")
    # a budget spent by the first measurement: stopped before the first probe, the whole range
    stopped = bisect_cli(repo, "--good", "HEAD~4", "--rounds", "2", "--budget", "1", "--", "test_x.py")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "the budget ran out" in stopped.stdout and "not reached: after" in stopped.stdout
    assert "(4 commits)" in stopped.stdout
    # resumed with a budget that the next measurement, priced at the costs the state holds
    # (set here: a build's processes start in 50 s), cannot hold: none is started
    state = repo / ".git" / "gpuperf-bisect-state.json"
    saved = json.loads(state.read_text())
    assert saved["costs"]["start_s"] > 0
    saved["costs"] = {"prep_s": 1.0, "start_s": 50.0, "first_s": 2.0, "round_s": 1.0}
    state.write_text(json.dumps(saved))
    held = bisect_cli(repo, "--good", "HEAD~4", "--rounds", "2", "--budget", "30", "--resume", "--", "test_x.py")
    assert held.returncode == 0, held.stdout + held.stderr
    assert "0 measurement(s) in this run, 0 pytest process(es) started" in held.stdout
    assert "not reached: after" in held.stdout and "(4 commits)" in held.stdout
    # resumed, then stopped by SIGTERM after the probe's first measurement: exit 143, no
    # worktree left, the state kept unfinished
    proc = subprocess.Popen([sys.executable, "-m", "pytest_gpuperf", "bisect", "--good", "HEAD~4",
                             "--rounds", "2", "--resume", "--", "test_x.py"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(json.loads(state.read_text())["engine"]["pairs"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, said = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "stopped by SIGTERM" in said and "--resume goes on" in said
    assert len(git(repo, "worktree", "list").splitlines()) == 1 and not workers_of(repo)
    assert json.loads(state.read_text())["finished"] is False
    # resumed: what was measured is not measured again; the culprit is named
    r = bisect_cli(repo, "--good", "HEAD~4", "--rounds", "2", "--resume", "--json", "b.json",
                   "--markdown", "b.md", "--", "test_x.py")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming from" in r.stdout and "estimate: about 2 probe(s)" in r.stdout
    assert f"culprit: {c1[:12]} 'make it 5% slower' (Dev, " in r.stdout and "-4.76% ±0.00% REGRESSED" in r.stdout
    report = json.loads((repo / "b.json").read_text())
    assert [c["commit"] for c in report["culprits"]] == [c1]
    assert report["culprits"][0]["subject"] == "make it 5% slower" and report["culprits"][0]["change"] == pytest.approx(-1 / 21)
    assert "no_such_module_62" in report["skipped"][broken]
    # at most: the probe against good and bad, the broken one once (less what the killed run got)
    assert 1 <= report["measurements"] <= 2
    assert set(report) >= {"culprits", "probes", "undecided"} and not report["undecided"]
    good = git(repo, "rev-parse", "HEAD~4").strip()
    assert f"reproduce: git checkout {c1[:12]} && gpuperf ab --base {good[:12]} --rounds 2 -- test_x.py" in r.stdout
    assert "| culprit |" in (repo / "b.md").read_text()
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # every worktree removed


@pytest.mark.slow
def test_good_and_bad_that_measure_the_same_say_the_change_is_not_in_the_code(repo):
    commit(repo, "a comment", 0.01, "# nothing\n")
    r = bisect_cli(repo, "--good", "HEAD~1", "--rounds", "2", "--", "test_x.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the change is not in the code between them" in r.stdout and "culprit:" not in r.stdout
    assert "estimate" not in r.stdout  # no probe: nothing walked


def test_from_a_failed_gate_s_results_takes_its_regressed_tests_and_the_baseline_s_commit(project, monkeypatch, capsys):
    from pytest_gpuperf.cli.bisect import from_results

    from .gateproject import FAST, saved

    path = project.path
    git(path, "init", "-q")
    git(path, "config", "user.email", "dev@example.invalid")
    git(path, "config", "user.name", "Dev")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "good")
    good = git(path, "rev-parse", "HEAD").strip()
    saved(project, times=3)  # sessions saved at the good commit
    bad = commit(path, "later")
    monkeypatch.setenv("SLOW", "0.5")
    project.runpytest(*FAST, "--gpuperf-json=gate.json", "--gpuperf-no-confirm", "--gpuperf-paired=off")
    assert from_results(path / "gate.json") == (good, bad, ["test_b.py::test_spin"])
    monkeypatch.setenv("SLOW", "0")
    project.runpytest(*FAST, "--gpuperf-json=pass.json", "--gpuperf-paired=off")
    with pytest.raises(BisectError, match="no test regressed: nothing to bisect"):
        from_results(path / "pass.json")
    monkeypatch.chdir(path)
    capsys.readouterr()
    code, said = err(capsys, "--from", "pass.json")
    assert code == 2 and "gpuperf bisect: results file pass.json: no test regressed" in said


class StubBuilds(Builds):
    """Builds whose rounds give set figures: good "g", bad "b", a probe "p"."""

    def __init__(self, figures):
        self.ends, self.figures = ("g", "b"), figures

    def one(self, commit, slot):
        return self.figures[commit]


FIG = {"key": "t.py::t", "metric": "throughput", "unit": "calls/s", "higher": True}


def figs(value, unit="calls/s", higher=True):
    return {("t.py::t", "throughput"): (value, unit, higher)}


@pytest.mark.parametrize(
    ("probe", "why"),
    [
        ({}, "its test gave no figure t.py::t throughput"),
        (figs(0.0), "its figure t.py::t throughput is 0.0, not a positive number"),
        (figs(5.0, "ms", False), "its figure t.py::t throughput is in 'ms', higher is not better, not as bisected ('calls/s'): never converted"),
    ],
)
def test_a_probe_without_a_comparable_figure_is_skipped_the_good_one_is_an_error(probe, why):
    m = Measurer(StubBuilds({"g": figs(10.0), "b": figs(9.5), "p": probe}), dict(FIG), lambda _: None)
    with pytest.raises(Skip, match=re.escape(why)):
        m("p", "g", 2)
    m = Measurer(StubBuilds({"g": probe, "b": figs(9.5)}), dict(FIG), lambda _: None)
    with pytest.raises(BisectError, match=re.escape(f"the good commit g cannot be measured: {why}")):
        m("b", "g", 2)


def test_the_rounds_alternate_their_order_and_give_log_ratios():
    order = []

    class Logged(StubBuilds):
        def one(self, commit, slot):
            order.append((commit, slot))
            return super().one(commit, slot)

    m = Measurer(Logged({"g": figs(10.0), "b": figs(9.5)}), None, lambda _: None)
    assert m("b", "g", 3) == [pytest.approx(math.log(0.95))] * 3
    assert [c for c, _ in order] == ["b", "g", "g", "b", "b", "g"] and m.figure == FIG


PID_TEST = """
import os

import lib

with open(os.environ["BISECT_PIDS"], "a") as fh:  # once per process: its collection
    fh.write(f"{os.getpid()}\\n")


def test_x(gpu_benchmark):
    gpu_benchmark.from_samples([lib.LEVEL] * 5, work=1, unit="calls")
"""


@pytest.mark.slow
def test_a_walk_starts_each_build_s_processes_once(repo, tmp_path, monkeypatch):
    """Every pytest process the walk started lists its pid when it collects the test: each
    build measured started its 2 processes once (a round used to be a fresh process a
    side: 2 a round), and each of them measured several rounds; none is left running."""
    pids = tmp_path / "pids.txt"
    monkeypatch.setenv("BISECT_PIDS", str(pids))
    (repo / "test_x.py").write_text(PID_TEST)
    commit(repo, "list the pids", 0.01)
    c3 = None
    for i in range(1, 6):
        c = commit(repo, f"c{i}", 0.0105 if i >= 3 else 0.01, f"# c{i}\n")
        c3 = c3 or (c if i == 3 else None)
    r = bisect_cli(repo, "--good", "HEAD~5", "--rounds", "2", "--json", "b.json", "--", "test_x.py")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads((repo / "b.json").read_text())
    assert [c["commit"] for c in report["culprits"]] == [c3]
    started = pids.read_text().split()
    builds = [p for p in report["probes"] if "skipped" not in p] + [{"commit": "good"}]
    rounds = sum(p[k]["rounds"] for p in report["probes"] for k in ("vs_good", "vs_bad") if k in p)
    assert len(started) == len(set(started)) == 2 * len(builds) == report["processes"]
    assert 2 * rounds >= 2 * len(started)  # each process measured 2 rounds or more
    assert f"{report['processes']} pytest process(es) started" in r.stdout
    assert not workers_of(repo)
    assert len(git(repo, "worktree", "list").splitlines()) == 1

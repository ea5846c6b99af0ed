"""`gpuperf ab`: base and head interleaved on one machine, judged by a paired statistic.
Real git repositories and real pytest processes; the virtual clock makes times exact."""

import json
import subprocess
import sys

import pytest

from . import vclock

FAST = ["--gpuperf-min-time=0.02", "--gpuperf-max-time=0.4", "--gpuperf-warmup-time=0"]

BENCH = """
from vclock import spin

def test_spin(gpu_benchmark):
    gpu_benchmark(lambda: spin(0.002), work=64, unit="tokens")
"""


def git(path, *args):
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


@pytest.fixture
def repo(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    vclock.add_to(pytester)
    pytester.makepyfile(test_b=BENCH)
    git(pytester.path, "init", "-q")
    git(pytester.path, "config", "user.email", "ci@example.invalid")
    git(pytester.path, "config", "user.name", "ci")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "base")
    return pytester


def ab(path, *args, rounds=3):
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "ab", "--base", "HEAD", "--rounds", str(rounds),
         *args, "--", "test_b.py", *FAST],
        cwd=path, capture_output=True, text=True,
    )  # fmt: skip


def test_identical_base_and_head_pass(repo):
    r = ab(repo.path, "--json", "ab.json", "--markdown", "ab.md")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "UNCHANGED  test_b.py::test_spin  throughput" in r.stdout
    assert "head: HEAD " in r.stdout  # a clean tree: the commit is compared
    report = json.loads((repo.path / "ab.json").read_text())
    assert report["rounds"] == 3 and report["verdicts"]["test_b.py::test_spin"]["throughput"]["status"] == "unchanged"
    assert len(report["values"]["test_b.py::test_spin"]["throughput"]["base"]) == 3
    assert "## gpuperf A/B:" in (repo.path / "ab.md").read_text()
    # interleaved: each round runs both sides, in alternating order
    order = [line.split(":")[0] for line in r.stderr.splitlines() if line.startswith("round")]
    assert order == ["round 1/3 base", "round 1/3 head", "round 2/3 head", "round 2/3 base", "round 3/3 base", "round 3/3 head"]
    assert not (repo.path / "baselines").exists()  # nothing written to baselines
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=repo.path, capture_output=True, text=True)
    assert len(worktrees.stdout.splitlines()) == 1  # the base worktree was removed


def test_a_five_percent_slower_head_is_flagged(repo):
    repo.makepyfile(test_b=BENCH.replace("spin(0.002)", "spin(0.0021)"))
    r = ab(repo.path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSED  test_b.py::test_spin  throughput" in r.stdout and "-4.76%" in r.stdout
    assert "uncommitted changes to 1 file(s)" in r.stdout  # says what is compared
    assert ab(repo.path, "--warn-only").returncode == 0


def test_a_benchmark_missing_at_the_base_is_new(repo):
    repo.makepyfile(test_b=BENCH + "\n\ndef test_more(gpu_benchmark):\n    gpu_benchmark(lambda: spin(0.001))\n")
    r = ab(repo.path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "NEW        test_b.py::test_more" in r.stdout


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (None, ["--base", "no-such-ref"], "base ref 'no-such-ref' does not exist"),
        (None, ["--base", "HEAD", "--rounds", "1"], "--rounds must be at least 2"),
        ("nogit", ["--base", "HEAD"], "is not in a git repository"),
        (None, ["--base", "HEAD", "--setup", "exit 3"], "--setup 'exit 3' failed in the base worktree"),
    ],
)
def test_bad_input_exits_2(repo, tmp_path, setup, args, message):
    cwd = repo.path
    if setup == "nogit":
        cwd = tmp_path
    r = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "ab", *args, "--", "test_b.py", *FAST],
        cwd=cwd, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_a_side_that_cannot_run_is_exit_2_with_its_output(repo):
    repo.makepyfile(test_b="import nonexistent_module_xyz\n")  # the head cannot even collect
    r = ab(repo.path)
    assert r.returncode == 2
    assert "head round 1: pytest exited 2 without results" in r.stderr
    assert "nonexistent_module_xyz" in r.stderr

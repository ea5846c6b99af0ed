"""core.gitcmd: the plugin's short git questions, asked in real repositories."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from pytest_gpuperf.core import gitcmd


def _repo(tmp_path: Path) -> tuple[Path, str]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "a")
    return tmp_path, git("rev-parse", "HEAD")


def test_a_folder_not_made_yet_is_asked_in_its_nearest_existing_one(tmp_path: Path) -> None:
    repo, head = _repo(tmp_path)
    assert gitcmd.out(repo / "baselines" / "not-yet", "rev-parse", "HEAD") == head
    assert gitcmd.ok(repo, "cat-file", "-e", f"{head}^{{commit}}")
    assert not gitcmd.ok(repo, "cat-file", "-e", f"{'0' * 40}^{{commit}}")
    assert gitcmd.status(repo, "diff", "--quiet", "HEAD") == 0


def test_a_failed_or_empty_answer_reads_as_none(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path)
    assert gitcmd.out(repo, "rev-parse", "no-such-ref") is None
    assert gitcmd.out(repo, "tag", "--list") is None  # answered, but empty


def test_without_git_every_question_goes_unanswered(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    repo, _ = _repo(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert gitcmd.run(repo, "status") is None
    assert gitcmd.out(repo, "rev-parse", "HEAD") is None
    assert not gitcmd.ok(repo, "status")
    assert gitcmd.status(repo, "status") is None


def test_call_runs_in_the_repository_and_gives_a_failure_back(tmp_path: Path) -> None:
    repo, head = _repo(tmp_path)
    done = gitcmd.call(repo, "rev-parse", "HEAD")
    assert (done.returncode, done.stdout.strip()) == (0, head)
    failed = gitcmd.call(repo, "rev-parse", "--verify", "no-such-ref")
    assert failed.returncode != 0 and failed.stderr  # the caller says what failed


def test_call_lets_a_missing_git_and_a_hang_through(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Unlike the short questions, a worktree build's git error is the caller's to report."""
    repo, _ = _repo(tmp_path)
    monkeypatch.setattr(gitcmd, "BUILD_S", 1e-9)
    with pytest.raises(subprocess.TimeoutExpired):
        gitcmd.call(repo, "status")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError):
        gitcmd.call(repo, "status")


def _runs_git(tree: ast.AST) -> list[int]:
    """The lines of a list or tuple literal that begins with the string "git": a command
    line handed to a subprocess."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.List | ast.Tuple)
        and node.elts
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "git"
    ]


def test_git_runs_from_core_gitcmd_only() -> None:
    """One git wrapper: every git command line of the package is spelled in core/gitcmd.py;
    the rest call it (its short questions, or `call` for the worktree builds)."""
    assert _runs_git(ast.parse('subprocess.run(["git", *args], cwd=repo)')) == [1]
    package = Path(gitcmd.__file__).resolve().parent.parent
    found = {
        str(path.relative_to(package)): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := _runs_git(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert list(found) == ["core/gitcmd.py"], found

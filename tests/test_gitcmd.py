"""core.gitcmd: the plugin's short git questions, asked in real repositories."""

from __future__ import annotations

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

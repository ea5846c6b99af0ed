"""The baseline file on disk (baseline/store.py): file checks, size limit, lock, atomic save."""

import json
import multiprocessing
import os
import shutil
import stat
import subprocess

import pytest

from pytest_gpuperf.baseline.schema import BaselineError
from pytest_gpuperf.baseline.store import load, save

from .inputs import ROOT, need
from .reportdata import GOOD, baseline_json, entry, history, update


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(GOOD))
    path.chmod(0)
    with pytest.raises(BaselineError, match="cannot be read"):
        load(path)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_a_directory_in_place_of_the_file(tmp_path):
    (tmp_path / "h200.json").mkdir()
    with pytest.raises(BaselineError, match="is not a regular file"):
        load(tmp_path / "h200.json")


def _saver(args):
    path, worker = args
    for i in range(5):
        save(path, "cpu", update(f"w{worker}::{i}", float(worker * 10 + i)), now=f"{worker}-{i}")


def test_concurrent_saves_from_processes_lose_nothing(tmp_path):
    path = tmp_path / "cpu.json"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.map(_saver, [(path, w) for w in range(4)])
    b = load(path)
    assert len(b.entries) == 20
    assert b.entries["w3::4"]["metrics"]["throughput"]["median"] == 34.0
    assert not list(tmp_path.glob(".cpu.json.*.tmp"))  # no temporary files left behind


def test_a_save_writes_through_a_symlink_keeps_unknown_keys_and_the_mode(tmp_path):
    real = tmp_path / "shared" / "h200.json"
    real.parent.mkdir()
    data = baseline_json("h200", {"k": entry()}, comment="owned by the perf team")
    data["entries"]["k"]["owner"] = "alice"
    real.write_text(json.dumps(data))
    real.chmod(0o664)
    link = tmp_path / "h200.json"
    link.symlink_to(real)
    save(link, "h200", {"k": entry(median=101.0), "new": entry()}, now="2")
    assert link.is_symlink() and os.readlink(link) == str(real)
    written = json.loads(real.read_text())
    assert written["comment"] == "owned by the perf team"
    assert written["entries"]["k"]["owner"] == "alice"
    assert len(written["entries"]["k"]["metrics"]["throughput"]["history"]) == 2
    assert stat.S_IMODE(real.stat().st_mode) == 0o664


def test_a_new_baseline_file_is_readable_by_the_team(tmp_path):
    old = os.umask(0o022)
    try:
        save(tmp_path / "cpu.json", "cpu", {"k": entry()}, now="1")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "cpu.json").stat().st_mode) == 0o644


def test_special_files_are_refused_without_reading_them(tmp_path):
    fifo = tmp_path / "cpu.json"
    os.mkfifo(fifo)  # opening it would block until a writer came
    with pytest.raises(BaselineError, match="is not a regular file"):
        load(fifo)
    for dev in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(BaselineError, match="is not a regular file"):
            load(dev)


def test_a_file_over_the_size_limit_is_refused_fast(tmp_path, monkeypatch):
    import pytest_gpuperf.baseline.store as baselines

    monkeypatch.setattr(baselines, "MAX_BYTES", 1000)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(baseline_json("cpu", {f"k{i}": entry() for i in range(20)})))
    with pytest.raises(BaselineError, match=r"is 5\.8 KiB, over the 1000 B limit"):
        load(path)


def test_stale_temporary_files_are_cleaned(tmp_path):
    stale = tmp_path / ".cpu.json.abc123.tmp"
    stale.write_text("x" * 1000)
    other = tmp_path / ".h200.json.abc.tmp"  # another file's: not ours to touch
    other.write_text("y")
    save(tmp_path / "cpu.json", "cpu", {"k": entry()}, now="1")
    assert not stale.exists() and other.exists()
    assert load(tmp_path / "cpu.json") is not None
    # the lock is hidden beside the file, not a visible cpu.json.lock
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cpu.json.lock", ".h200.json.abc.tmp", "cpu.json"]


def test_the_lock_and_temporary_files_are_ignored_by_git():
    """They never reach a commit: the checkout's .gitignore names them."""
    checkout = (ROOT / ".git").exists() and (ROOT / ".gitignore").is_file() and shutil.which("git")
    need(checkout, "a git checkout with its .gitignore (the sdist has none)")
    check = subprocess.run(
        ["git", "check-ignore", "baselines/.cpu.json.lock", "baselines/.cpu.json.x1.tmp"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.stdout.split() == ["baselines/.cpu.json.lock", "baselines/.cpu.json.x1.tmp"]


def test_a_dangling_baseline_symlink_creates_no_directories(tmp_path):
    """A save through a link to a path whose directory does not exist made that directory
    (anywhere on disk); it is refused, and nothing is created."""
    target = tmp_path / "elsewhere" / "deep" / "cpu.json"
    link = tmp_path / "baselines" / "cpu.json"
    link.parent.mkdir()
    os.symlink(target, link)
    entry = history([1.0])["t.py::test_x::lat"]
    with pytest.raises(BaselineError, match=r"is a symbolic link to .*whose directory does not exist"):
        save(link, "cpu", {"t.py::test_x::lat": entry}, now="1")
    assert not (tmp_path / "elsewhere").exists()

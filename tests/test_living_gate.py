"""Living with the gate (docs/gating.md): an intended change accepted (`gpuperf baseline
accept`), what a baseline holds (`show`), and two branches' saves merged (`merge` and git's
merge driver, in a real git repository). CPU only: the benchmarks run on the virtual clock
(tests/gateproject.py), so every verdict here is the same on any machine."""

import json
import os
import subprocess
import sys

import pytest

from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.cli.main import main as gpuperf_main

from .gateproject import FAST, saved

SPIN = "test_b.py::test_spin"


def baseline(project):
    return json.loads((project.path / "baselines" / "cpu.json").read_text())


def spin_history(project):
    return baseline(project)["entries"][SPIN]["metrics"]["throughput"]["history"]


def slow_run(project, monkeypatch, slow, name, *extra):
    monkeypatch.setenv("SLOW", slow)
    return project.runpytest(*FAST, f"--gpuperf-json={name}", *extra)


def accept(*args):
    return gpuperf_main(["baseline", "accept", *map(str, args)])


def test_an_intended_slowdown_accepted_restarts_the_history(project, monkeypatch, capsys):
    saved(project, times=3)
    monkeypatch.setenv("USER", "alice")  # who accepts where git has no user.name:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(project.path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    r = slow_run(project, monkeypatch, "0.5", "slow.json")
    r.stdout.fnmatch_lines(["REGRESSED *test_b.py::test_spin *throughput*"])
    before = spin_history(project)
    assert accept("--from", "slow.json", "--all-regressed", "--reason", "bigger default batch") == 0
    out = capsys.readouterr().out
    assert "accepted 1 figure(s) of 1 test(s)" in out and "bigger default batch" in out
    hist = spin_history(project)
    assert hist[:-1] == before  # the old sessions are kept, never judged again
    rec = hist[-1]["restart"]
    assert rec["reason"] == "bigger default batch" and rec["who"] == "alice" and rec["date"]
    assert "commit" in rec and "forced" not in rec
    # the accepted run's figure is the restarted history's first session
    run = json.loads((project.path / "slow.json").read_text())
    figure = next(x for x in run["results"] if x["nodeid"] == SPIN)["throughput"]["median"]
    assert hist[-1]["median"] == pytest.approx(figure) and hist[-1]["session"] == run["session_id"]
    # test_other was not regressed: its history is untouched
    assert all("restart" not in h for h in baseline(project)["entries"]["test_b.py::test_other"]["metrics"]["throughput"]["history"])

    # the next runs at the new level are judged against it alone, and say so
    save = slow_run(project, monkeypatch, "0.5", "s2.json", "--gpuperf-baseline=save")
    save.assert_outcomes(passed=2)
    same = slow_run(project, monkeypatch, "0.5", "same.json")
    same.assert_outcomes(passed=2)
    day = rec["date"][:10]
    same.stdout.fnmatch_lines([f"UNCHANGED *test_b.py::test_spin *throughput*history restarted on {day}: bigger default batch*"])
    verdict = next(x for x in json.loads((project.path / "same.json").read_text())["results"] if x["nodeid"] == SPIN)["verdicts"]["throughput"]
    assert verdict["restarted"] == f"history restarted on {day}: bigger default batch"
    assert verdict["basis"].endswith(verdict["restarted"])
    # a slowdown from the new level regresses, and the failure line names the restart
    worse = slow_run(project, monkeypatch, "1.0", "worse.json", "--gpuperf-no-confirm")
    worse.stdout.fnmatch_lines([f"PERFORMANCE REGRESSION test_b.py::test_spin throughput: *from its own 2 sessions*history restarted on {day}: bigger default batch*"])


def test_accept_refuses_an_inconclusive_or_busy_result_unless_forced(project, monkeypatch, capsys):
    saved(project, times=3)
    slow_run(project, monkeypatch, "0.5", "slow.json").stdout.fnmatch_lines(["REGRESSED *test_spin*"])
    data = json.loads((project.path / "slow.json").read_text())
    spin = next(x for x in data["results"] if x["nodeid"] == SPIN)
    spin["verdicts"]["throughput"]["status"] = "inconclusive"
    (project.path / "inc.json").write_text(json.dumps(data))
    before = (project.path / "baselines" / "cpu.json").read_bytes()
    assert accept(SPIN, "--from", "inc.json", "--reason", "x") == 1
    assert "refused: test_b.py::test_spin throughput: inconclusive in that run" in capsys.readouterr().err
    spin["verdicts"]["throughput"]["status"] = "regressed"
    spin["host"] = {"load1": 9.0, "cores": 2, "steal": 0.0, "busy": True}
    (project.path / "busy.json").write_text(json.dumps(data))
    assert accept(SPIN, "--from", "busy.json", "--reason", "x") == 1
    assert "measured on a busy host" in capsys.readouterr().err
    assert (project.path / "baselines" / "cpu.json").read_bytes() == before  # nothing written
    # a CPU run under pytest-xdist with 2 workers: refused as a save refuses it
    spin["host"] = None
    data["xdist_workers"] = 2
    (project.path / "xdist.json").write_text(json.dumps(data))
    assert accept(SPIN, "--from", "xdist.json", "--reason", "x") == 1
    assert ("refused: test_b.py::test_spin throughput: too disturbed to be a baseline: measured "
            "on the CPU beside 1 other pytest-xdist worker(s)") in capsys.readouterr().err
    assert (project.path / "baselines" / "cpu.json").read_bytes() == before
    # measured while another process used the GPU: a save leaves it out, so does accept
    data["xdist_workers"] = 0
    spin["gpu_shared"] = {"processes": [{"pid": 4242, "used_memory": 1 << 30}]}
    (project.path / "shared.json").write_text(json.dumps(data))
    assert accept(SPIN, "--from", "shared.json", "--reason", "x") == 1
    assert ("refused: test_b.py::test_spin throughput: measured while another process used "
            "the GPU (gpu-shared)") in capsys.readouterr().err
    assert (project.path / "baselines" / "cpu.json").read_bytes() == before
    assert accept(SPIN, "--from", "busy.json", "--reason", "known busy runner", "--force") == 0
    rec = spin_history(project)[-1]["restart"]
    assert rec["forced"] == ["test_b.py::test_spin throughput: too disturbed to be a baseline: "
                             "measured on a busy host (load average 9 on 2 cores, 0.0% CPU steal)"]


def test_accept_takes_an_improvement_only_where_something_re_measured_it(project, monkeypatch, capsys):
    """An IMPROVED that neither the fresh process nor the paired stage measured again is
    refused (--force overrides): one run's luck taken into a baseline ratchets its noise
    in. One the paired stage decided against the baseline's commit is taken."""
    saved(project, times=3)
    slow_run(project, monkeypatch, "0.5", "slow.json")
    data = json.loads((project.path / "slow.json").read_text())
    spin = next(x for x in data["results"] if x["nodeid"] == SPIN)
    spin["verdicts"]["throughput"].update(status="improved", confirmed=None, stage1=None, paired=None)
    (project.path / "once.json").write_text(json.dumps(data))
    before = (project.path / "baselines" / "cpu.json").read_bytes()
    assert accept("--from", "once.json", "--all-improved", "--reason", "faster kernel") == 1
    assert ("refused: test_b.py::test_spin throughput: improved in that run, but neither a "
            "fresh process nor the paired stage re-measured it") in capsys.readouterr().err
    assert (project.path / "baselines" / "cpu.json").read_bytes() == before  # nothing written
    spin["verdicts"]["throughput"].update(
        stage1={"status": "improved", "change": 0.2, "uncertainty": 0.05, "reason": "beyond"},
        paired={"commit": "0" * 40, "rounds": 6})  # decided by the paired stage
    (project.path / "paired.json").write_text(json.dumps(data))
    assert accept("--from", "paired.json", "--all-improved", "--reason", "faster kernel") == 0
    assert spin_history(project)[-1]["restart"]["reason"] == "faster kernel"


def test_accept_bad_input_is_exit_2_naming_it(project, monkeypatch, capsys):
    saved(project, times=1)
    slow_run(project, monkeypatch, "0", "run.json")
    assert accept("test_b.py::test_nope", "--from", "run.json", "--reason", "x") == 2
    assert "not in the results of run.json: test_b.py::test_nope" in capsys.readouterr().err
    assert accept("--from", "run.json", "--reason", "x") == 2
    assert "name the tests to accept" in capsys.readouterr().err
    assert accept(SPIN, "--from", "run.json", "--reason", "  ") == 2
    assert "--reason must say why" in capsys.readouterr().err
    assert accept(SPIN, "--from", "run.json", "--reason", "x", "--class", "compute") == 2
    assert "no figure of run.json matches" in capsys.readouterr().err
    data = json.loads((project.path / "run.json").read_text())
    data["results"][0]["outcome"] = "oom"
    (project.path / "oom.json").write_text(json.dumps(data))
    key = data["results"][0]["nodeid"]
    assert accept(key, "--from", "oom.json", "--reason", "x", "--force") == 2
    assert "not ok (oom): no figure to accept" in capsys.readouterr().err


def test_show_lists_sessions_restart_and_flags(project, monkeypatch, capsys):
    saved(project, times=2)
    slow_run(project, monkeypatch, "0.5", "slow.json")
    assert accept(SPIN, "--from", "slow.json", "--reason", "more accurate attention") == 0
    capsys.readouterr()
    assert gpuperf_main(["baseline", "show"]) == 0
    out = capsys.readouterr().out
    assert "baseline baselines/cpu.json: profile cpu" in out
    host = os.uname().nodename
    lines = out.splitlines()
    spin = next(i for i, x in enumerate(lines) if x.startswith(f"{SPIN} throughput "))
    assert "1 session(s) judged of 3 kept" in lines[spin] and f"hosts {host}" in lines[spin]
    assert lines[spin + 1].startswith("  history restarted on ") and "more accurate attention" in lines[spin + 1]
    assert "2 earlier session(s) kept, not judged" in lines[spin + 1]
    other = next(x for x in lines if x.startswith("test_b.py::test_other throughput "))
    assert "2 session(s) judged," in other


# ------------------------------------------------------------------ two branches in git


def git(where, *args, check=True):
    r = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {r.stdout}{r.stderr}")
    return r


def branches_that_each_saved(project):
    """A repository whose main holds one saved session, and branches a and b that each
    saved one more on top of it."""
    where = project.path
    git(where, "init", "-q", "-b", "main")
    git(where, "config", "user.name", "CI")
    git(where, "config", "user.email", "ci@example.com")
    (where / ".gitignore").write_text(".vclock-sessions\nbaselines/.*.lock\nbaselines/.*.tmp\n*.json.out\n")
    saved(project, times=1)
    git(where, "add", "-A")
    git(where, "commit", "-qm", "first session")
    for branch in ("a", "b"):
        git(where, "checkout", "-q", "-b", branch, "main")
        saved(project, times=1)
        git(where, "commit", "-qam", f"session on {branch}")
    return where


def sessions(path):
    hist = json.loads(path.read_text())["entries"][SPIN]["metrics"]["throughput"]["history"]
    return [h["session"] for h in hist]


def test_two_branches_saves_conflict_without_the_driver_and_merge_with_it(project):
    where = branches_that_each_saved(project)
    base_file = where / "baselines" / "cpu.json"
    on_b = sessions(base_file)
    on_a = json.loads(git(where, "show", "a:baselines/cpu.json").stdout)["entries"][SPIN]["metrics"]["throughput"]["history"]
    assert len(on_b) == 2 and on_a[0]["session"] == on_b[0] and on_a[1]["session"] != on_b[1]

    plain = git(where, "merge", "-q", "--no-edit", "a", check=False)
    assert plain.returncode != 0 and "CONFLICT" in plain.stdout + plain.stderr
    assert "<<<<<<<" in base_file.read_text()
    git(where, "merge", "--abort")

    (where / ".gitattributes").write_text("baselines/*.json merge=gpuperf\n")
    driver = f"{sys.executable} -m pytest_gpuperf baseline merge-driver %O %A %B %P"
    git(where, "config", "merge.gpuperf.driver", driver)
    git(where, "add", ".gitattributes")
    git(where, "commit", "-qm", "the gpuperf merge driver")
    merged = git(where, "merge", "-q", "--no-edit", "a", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert git(where, "status", "--porcelain").stdout == ""
    got = sessions(base_file)
    assert sorted(got) == sorted({*on_b, on_a[1]["session"]}) and len(got) == 3
    assert load(base_file) is not None  # the merged file loads
    hist = json.loads(base_file.read_text())["entries"][SPIN]["metrics"]["throughput"]["history"]
    assert [h["date"] for h in hist] == sorted(h["date"] for h in hist)
    # and the gate judges against all three sessions
    r = project.runpytest(*FAST)
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines(["UNCHANGED *test_b.py::test_spin *throughput*"])


def test_the_driver_leaves_a_conflict_it_cannot_resolve(project, capsys):
    where = branches_that_each_saved(project)
    ours = where / "ours.json"
    ours.write_text((where / "baselines" / "cpu.json").read_text())
    theirs = where / "theirs.json"
    data = json.loads(git(where, "show", "a:baselines/cpu.json").stdout)
    data["entries"][SPIN]["metrics"]["throughput"]["unit"] = "tokens/ms"
    theirs.write_text(json.dumps(data))
    before = ours.read_bytes()
    base = where / "base.json"
    base.write_text("")
    assert gpuperf_main(["baseline", "merge-driver", str(base), str(ours), str(theirs)]) == 1
    assert "metric 'throughput': tokens/s (higher is better) on one side, tokens/ms" in capsys.readouterr().err
    assert ours.read_bytes() == before


def test_the_first_merge_after_the_schema_upgrade_merges_and_errors_name_the_side(project, capsys):
    """git's ancestor (and a side not yet re-saved) is version 1: it migrates on read."""
    where = branches_that_each_saved(project)
    v1 = json.loads(git(where, "show", "main:baselines/cpu.json").stdout)
    (base := where / ".merge_file_O").write_text(json.dumps({**v1, "version": 1}))
    (ours := where / ".merge_file_A").write_text((where / "baselines" / "cpu.json").read_text())
    (theirs := where / ".merge_file_B").write_text(git(where, "show", "a:baselines/cpu.json").stdout)
    driver = ["baseline", "merge-driver", str(base), str(ours), str(theirs), "baselines/cpu.json"]
    assert gpuperf_main(driver) == 0, capsys.readouterr().err
    assert len(sessions(ours)) == 3 and json.loads(ours.read_text())["version"] == 2
    # `gpuperf baseline merge` of a version-1 and a version-2 file, too
    assert gpuperf_main(["baseline", "merge", str(base), str(theirs), "-o", str(where / "m.json")]) == 0
    assert json.loads((where / "m.json").read_text())["version"] == 2 and len(sessions(where / "m.json")) == 2
    capsys.readouterr()
    # a bad side is named, with the file's path in the repository (%P), not git's temp file only
    before = ours.read_bytes()
    theirs.write_text(theirs.read_text()[:50])
    assert gpuperf_main(driver) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpuperf baseline merge-driver: baseline file baselines/cpu.json (theirs, git's .merge_file_B): ")
    assert err.endswith("; left as a conflict\n") and len(err.splitlines()) == 1 and ours.read_bytes() == before
    base.write_text(json.dumps({**v1, "profile": "h200"}))
    theirs.write_text(git(where, "show", "a:baselines/cpu.json").stdout)
    assert gpuperf_main(driver) == 1
    assert "baseline file baselines/cpu.json: cannot merge profile 'cpu' (ours) with profile 'h200' (the ancestor)" in capsys.readouterr().err


def test_the_drivers_help_gives_the_setup_with_the_real_path(capsys):
    with pytest.raises(SystemExit):
        gpuperf_main(["baseline", "merge-driver", "--help"])
    out = capsys.readouterr().out
    assert 'git config merge.gpuperf.driver "gpuperf baseline merge-driver %O %A %B %P"' in out
    assert "%P: the baseline's path in the repository" in out


def test_merge_command_writes_both_sides_and_never_overwrites_another_file(project, capsys):
    where = branches_that_each_saved(project)
    a = where / "a.json"
    a.write_text(git(where, "show", "a:baselines/cpu.json").stdout)
    b = where / "baselines" / "cpu.json"
    other = where / "other.json"
    other.write_text("keep me")
    assert gpuperf_main(["baseline", "merge", str(a), str(b), "-o", str(other)]) == 2
    assert "exists and is neither input" in capsys.readouterr().err and other.read_text() == "keep me"
    out = where / "merged.json"
    assert gpuperf_main(["baseline", "merge", str(a), str(b), "-o", str(out)]) == 0
    assert len(sessions(out)) == 3
    assert gpuperf_main(["baseline", "merge", str(a), str(b), "-o", str(b)]) == 0
    assert sessions(b) == sessions(out)
    data = json.loads(a.read_text())
    data["profile"] = "h200"
    a.write_text(json.dumps(data))
    assert gpuperf_main(["baseline", "merge", str(a), str(b), "-o", str(where / "x.json")]) == 2
    assert f"cannot merge profile 'h200' (ours {a}) with profile 'cpu' (theirs {b})" in capsys.readouterr().err


# ------------------------------------------------------------------ a disk that refuses, Ctrl-C


def three_commands(where):
    """accept, merge and merge-driver, each about to write `where`'s b.json."""
    from .reportdata import VALID_BASELINE, VALID_RESULTS

    (where / "r.json").write_text(json.dumps(VALID_RESULTS))
    for name in ("b.json", "c.json", "o.json"):
        (where / name).write_text(json.dumps(VALID_BASELINE, indent=1))
    b, c, o = (str(where / n) for n in ("b.json", "c.json", "o.json"))
    return {
        "accept": ["baseline", "accept", "t.py::a", "--from", str(where / "r.json"), "--reason", "x", "--baseline", b, "--force"],
        "merge": ["baseline", "merge", b, c, "-o", b],
        "merge-driver": ["baseline", "merge-driver", o, b, c, "baselines/cpu.json"],
    }


def refuse_with(exc):
    def refuse(*args, **kwargs):
        raise exc

    return refuse


@pytest.mark.parametrize("command", ["accept", "merge", "merge-driver"])
@pytest.mark.parametrize(
    ("where", "exc", "said"),
    [
        ("mkstemp", OSError(30, "Read-only file system"), "not written: Read-only file system"),
        ("fsync", OSError(28, "No space left on device"), "not written: No space left on device"),
        ("replace", KeyboardInterrupt(), "interrupted; "),  # SIGINT between the write and the rename
        ("fsync", KeyboardInterrupt(), "interrupted; "),  # SIGINT during the write
    ],
)
def test_a_refused_or_interrupted_write_is_one_line_and_loses_nothing(tmp_path, monkeypatch, capsys, command, where, exc, said):
    import tempfile

    argv = three_commands(tmp_path)[command]
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(*((tempfile, "mkstemp") if where == "mkstemp" else (os, where)), refuse_with(exc))
    code = gpuperf_main(argv)
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"gpuperf baseline {command}: ") and said in err
    target = "baselines/cpu.json" if command == "merge-driver" else str(tmp_path / "b.json")
    assert target in err
    assert code == (130 if isinstance(exc, KeyboardInterrupt) else 1 if command == "merge-driver" else 3)
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if not p.name.endswith(".lock")} == before  # no temp left
    assert load(tmp_path / "b.json") is not None
    assert gpuperf_main(argv) == 0  # the disk back: the same command writes


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_directory_is_one_line(tmp_path, capsys):
    argv = three_commands(tmp_path)["merge"]
    tmp_path.chmod(0o555)
    try:
        assert gpuperf_main(argv) == 3
    finally:
        tmp_path.chmod(0o755)
    assert len(capsys.readouterr().err.splitlines()) == 1


def _git(where, *args):
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=where,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def test_accept_keeps_the_measured_runs_commit_and_date(project, monkeypatch, capsys):
    """Issue 57: accept stamped the accepted session with the accept's time and HEAD, so
    the paired stage later built code that was never measured."""
    saved(project, times=2)
    _git(project.path, "init", "-q")
    (project.path / ".gitignore").write_text(".vclock-sessions\n*.json\n!baselines/*.json\n")
    _git(project.path, "add", "-A")
    _git(project.path, "commit", "-qm", "measured")
    measured = _git(project.path, "rev-parse", "HEAD")
    slow_run(project, monkeypatch, "0.5", "slow.json", "--gpuperf-no-confirm")
    run = json.loads((project.path / "slow.json").read_text())
    (project.path / "later.txt").write_text("x")
    _git(project.path, "add", "-A")
    _git(project.path, "commit", "-qm", "later")  # HEAD moved on since the run
    assert accept(SPIN, "--from", "slow.json", "--reason", "intended") == 0
    item = spin_history(project)[-1]
    assert item["commit"] == measured and item["date"] == run["date"]
    assert item["restart"]["commit"] == measured and item["restart"]["reason"] == "intended"
    # a results file from before the commit was recorded: said, and no commit recorded
    for name in ("commit", "dirty", "date"):
        run.pop(name)
    run["session_id"] = "another run"
    (project.path / "old.json").write_text(json.dumps(run))
    capsys.readouterr()
    assert accept(SPIN, "--from", "old.json", "--reason", "again") == 0
    assert "the results file records no commit (written before 2026-12-07)" in capsys.readouterr().out
    assert spin_history(project)[-1]["commit"] is None


def test_accept_writes_only_to_this_checkouts_baseline(project, monkeypatch, capsys, tmp_path):
    """Issue 57: with --from a CI artifact, accept wrote into the absolute baseline path
    recorded on the CI machine, creating that tree, and left the checkout's file as it was."""
    saved(project, times=2)
    slow_run(project, monkeypatch, "0.5", "slow.json", "--gpuperf-no-confirm")
    run = json.loads((project.path / "slow.json").read_text())
    elsewhere = tmp_path / "ci-runner" / "work" / "repo"
    run["baseline"] = str(elsewhere / "baselines" / "cpu.json")
    (project.path / "ci.json").write_text(json.dumps(run))
    before = len(spin_history(project))
    assert accept(SPIN, "--from", "ci.json", "--reason", "from CI") == 0
    assert not (tmp_path / "ci-runner").exists()
    assert len(spin_history(project)) == before + 1
    run["baseline"] = str(elsewhere / "nowhere-here" / "cpu.json")
    (project.path / "ci2.json").write_text(json.dumps(run))
    assert accept(SPIN, "--from", "ci2.json", "--reason", "from CI") == 2
    assert "is not in this checkout" in capsys.readouterr().err
    assert not (tmp_path / "ci-runner").exists()


def test_accept_refuses_an_incomparable_figure_unless_told(project, monkeypatch, capsys):
    """Issue 57: on a unit change accept dropped the metric's earlier sessions without a word."""
    saved(project, times=2)
    slow_run(project, monkeypatch, "0.5", "slow.json", "--gpuperf-no-confirm")
    path = project.path / "baselines" / "cpu.json"
    data = baseline(project)
    data["entries"][SPIN]["metrics"]["throughput"]["unit"] = "samples/s"  # saved in another unit
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    assert accept(SPIN, "--from", "slow.json", "--reason", "unit fixed") == 1
    err = capsys.readouterr().err
    assert f"refused: {SPIN} throughput: samples/s, higher is better -> tokens/s" in err
    assert "2 earlier session(s)" in err and "--restart-incomparable" in err
    assert path.read_bytes() == before
    assert accept(SPIN, "--from", "slow.json", "--reason", "unit fixed", "--restart-incomparable") == 0
    assert f"dropped {SPIN} throughput: samples/s" in capsys.readouterr().out
    hist = spin_history(project)
    assert len(hist) == 1 and hist[0]["restart"]["reason"] == "unit fixed"


def test_an_improvement_nothing_re_measured_reads_unconfirmed(project, monkeypatch, capsys):
    """Issue 60 (2c): IMPROVED is never confirmed (0.29% of simulated A/A runs show one). A
    run whose test got twice as fast, with no paired stage (no git) and a confirmation that
    re-measures regressions only: its verdict says so in its trail, its reason (the table's
    line) and `confirmed: false`, as `gpuperf compare` of it does; accept still refuses it."""
    saved(project, times=3)
    r = slow_run(project, monkeypatch, "-0.5", "fast.json", "-v")
    r.stdout.fnmatch_lines(["*IMPROVED*test_b.py::test_spin*unconfirmed: neither a fresh process*"])
    spin = next(x for x in json.loads((project.path / "fast.json").read_text())["results"]
                if x["nodeid"] == SPIN)  # fmt: skip
    v = spin["verdicts"]["throughput"]
    assert v["status"] == "improved" and v["confirmed"] is False, v
    assert v["trail"][-1]["rule"] == "an improvement nothing re-measured stays unconfirmed"
    assert gpuperf_main(["compare", str(project.path / "fast.json"),
                         "--baseline", str(project.path / "baselines" / "cpu.json")]) == 0
    assert "unconfirmed: neither a fresh process" in capsys.readouterr().out
    assert accept("--from", project.path / "fast.json", "--all-improved", "--reason", "x") == 1

"""`gpuperf ab`: base and head interleaved on one machine, judged by a paired statistic.
Real git repositories and real pytest processes; the virtual clock makes times exact."""

import json
import math
import platform
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gpuperf.outputs.text import json_safe

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


def test_identical_base_and_head_pass(repo, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(repo.path / "step.md"))
    r = ab(repo.path, "--json", "ab.json", "--markdown", "ab.md")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "UNCHANGED  test_b.py::test_spin  throughput" in r.stdout
    assert "head: HEAD " in r.stdout  # a clean tree: the commit is compared
    # what each side ran with, from its own results file (issue 57: ab has no baseline)
    assert f"environment: the same on both sides (python {platform.python_version()}" in r.stdout
    report = json.loads((repo.path / "ab.json").read_text())
    assert report["environment"]["base"]["python"] == platform.python_version()
    assert report["rounds"] == 3 and report["verdicts"]["test_b.py::test_spin"]["throughput"]["status"] == "unchanged"
    assert len(report["values"]["test_b.py::test_spin"]["throughput"]["base"]) == 3
    assert "## gpuperf A/B:" in (repo.path / "ab.md").read_text()
    # the step summary gets ab's report once, not also the summary of each round's pytest
    assert (repo.path / "step.md").read_text() == (repo.path / "ab.md").read_text()
    # interleaved: each round runs both sides, in alternating order
    order = [line.split(":")[0] for line in r.stderr.splitlines() if line.startswith("round")]
    assert order == ["round 1/3 base", "round 1/3 head", "round 2/3 head", "round 2/3 base", "round 3/3 base", "round 3/3 head"]
    assert not (repo.path / "baselines").exists()  # nothing written to baselines
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=repo.path, capture_output=True, text=True)
    assert len(worktrees.stdout.splitlines()) == 1  # the base worktree was removed


@pytest.mark.slow
def test_a_five_percent_slower_head_is_flagged(repo):
    repo.makepyfile(test_b=BENCH.replace("spin(0.002)", "spin(0.0021)"))
    r = ab(repo.path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSED  test_b.py::test_spin  throughput" in r.stdout and "-4.76%" in r.stdout
    assert "uncommitted changes to 1 file(s)" in r.stdout  # says what is compared
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo.path, capture_output=True, text=True, check=True).stdout[:12]
    assert f"reproduce: gpuperf ab --base {sha} --rounds 3 -- test_b.py::test_spin\n" in r.stdout
    assert ab(repo.path, "--warn-only").returncode == 0


@pytest.mark.slow
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
        # too many: refused before anything runs (the --setup that fails would run first)
        (None, ["--base", "HEAD", "--rounds", "101", "--setup", "exit 3"], "and at most 100, got 101"),
        (None, ["--base", "HEAD", "--rounds", "99999999999999999999", "--setup", "exit 3"], "at most 100"),
        (None, ["--base=--all", "--setup", "exit 3"], "base ref '--all' does not exist"),
        (None, ["--base", "HEAD^{tree}", "--setup", "exit 3"], "base ref 'HEAD^{tree}' names no commit"),
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


@pytest.mark.slow
def test_a_side_that_cannot_run_is_exit_2_with_its_output(repo):
    repo.makepyfile(test_b="import nonexistent_module_xyz\n")  # the head cannot even collect
    r = ab(repo.path)
    assert r.returncode == 2
    assert "head round 1: pytest exited 2 without results" in r.stderr
    assert "nonexistent_module_xyz" in r.stderr
    # the round's output is shown line by line, not as one line of \x0a escapes
    assert "\\x0a" not in r.stderr
    assert any(line.startswith("  ") and "nonexistent_module_xyz" in line for line in r.stderr.splitlines())


@pytest.mark.slow
def test_a_base_missing_its_submodule_says_how_to_check_it_out(repo, tmp_path):
    """git worktree add leaves submodules empty: the base's ModuleNotFoundError alone did
    not say why, nor what to do."""
    lib = tmp_path / "helperlib"
    lib.mkdir()
    (lib / "helper.py").write_text("COST = 0.002\n")
    git(lib, "init", "-q")
    git(lib, "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", "add", "-A")
    git(lib, "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", "commit", "-qm", "lib")
    git(repo.path, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    repo.makepyfile(test_b="import sys\nsys.path.insert(0, 'lib')\nimport helper\n" + BENCH)
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "a submodule")
    r = ab(repo.path, rounds=2)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "base round 1: pytest exited 2 without results" in r.stderr and "No module named 'helper'" in r.stderr
    assert (
        "  the base worktree's submodule(s) lib are not checked out (git worktree add leaves "
        'them empty): pass --setup "git submodule update --init"'
    ) in r.stderr.splitlines()
    # the setup it names fills it in (file:// allowed only for this local test submodule)
    r = ab(repo.path, "--setup", "git -c protocol.file.allow=always submodule update --init -q", rounds=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "UNCHANGED  test_b.py::test_spin" in r.stdout


@pytest.mark.slow
def test_untracked_files_the_head_ran_are_named_in_what_it_is(repo):
    """A conftest.py not yet added ran in the head's rounds (the base has none): the head
    is not 'HEAD <commit>'. Untracked files it did not import are not named."""
    repo.mkdir("sub")
    (repo.path / "sub" / "test_s.py").write_text(BENCH)
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "sub")
    (repo.path / "sub" / "conftest.py").write_text("LOCAL = True\n")
    (repo.path / "notes.py").write_text("x = 1\n")
    r = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "ab", "--base", "HEAD", "--rounds", "2", "--", "sub/test_s.py", *FAST],
        cwd=repo.path, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "head: the working tree (HEAD " in r.stdout
    assert " plus untracked file(s) sub/conftest.py)\n" in r.stdout


@pytest.mark.slow
def test_a_ref_by_commit_message_is_a_base(repo):
    """`:/message` (the youngest commit whose message matches) is a valid ref: with
    `^{commit}` appended it searched for 'base^{commit}' and was refused."""
    git(repo.path, "commit", "-q", "--allow-empty", "-m", "later")
    r = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "ab", "--base", ":/base", "--rounds", "2", "--", "test_b.py", *FAST],
        cwd=repo.path, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    first = subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=repo.path, capture_output=True, text=True).stdout
    assert r.stdout.startswith(f"base: :/base ({first[:12]}); head: HEAD ")


# ------------------------------------------------------------------ judging the rounds


def rounds(base, head, n=3, key=("t.py::test_r", "lat")):
    """Figures of n rounds per side: (median, unit, higher is better) of one metric."""
    return {"base": [{key: base}] * n, "head": [{key: head}] * n}


@pytest.mark.parametrize(
    ("base", "head", "reason"),
    [
        ((5.0, "ms", False), (5.0, "s", False), "unit differs: base 'ms', head 's'"),
        ((5.0, "ms", False), (0.005, "s", False), "unit differs: base 'ms', head 's'"),
        ((5.0, "x", True), (5.0, "x", False), "direction differs: base higher is better, head lower is better"),
    ],
)
def test_a_unit_or_direction_that_differs_is_incomparable_never_converted(base, head, reason):
    from pytest_gpuperf.cli.ab import _judge

    report = _judge(rounds(base, head), None, 0.03, 0.01, {})
    v = report["verdicts"]["t.py::test_r"]["lat"]
    assert v["status"] == "incomparable" and v["change"] is None
    assert v["reason"].startswith(reason)
    assert not report["regressed"]


@pytest.mark.slow
def test_a_figure_recorded_in_another_unit_at_the_head_is_incomparable_end_to_end(repo):
    record = "def test_r(gpu_benchmark):\n    gpu_benchmark.record('lat', {}, {!r})\n"
    repo.makepyfile(test_r=record.format(5.0, "ms"))
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "ms")
    repo.makepyfile(test_r=record.format(0.005, "s"))
    r = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "ab", "--base", "HEAD", "--rounds", "2", "--", "test_r.py"],
        cwd=repo.path, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "INCOMPARABLE  test_r.py::test_r::lat  value" in r.stdout
    assert (
        "incomparable: test_r.py::test_r::lat value: unit differs: base 'ms', head 's'; "
        "figures in another unit are never converted"
    ) in r.stdout


def test_the_same_unit_and_direction_are_judged():
    from pytest_gpuperf.cli.ab import _judge

    report = _judge(rounds((5.0, "ms", False), (5.0, "ms", False)), None, 0.03, 0.01, {})
    assert report["verdicts"]["t.py::test_r"]["lat"]["status"] == "unchanged"


def test_a_metric_missing_from_some_rounds_is_inconclusive_not_dropped():
    from pytest_gpuperf.cli.ab import judge_rounds

    key = ("t.py::test_r", "lat")
    figures = {"base": [{key: (5.0, "ms", False)}, {}], "head": [{key: (5.0, "ms", False)}] * 2}
    v = judge_rounds(figures, 0.03, 0.01)["verdicts"]["t.py::test_r"]["lat"]
    assert v["status"] == "inconclusive" and v["reason"] == "measured in 1 of 2 base and 2 of 2 head rounds"


def test_two_rounds_far_apart_are_inconclusive_not_a_crash():
    """`gpuperf ab --rounds 2` on a loaded machine: a head 10x off in one round put t(1) at
    the run's confidence past a float's exp (OverflowError, exit 1 read as a regression)."""
    from pytest_gpuperf.cli.ab import judge_rounds

    key = ("t.py::test_r", "throughput")
    base = [{key: (1.0, "GB/s", True)}, {key: (1.0, "GB/s", True)}]
    head = [{key: (1.0, "GB/s", True)}, {key: (10.0, "GB/s", True)}]
    out = judge_rounds({"base": base, "head": head}, 0.03, 0.001)  # at 99.9%, as with 10 metrics
    assert out["confidence"] >= 0.999
    v = out["verdicts"]["t.py::test_r"]["throughput"]
    assert v["status"] == "inconclusive"
    assert "not even 1000 paired rounds would narrow it" in v["advice"], v["advice"]
    # and the output says so under the table (its rows have no room for it)
    from pytest_gpuperf.cli.ab import row_notes

    assert row_notes(out) == [f"inconclusive: t.py::test_r throughput: to settle: {v['advice']}"]


def mostly(good, bad, one_in=5):
    """`bad` one time in `one_in`: malformed input is tried, well formed input is judged."""
    return st.integers(1, one_in).flatmap(lambda i: bad if i == one_in else good)


NUMBER = st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.sampled_from([0, -1, 5.0, 0.005, 10**400])
ANYTHING = st.none() | st.booleans() | st.text(max_size=5) | st.lists(st.integers(), max_size=2)
HASHABLE = st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.tuples(st.text(max_size=3))
UNIT = st.sampled_from(["ms", "s", "tokens/s", "", "ms "]) | ANYTHING
DIRECTION = st.booleans() | ANYTHING | st.integers(0, 1)
FIGURE = st.tuples(NUMBER | ANYTHING, UNIT, DIRECTION) | st.tuples(NUMBER) | st.lists(NUMBER, max_size=4) | ANYTHING
NAMES = st.tuples(st.sampled_from(["t.py::a", "t.py::b"]), st.sampled_from(["throughput", "lat"]))
GOOD_FIGURE = st.tuples(
    mostly(st.sampled_from([1.0, 1.01, 1.5]) | st.floats(0.5, 2.0), NUMBER),
    mostly(st.just("ms"), st.sampled_from(["s", "ms "])),
    mostly(st.just(False), st.just(True)),
)
ROUND = mostly(
    st.dictionaries(NAMES, GOOD_FIGURE, max_size=3), st.dictionaries(NAMES | HASHABLE, FIGURE, max_size=3) | ANYTHING, 20
)
SIDE = mostly(
    st.lists(ROUND, min_size=2, max_size=4) | st.tuples(ROUND, st.integers(2, 4)).map(lambda rn: [rn[0]] * rn[1]),
    st.lists(ROUND, max_size=1) | ANYTHING,
)
FIGURES = mostly(
    st.fixed_dictionaries({"base": SIDE, "head": SIDE}),
    st.dictionaries(st.sampled_from(["base", "head", "x"]), SIDE, max_size=2) | ANYTHING,
)
TOLERANCE = mostly(st.floats(0.001, 0.5), NUMBER | ANYTHING)
FALSE_ALARM = mostly(st.floats(0.001, 0.2), NUMBER | ANYTHING)
STATUSES = {"regressed", "improved", "unchanged", "inconclusive", "incomparable", "new"}


@settings(max_examples=400)
@given(
    figures=FIGURES,
    tolerance=TOLERANCE,
    false_alarm=FALSE_ALARM,
)
def test_judging_arbitrary_rounds_gives_verdicts_or_one_clear_error(figures, tolerance, false_alarm):
    from pytest_gpuperf.cli.ab import ABError, judge_rounds

    try:
        out = judge_rounds(figures, tolerance, false_alarm)
    except ABError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert set(out) == {"confidence", "verdicts", "values", "missing"}
    assert 0.99 <= out["confidence"] < 1
    both = {k for r in figures["base"] for k in r} & {k for r in figures["head"] for k in r}
    for key, metric in both:  # every metric measured on both sides has a verdict
        v = out["verdicts"][key][metric]
        assert v["status"] in STATUSES and v["status"] != "new" and v["reason"]
        assert v["change"] is None or math.isfinite(v["change"])
        units = {r[(key, metric)][1:] for side in ("base", "head") for r in figures[side] if (key, metric) in r}
        if len(units) > 1:  # another unit or direction is never judged, never converted
            assert v["status"] == "incomparable" and "differs" in v["reason"]
    json.dumps(json_safe(out), allow_nan=False)  # the report is valid JSON


# ------------------------------------------------------------------ outputs, signals, leftovers


def ab_cmd(*args):
    return [sys.executable, "-m", "pytest_gpuperf", "ab", "--base", "HEAD", *args, "--", "test_b.py", *FAST]


def worktrees(path):
    out = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=path, capture_output=True, text=True, check=True)
    return [line.split(" ", 1)[1] for line in out.stdout.splitlines() if line.startswith("worktree ")]


def user_state(path):
    """What a user sees of their checkout: HEAD, status (with untracked files), stashes."""
    return [
        subprocess.run(["git", *cmd], cwd=path, capture_output=True, text=True, check=True).stdout
        for cmd in (["rev-parse", "HEAD"], ["status", "--porcelain"], ["stash", "list"])
    ]


@pytest.mark.parametrize("where", ["--json", "GITHUB_STEP_SUMMARY"])
def test_an_unwritable_output_is_one_line_and_exit_2_before_any_round(repo, monkeypatch, where):
    (repo.path / "afile").write_text("x")
    args = []
    if where == "--json":
        args, bad = ["--json", "afile/ab.json"], "--json afile/ab.json: afile is not a directory"
    else:  # the runner's file: its directory is never created
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(repo.path / "gone" / "summary.md"))
        bad = f"GITHUB_STEP_SUMMARY {repo.path / 'gone' / 'summary.md'}: its directory {repo.path / 'gone'} does not exist"
    r = subprocess.run(ab_cmd(*args), cwd=repo.path, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == f"gpuperf ab: {bad}\n"  # one line, no traceback, no round run


def test_ab_outputs_on_one_file_or_a_baseline_are_refused(repo):
    r = subprocess.run(ab_cmd("--json", "out.txt", "--markdown", "./out.txt"), cwd=repo.path, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == "gpuperf ab: --json out.txt and --markdown ./out.txt are the same file: give each output its own path\n"
    baseline = repo.path / "baselines" / "cpu.json"
    baseline.parent.mkdir()
    baseline.write_text(json.dumps({"schema": "pytest-gpuperf/baseline", "version": 1, "entries": {}}))
    before = baseline.read_bytes()
    r = subprocess.run(ab_cmd("--markdown", "baselines/cpu.json"), cwd=repo.path, capture_output=True, text=True)
    assert r.returncode == 2 and "--markdown baselines/cpu.json is a pytest-gpuperf baseline file" in r.stderr
    assert baseline.read_bytes() == before


@pytest.mark.slow
def test_an_output_that_fails_after_the_rounds_is_exit_2_not_a_regression(repo, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    # the --setup (in the base worktree, before the rounds) turns the output's directory into a file
    r = subprocess.run(
        ab_cmd("--rounds", "2", "--json", str(out / "ab.json"), "--setup", f"rmdir {out} && touch {out}"),
        cwd=repo.path, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert "UNCHANGED  test_b.py::test_spin" in r.stdout  # the report is shown
    errors = [line for line in r.stderr.splitlines() if not line.startswith("round ")]
    assert len(errors) == 1 and errors[0].startswith(f"gpuperf ab: NOT WRITTEN: --json {out / 'ab.json'}: ")
    assert "Traceback" not in r.stderr


def wait_for(path, proc, limit=2400):
    """Until `path` exists (bounded: 2400 polls of 0.05 s); fails with the output if the
    process ends first."""
    import time

    for _ in range(limit):
        if path.exists():
            return path.read_text().split()
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ab ended early ({proc.returncode}):\n{out}\n{err}")
        time.sleep(0.05)
    pytest.fail(f"{path} never appeared")


def started_and_waiting(repo, tmp_path):
    """An ab run held in its --setup (in the base worktree) until it is stopped: the setup
    writes its process id and directory to a file the test waits for, then blocks."""
    ready = tmp_path / "ready"
    setup = f'echo "$$ $(pwd)" > {ready}.tmp && mv {ready}.tmp {ready} && sleep 300'
    proc = subprocess.Popen(ab_cmd("--setup", setup), cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid, tree = wait_for(ready, proc)
    return proc, int(pid), tree


def kill_group(pid):
    import contextlib
    import os
    import signal

    for kill in (os.killpg, os.kill):  # the setup's group, or itself where it has none
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stopped_run_removes_its_worktree_and_temporary_directory(repo, tmp_path, sig):
    import os
    import signal
    from pathlib import Path

    repo.makepyfile(test_b=BENCH + "\n# uncommitted\n")
    (repo.path / "untracked.txt").write_text("mine")
    git(repo.path, "stash", "push", "-q", "--include-untracked", "--", "untracked.txt")
    (repo.path / "untracked.txt").write_text("mine again")
    before = user_state(repo.path)
    proc, pid, tree = started_and_waiting(repo, tmp_path)
    try:
        assert str(Path(tree).resolve()) in [str(Path(p).resolve()) for p in worktrees(repo.path)]
        proc.send_signal(getattr(signal, sig))
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_group(pid)
    number = getattr(signal, sig).value
    assert proc.returncode == 128 + number, out + err
    assert err == (
        f"gpuperf ab: stopped by {sig} (exit {128 + number}); the base worktree and its temporary directory were removed\n"
    )
    assert worktrees(repo.path) == [str(repo.path)]  # nothing registered but the checkout
    assert not Path(tree).parent.exists()  # the temporary directory is gone
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the setup was stopped with it
    assert user_state(repo.path) == before


def test_a_worktree_left_by_a_killed_run_is_removed_by_the_next_run(repo, tmp_path):
    import shutil
    from pathlib import Path

    runs = []
    for name in ("kept", "gone"):  # two at once: the second leaves the live first alone
        (tmp_path / name).mkdir()
        runs.append(started_and_waiting(repo, tmp_path / name))
    assert len(worktrees(repo.path)) == 3
    left = []
    for proc, pid, tree in runs:  # SIGKILL: no handler runs, the worktree stays registered
        proc.kill()
        proc.communicate()
        kill_group(pid)
        left.append(Path(tree))
    shutil.rmtree(left[1].parent)  # a temporary directory cleaned away, its registration kept
    assert len(worktrees(repo.path)) == 3 and left[0].is_dir()
    r = subprocess.run(ab_cmd("--setup", "exit 3"), cwd=repo.path, capture_output=True, text=True)
    assert r.returncode == 2 and "--setup 'exit 3' failed" in r.stderr
    assert f"gpuperf ab: removed the base worktree {left[0]} of an earlier run that was stopped" in r.stderr
    assert worktrees(repo.path) == [str(repo.path)]
    assert not left[0].parent.exists()


# ------------------------------------------------------------------ where each side's code comes from

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "slowpkg"
version = "0.1"

[tool.setuptools.packages.find]
where = ["src"]
"""
WORK_TEST = """
import slowpkg
from vclock import spin

def test_work(gpu_benchmark):
    gpu_benchmark(lambda: spin(0.0002 * slowpkg.STEPS), work=1, unit="calls")
"""


def editable_src_project(tmp_path, *pip_args):
    """A src-layout package (`src/slowpkg`) in a git repo, its tests in tests/, installed
    editable (`pip install -e .`, offline) into a venv of its own that sees this one's
    packages (pytest, this plugin, setuptools). The base commit does 10 steps a call,
    the head 13: the head is 30% slower, counted in work on the virtual clock. The venv
    is the project's .venv (git-ignored), and a module of it is imported by every process
    (as an editable install's finder is): the interpreter's files are nobody's side.
    Returns (repo, the venv's python)."""
    import sysconfig
    from pathlib import Path

    repo = tmp_path / "proj"
    (repo / "src" / "slowpkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / ".gitignore").write_text("*.egg-info/\nbuild/\n.vclock-sessions\n__pycache__/\n.venv/\n")
    (repo / "src" / "slowpkg" / "__init__.py").write_text("STEPS = 10\n")
    (repo / "tests" / "test_w.py").write_text(WORK_TEST)
    (repo / "tests" / "vclock.py").write_text(Path(vclock.__file__).read_text())
    (repo / "tests" / "conftest.py").write_text(vclock.CONFTEST)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "ci@example.invalid")
    git(repo, "config", "user.name", "ci")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "src" / "slowpkg" / "__init__.py").write_text("STEPS = 13\n")
    git(repo, "commit", "-qam", "head: 30% more work a call")
    venv = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    outer = sysconfig.get_paths()["purelib"]
    Path(site, "outer_site.py").write_text(f"import site\nsite.addsitedir({outer!r})\n")
    Path(site, "outer.pth").write_text("import outer_site\n")
    pip = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation",
         *pip_args, "-e", str(repo)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return repo, python


@pytest.mark.slow
def test_a_src_layout_installed_editable_measures_the_base_s_own_code(tmp_path, monkeypatch):
    """`pip install -e .` of a src layout puts <repo>/src on sys.path: the base imported
    the head's code and a 30% slowdown read UNCHANGED +0.00%."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    repo, python = editable_src_project(tmp_path)
    r = subprocess.run(
        [python, "-m", "pytest_gpuperf", "ab", "--base", "HEAD~1", "--rounds", "2", "--", "tests/test_w.py", *FAST],
        cwd=repo, capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSED  tests/test_w.py::test_work  throughput" in r.stdout and "-23.08%" in r.stdout


@pytest.mark.slow
def test_a_base_that_imports_the_checkout_s_code_is_refused_naming_the_file(tmp_path, monkeypatch):
    """An editable install in strict mode maps the package through a link tree under
    <repo>/build, which the base worktree does not have: the base round imports the head's
    package, and ab refuses (exit 2) naming the file, rather than judge the head against
    itself. The fix it names, PYTHONPATH=src, makes each side import its own code."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    repo, python = editable_src_project(tmp_path, "--config-settings", "editable_mode=strict")
    cmd = [python, "-m", "pytest_gpuperf", "ab", "--base", "HEAD~1", "--rounds", "2", "--", "tests/test_w.py", *FAST]
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if not line.startswith("round ")]
    assert lines == [lines[0]] and lines[0].startswith("gpuperf ab: base round 1 imported ")
    assert f"{(repo / 'src' / 'slowpkg' / '__init__.py').resolve()} from the checkout under test" in lines[0]
    assert "(e.g. PYTHONPATH=src)" in lines[0]
    assert r.stdout == ""  # no verdict
    monkeypatch.setenv("PYTHONPATH", "src")
    r = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSED  tests/test_w.py::test_work  throughput" in r.stdout and "-23.08%" in r.stdout


@pytest.mark.parametrize("rate", [3.063287880701628e-286, 1e-10])
def test_a_false_alarm_rate_too_small_for_a_confidence_is_one_clear_error(rate):
    """Hypothesis found it: 1 - 3e-286 is 1.0, so every interval was infinite."""
    from pytest_gpuperf.cli.ab import ABError, judge_rounds

    with pytest.raises(ABError, match="--false-alarm must be between 1e-09 and 1"):
        judge_rounds({"base": [{}, {}], "head": [{}, {}]}, 0.5, rate)


def test_the_cli_refuses_a_false_alarm_rate_below_the_floor(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", "x.json", "--false-alarm", "1e-12"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2 and "must be at least 1e-09" in out.stderr


def test_a_test_measured_on_a_busy_host_in_any_round_is_flagged_busy_host(tmp_path):
    """Issue 64: at load 14-16 the gate flagged busy-host and `gpuperf ab` did not (it showed
    the last head round's flags alone). A round on a busy host flags the test, and ab says
    so once, as the gate does."""
    from pathlib import Path

    from pytest_gpuperf.cli.ab import _figures, _judge, busy_hosts
    from pytest_gpuperf.outputs.text import VERDICT_HEADER

    data = json.loads((Path(__file__).parent / "data" / "replay" / "cpu-run.json").read_text())
    worst = max(d["host"]["load1"] for d in data["results"])
    loaded = tmp_path / "busy.json"
    loaded.write_text(json.dumps(data))
    for d in data["results"]:  # the last head round ran on an idle host
        d["host"] = {**d["host"], "load1": 0.5, "busy": False}
    idle = tmp_path / "idle.json"
    idle.write_text(json.dumps(data))
    quiet = _judge({"base": [_figures(idle)] * 2, "head": [_figures(idle)] * 2}, idle, 0.03,
                   0.01, {}, busy=busy_hosts(idle, {}))  # fmt: skip
    assert quiet["busy_line"] is None
    assert not any("busy-host" in row[-1] for row in quiet["rows"])
    busy = busy_hosts(idle, busy_hosts(loaded, {}))
    assert len(busy) == len(data["results"])
    report = _judge({"base": [_figures(loaded), _figures(idle)], "head": [_figures(idle)] * 2},
                    idle, 0.03, 0.01, {}, busy=busy)  # fmt: skip
    flags = VERDICT_HEADER.index("flags")
    assert all("busy-host" in row[flags] for row in report["rows"])
    assert report["busy_line"].startswith(
        f"gpuperf ab: {len(busy)} CPU benchmark(s) measured on a busy host in at least one "
        f"round (load average {worst:g} on 2 cores")


def installed_project(tmp_path, layout):
    """A package `slowpkg` in a git repo in one `layout` (its folder relative to the repo,
    where the module lives: "src", "lib", "src/ns" for a namespace package `ns.slowpkg`, ""
    flat), its tests in tests/, and a non-editable install of the head emulated by a copy
    in a site folder put on PYTHONPATH (as site-packages is found: every process sees it).
    The base does 10 steps a call, the head 13. Returns (repo, site, module name)."""
    import shutil
    from pathlib import Path

    repo, site = tmp_path / "proj", tmp_path / "site"
    pkg = repo / layout / "slowpkg" if layout else repo / "slowpkg"
    name = "ns.slowpkg" if layout.endswith("/ns") else "slowpkg"
    pkg.mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / ".gitignore").write_text(".vclock-sessions\n__pycache__/\n")
    (pkg / "__init__.py").write_text("STEPS = 10\n")
    (repo / "tests" / "test_w.py").write_text(WORK_TEST.replace("import slowpkg", f"import {name} as slowpkg"))
    (repo / "tests" / "vclock.py").write_text(Path(vclock.__file__).read_text())
    (repo / "tests" / "conftest.py").write_text(vclock.CONFTEST)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    (pkg / "__init__.py").write_text("STEPS = 13\n")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "head")
    top = name.partition(".")[0]
    shutil.copytree(pkg.parent if "." in name else pkg, site / top)  # `pip install .`
    return repo, site, name


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["src", "lib", "src/ns", "python", "packages/x/src", "_private"])
def test_a_base_that_imports_an_installed_copy_of_the_head_is_refused(tmp_path, monkeypatch, layout):
    """Issue 57: with any non-editable install (src/ included) the base imported the
    head's installed copy, and ab compared head with head: UNCHANGED, exit 0. It refuses
    (exit 2) in one line naming the file. python/, a monorepo's packages/x/src/ and a
    folder starting with `_` went unseen after lib/ and namespace packages were fixed."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    repo, site, name = installed_project(tmp_path, layout)
    monkeypatch.setenv("PYTHONPATH", str(site))
    r = subprocess.run([sys.executable, "-m", "pytest_gpuperf", "ab", "--base", "HEAD~1", "--rounds", "2",
                        "--", "tests/test_w.py", *FAST], cwd=repo, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if not line.startswith("round ")]
    assert len(lines) == 1 and "UNCHANGED" not in r.stdout
    assert f"the base process imported {name} from {site}" in lines[0]
    assert "not from the baseline commit's worktree" in lines[0]


@pytest.mark.slow
def test_a_flat_layout_installed_non_editable_measures_the_base_s_own_code(tmp_path, monkeypatch):
    """Flat: the base worktree is first on the base's PYTHONPATH, ahead of the install."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    repo, site, _ = installed_project(tmp_path, "")
    monkeypatch.setenv("PYTHONPATH", str(site))
    r = subprocess.run([sys.executable, "-m", "pytest_gpuperf", "ab", "--base", "HEAD~1", "--rounds", "2",
                        "--", "tests/test_w.py", *FAST], cwd=repo, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSED  tests/test_w.py::test_work  throughput" in r.stdout


def test_the_sides_environments_are_shown_and_what_differs_is_named():
    """Issue 57: gpuperf ab has no saved baseline to check its base against; it shows what
    each side's process ran with, naming what differs."""
    from pytest_gpuperf.cli.ab import environment_line

    base = {"python": "3.12.3", "torch": "2.10.0", "pytest": "9.1.1"}
    same = environment_line({"environment": {"base": base, "head": dict(base)}})
    assert same.startswith("environment: the same on both sides (python 3.12.3, torch 2.10.0)")
    differ = environment_line({"environment": {"base": base, "head": {**base, "torch": "2.11.0"}}})
    assert differ == "environment differs between the sides (base -> head): torch 2.10.0 -> 2.11.0"
    assert environment_line({}) == "environment: not recorded by both sides"

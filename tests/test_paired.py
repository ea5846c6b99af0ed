"""The paired stage (paired/stage.py, paired/rounds.py, paired/judge.py): what the first
stage leaves inconclusive is re-measured against a build of the baseline's commit, in
rounds, and judged on the paired differences."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gpuperf.core.verdict import Rule, amend, from_json, make
from pytest_gpuperf.judging.pairedrounds import PairedFigure
from pytest_gpuperf.paired.judge import judge_paired, per_process, pooled

from . import vclock
from .gateproject import FAST

# ------------------------------------------------------------------ the judge (pure)


def fig(base, head, *, key="t.py::a", cls="compute", higher=True, pair=None):
    n = len(base)
    return PairedFigure(key, "throughput", cls, higher, tuple(base), tuple(head),
                        tuple(pair if pair is not None else [i * 2 // n for i in range(n)]))  # fmt: skip


WOBBLE = (1.000, 1.002, 0.999, 1.001, 0.998, 1.0015)


def test_unchanged_code_reads_unchanged_and_a_slower_head_regressed():
    same = fig([100 * w for w in WOBBLE], [100 * w * w for w in WOBBLE[::-1]])
    slow = fig([100 * w for w in WOBBLE], [90 * w for w in WOBBLE[::-1]], key="t.py::b")
    v, conf = judge_paired([same, slow], {"t.py::a": 0.03, "t.py::b": 0.03}, 0.005)
    assert v[("t.py::a", "throughput")].status == "unchanged"
    assert v[("t.py::b", "throughput")].status == "regressed"
    assert v[("t.py::b", "throughput")].change == pytest.approx(-0.1, abs=0.005)
    assert conf == pytest.approx(1 - 0.005 / 2)


def test_the_basis_names_the_interval_the_verdict_carries():
    """On the H200 (2026-12-03, the own file 10% slower) the regression line read ±7.35%
    (the basis, exp(h) - 1) and the verdict table ±7.09% (the verdict's h) for one figure;
    both now print the verdict's half-width."""
    noisy = (1.00, 1.04, 0.97, 1.05, 0.95, 1.02)
    f = fig([100 * w for w in noisy], [90 * w for w in noisy[::-1]])
    (v,) = judge_paired([f], {"t.py::a": 0.03}, 0.005)[0].values()
    assert v.uncertainty > 0.05  # wide enough that exp(h) - 1 would print otherwise
    assert v.basis.startswith(f"±{v.uncertainty * 100:.2f}% over 6 paired rounds"), v.basis


def test_a_latency_that_grew_regressed():
    lat = fig([10 * w for w in WOBBLE], [11 * w for w in WOBBLE], higher=False)
    (v,) = judge_paired([lat], {"t.py::a": 0.03}, 0.005)[0].values()
    assert v.status == "regressed" and v.worse == pytest.approx(0.1, abs=0.005)


def test_a_small_process_effect_widens_the_interval_instead():
    base = [100.0] * 6
    head = [100.2, 100.21, 100.19, 99.8, 99.81, 99.79]  # pairs 0.4% apart, tolerance 3%
    f = fig(base, head, pair=[0, 0, 0, 1, 1, 1])
    assert per_process(f) < 0.01
    (v,) = judge_paired([f], {"t.py::a": 0.03}, 0.005)[0].values()
    assert v.status == "unchanged" and v.uncertainty >= 0.002


def test_process_pairs_that_disagree_leave_the_figure_to_the_first_stage():
    # pair 0 reads the head 5% faster, pair 1 5% slower, each very steadily
    base = [100.0] * 6
    head = [105.0, 105.1, 104.9, 95.0, 95.1, 94.9]
    f = fig(base, head, pair=[0, 0, 0, 1, 1, 1])
    assert per_process(f) is not None and per_process(f) < 0.01
    (v,) = judge_paired([f], {"t.py::a": 0.03}, 0.005)[0].values()
    assert v.status == "inconclusive" and "per process" in v.reason


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-0.3, 0.3), min_size=2, max_size=4),  # each pair's level, log
    st.integers(2, 4),  # rounds a pair
    st.booleans(),
    st.sampled_from(["regressed", "improved"]),
    st.floats(0.01, 0.1),
)
def test_each_pair_beyond_is_every_pairs_own_mean_beyond_the_tolerance(levels, per, higher,
                                                                       status, tol):  # fmt: skip
    from pytest_gpuperf.paired.judge import each_pair_beyond

    pair = [p for p in range(len(levels)) for _ in range(per)]
    wobble = [(-1) ** i * 1e-4 for i in range(per)] * len(levels)  # mean 0 in a pair of 2, 4
    head = [100 * math.exp(levels[p] + w) for p, w in zip(pair, wobble, strict=True)]
    f = fig([100.0] * len(pair), head, higher=higher, pair=pair)
    got = each_pair_beyond(f, tol, status)
    means = [statistics.fmean(math.log(h / 100) for h, q in zip(head, pair, strict=True) if q == p)
             for p in range(len(levels))]  # fmt: skip
    worse = [-m if higher else m for m in means]
    side = [w if status == "regressed" else -w for w in worse]
    if got is None:
        assert not all(x > math.log1p(tol) for x in side)
    else:
        assert all(x > math.log1p(tol) for x in side)
        assert got == pytest.approx([math.expm1(m) for m in means])
    other = "improved" if status == "regressed" else "regressed"
    assert got is None or each_pair_beyond(f, tol, other) is None  # one side at the most
    assert each_pair_beyond(f, tol, "inconclusive") is None


def test_a_class_pools_its_figures_variance_and_a_noisy_one_keeps_its_own():
    quiet = [fig([100 * w for w in WOBBLE], [100 * w for w in WOBBLE[1:] + WOBBLE[:1]],
                 key=f"t.py::q{i}") for i in range(4)]  # fmt: skip
    noisy = fig([100, 130, 80, 120, 90, 110], [100, 80, 125, 95, 115, 90], key="t.py::n")
    v = pooled([*quiet, noisy])
    assert v[("t.py::q0", "throughput")][1] > 5  # the pool's degrees of freedom
    assert v[("t.py::n", "throughput")][1] == 5  # its own: the F screen kept it out


def test_a_figure_noisier_than_its_pool_keeps_its_own_degrees_of_freedom():
    # its variance within F's bar of the pool's (kept in the class) but above it: judged on
    # its own variance it must carry its own 5 df, not the pool's; borrowing the pool's
    # df for its own variance narrowed its interval (t at 99.9%: 6.9 at 5 df, 3.7 at 25)
    # and in the simulator on the real rounds' noise gave most of the A/A false alarms
    # (docs/evidence/gate-sim-2026-12-07-project)
    def exact(d, key):
        return fig([100.0] * len(d), [100.0 * math.exp(x) for x in d], key=key)

    quiet = [exact([0.002, -0.002, 0.001, -0.001, 0.0015, -0.0015][i:] +
                   [0.002, -0.002, 0.001, -0.001, 0.0015, -0.0015][:i], f"t.py::q{i}")
             for i in range(4)]  # fmt: skip
    louder = exact([0.004, -0.004, 0.002, -0.002, 0.003, -0.003], "t.py::n")  # 4x the variance
    v = pooled([*quiet, louder])
    own = statistics.variance(louder.diffs())
    assert v[("t.py::q0", "throughput")][1] > 5  # the quiet ones pool
    assert v[("t.py::n", "throughput")] == pytest.approx((own, 5))


def test_one_noisy_figure_of_three_is_screened_out_rather_than_widening_the_other_two():
    # as on the H200 (2026-12-02): a launch-bound-ish sweep point 20x noisier than its two
    # quiet class-mates, 4 rounds; in a pool it is part of, one of three at 20x the others'
    # variance is under F's bar and made every class-mate's interval its own (±3.6-11.8%)
    q = (1.000, 1.002, 0.999, 1.001)
    quiet = [fig([100 * w for w in q], [100 * w for w in q[1:] + q[:1]], key=f"t.py::q{i}")
             for i in range(2)]  # fmt: skip
    noisy = fig([100, 104, 97, 103], [100, 97, 104, 98], key="t.py::n")
    v = pooled([*quiet, noisy])
    assert v[("t.py::n", "throughput")][1] == 3  # its own variance, 3 df
    quiet_var = statistics.variance(quiet[0].diffs())
    assert v[("t.py::q0", "throughput")][0] < 10 * quiet_var  # not the noisy one's
    judged, _ = judge_paired([*quiet, noisy], dict.fromkeys(("t.py::q0", "t.py::q1", "t.py::n"), 0.03), 0.005)
    assert judged[("t.py::q0", "throughput")].status == "unchanged"


def test_too_few_rounds_or_a_missing_figure_is_inconclusive():
    empty = PairedFigure("t.py::a", "throughput", "compute", True, (), (), ())
    (v,) = judge_paired([empty], {"t.py::a": 0.03}, 0.005)[0].values()
    assert v.status == "inconclusive" and "2 needed" in v.reason


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.5, 2.0), min_size=4, max_size=10),
    st.floats(0.8, 1.25),
    st.floats(0.01, 1000.0),
)
def test_swapping_the_sides_mirrors_and_scaling_changes_nothing(ratios, shift, scale):
    n = len(ratios)
    base = [100.0 * (1 + 0.01 * math.sin(i)) for i in range(n)]
    head = [b * shift * (1 + 0.002 * (r - 1)) for b, r in zip(base, ratios, strict=True)]
    tol = {"t.py::a": 0.03}
    ab = judge_paired([fig(base, head)], tol, 0.005)[0][("t.py::a", "throughput")]
    ba = judge_paired([fig(head, base)], tol, 0.005)[0][("t.py::a", "throughput")]
    big = judge_paired([fig([b * scale for b in base], [h * scale for h in head])], tol, 0.005)
    mirror = {"regressed": "improved", "improved": "regressed"}
    assert ba.status == mirror.get(ab.status, ab.status)
    assert big[0][("t.py::a", "throughput")].status == ab.status


# ------------------------------------------------------------------ the stage, end to end

WORK = "FACTOR = {factor}\n"
BENCH = """
import os

from vclock import spin

import work

def test_step(gpu_benchmark):
    machine = float(os.environ.get("MACHINE", "1"))  # the machine a session ran on
    gpu_benchmark(lambda: spin(0.002 * work.FACTOR * machine), work=64, unit="tokens")
"""


# vclock's conftest, with a new jitter seed for each test it runs (not only each session):
# a round process runs its test several times, and each round must draw its own noise
ROUND_CLOCK = """
import itertools
import pathlib

import pytest

import vclock

SEED = vclock.next_seed(pathlib.Path.cwd())
RUNS = itertools.count()


@pytest.fixture(autouse=True)
def virtual_clock(monkeypatch):
    return vclock.install(monkeypatch, 1000 * SEED + next(RUNS))
"""


def git(path, *args):
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)


def saved_repo(pytester, monkeypatch, bench=BENCH, conftest=ROUND_CLOCK, tests=1, args=()):
    """A git repository whose baseline (3 sessions on "machines" 20% apart, so that the
    first stage cannot decide) was saved at its first commit (`args`: more options of the
    saving runs)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    vclock.add_to(pytester)
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_p=bench, work=WORK.format(factor=1.0))
    git(pytester.path, "init", "-q")
    git(pytester.path, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(pytester.path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    for machine in ("1.0", "1.2", "0.85"):  # the code as committed, on machines 20% apart
        monkeypatch.setenv("MACHINE", machine)
        pytester.runpytest(*FAST, *args, "--gpuperf-baseline=save").assert_outcomes(passed=tests)
    monkeypatch.delenv("MACHINE")
    return pytester


@pytest.fixture
def repo(pytester, monkeypatch):
    return saved_repo(pytester, monkeypatch)


def test_unchanged_code_is_decided_unchanged_by_the_paired_stage(repo):
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    r.assert_outcomes(passed=1)
    out = r.stdout.str()
    assert "paired stage against the baseline's commit" in out, out
    # what the stage cost, said in its line: a round, a process pair's start, the slowest test
    assert "re-measured in 6 rounds (a round of both builds " in out, out
    assert "s, a pair's first " in out and " s to start" in out, out
    assert "a test's measurement in a round, slowest: test_step " in out, out
    v = json.loads((repo.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    assert v["status"] == "unchanged" and v["stage1"]["status"] == "inconclusive", v["reason"]
    assert v["paired"]["rounds"] == 6 and v["paired"]["processes"] == 3


def test_a_slower_head_fails_the_run_through_the_paired_stage(repo):
    (repo.path / "work.py").write_text(WORK.format(factor=1.1))  # the head's code: 10% slower
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    assert r.ret == pytest.ExitCode.TESTS_FAILED, r.stdout.str()
    v = json.loads((repo.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    assert v["status"] == "regressed" and v["stage1"]["status"] == "inconclusive", v
    assert v["change"] == pytest.approx(-1 / 11, abs=0.01)


def test_off_keeps_the_first_stage_and_says_nothing(repo):
    r = repo.runpytest(*FAST, "--gpuperf-paired=off", "--gpuperf-json=run.json")
    v = json.loads((repo.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    assert v["status"] == "inconclusive" and "paired" not in v
    assert "paired stage" not in r.stdout.str()


def test_a_baseline_commit_missing_from_the_clone_is_one_line_and_stage_one_stands(repo):
    path = repo.path / "baselines" / "cpu.json"
    data = json.loads(path.read_text())
    for e in data["entries"].values():
        e["commit"] = "0" * 40
    path.write_text(json.dumps(data))
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    r.stdout.fnmatch_lines(
        ["*paired stage off: the baseline's commit 000000000000 is not in this clone*"]
    )
    v = json.loads((repo.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    assert v["status"] == "inconclusive"


def test_a_class_shift_the_paired_stage_finds_in_no_figure_is_the_environment():
    """Both builds slower alike on this machine (torch upgraded): the class line that
    regressed against the history names the environment, and the run does not fail."""
    import types

    from pytest_gpuperf.core.results import Result, Throughput
    from pytest_gpuperf.judging.judge import Judgement
    from pytest_gpuperf.judging.offsets import ClassShift
    from pytest_gpuperf.paired.stage import environment_shifts

    line = ClassShift("compute", None, make("regressed", -0.08, 0.08, 0.02, 0.03, "x"), 4,
                      ("t.py::a", "t.py::b"))  # fmt: skip
    results = []
    for key in ("t.py::a", "t.py::b"):
        r = Result(key, None, "flop", 1.0, noise_class="compute")
        r.time = types.SimpleNamespace(n=10)  # type: ignore[assignment]
        r.throughput = Throughput("TFLOP/s", 1.0, 0.99, 1.01)
        r.verdicts = {"throughput": from_json({"status": "unchanged", "paired": {"rounds": 6},
                                               "stage1": {"status": "inconclusive"}})}  # fmt: skip
        results.append(r)
    entries = {k: {"environment": {"torch": "2.10.0", "driver": "580.1"}} for k in line.keys}
    j = Judgement(0.999, 4, [line])
    assert j.failing(results)
    shown = environment_shifts(j.shifts, results, entries, {"torch": "2.11.0", "driver": "580.1"})
    assert not j.failing(results)
    (text,) = shown
    assert "INCONCLUSIVE" in text and "a shift of the environment" in text
    assert "torch 2.10.0 -> 2.11.0" in text and "driver" not in text
    # one of the two re-measured: too little of the class to clear it
    second = results[1].verdicts["throughput"]
    results[1].verdicts["throughput"] = amend(second, None, paired=None)
    j1 = Judgement(0.999, 4, [line])
    assert environment_shifts(j1.shifts, results, entries, {}) == [] and j1.failing(results)
    results[1].verdicts["throughput"] = second
    # one figure the paired stage found regressed: the code moved, the line stands
    first = results[0].verdicts["throughput"]
    results[0].verdicts["throughput"] = amend(first, Rule.LADDER, status="regressed")
    j2 = Judgement(0.999, 4, [line])
    assert environment_shifts(j2.shifts, results, entries, {}) == [] and j2.failing(results)


def test_a_session_saved_from_uncommitted_code_records_no_commit(repo):
    """HEAD is not the code such a session measured: the paired stage would build the
    wrong one, so the save records none and says why; the stage then says it is off."""
    (repo.path / "work.py").write_text(WORK.format(factor=0.8))  # an edit not committed
    r = repo.runpytest(*FAST, "--gpuperf-baseline=save")
    r.stdout.fnmatch_lines(["*no commit recorded: the checkout has uncommitted changes*"])
    data = json.loads((repo.path / "baselines" / "cpu.json").read_text())
    assert [e["commit"] for e in data["entries"].values()] == [None]
    r = repo.runpytest(*FAST)
    r.stdout.fnmatch_lines(["*paired stage off*recorded no commit*"])


def test_a_baseline_kept_outside_the_checkout_records_the_checkouts_commit(
    pytester, monkeypatch, tmp_path_factory
):
    """The nightly recipe keeps its baselines in a cache outside the checkout (docs/gating.md,
    --gpuperf-baseline-dir=/tmp/gpuperf-baselines): each session recorded the commit of the
    baseline's own directory, none outside a repository, so the paired stage never ran (a
    break-it pass, 2026-12-05). The cache does not exist before the first save."""
    cache = tmp_path_factory.mktemp("nightly") / "gpuperf-baselines"
    repo = saved_repo(pytester, monkeypatch, args=(f"--gpuperf-baseline-dir={cache}",))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo.path, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    entry = json.loads((cache / "cpu.json").read_text())["entries"]["test_p.py::test_step"]
    assert [h["commit"] for h in entry["metrics"]["throughput"]["history"]] == [head] * 3
    r = repo.runpytest(*FAST, f"--gpuperf-baseline-dir={cache}")
    r.stdout.fnmatch_lines([f"*paired stage against the baseline's commit {head[:12]}*"])


def test_the_commit_recorded_is_the_checkouts_whatever_holds_the_baseline(tmp_path):
    """code_commit: the run's checkout names the commit; a baseline directory in another
    repository, in none or not yet made changes nothing; an edit to the checkout's tracked
    code outside the baseline directory records none, an edit inside it does not count."""
    from pytest_gpuperf.run.baseline import code_commit

    def commit_all(path):
        git(path, "init", "-q")
        (path / "f.py").write_text("x = 1\n")
        git(path, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
        git(path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip

    code, other, plain = (tmp_path / n for n in ("code", "other", "plain"))
    for d in (code, other, plain):
        d.mkdir()
    head = commit_all(code)
    commit_all(other)
    (code / "baselines").mkdir()
    (code / "baselines" / "cpu.json").write_text("{}")
    git(code, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(code, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "baseline")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=code, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    for where in (other, plain, plain / "not-yet", code / "baselines"):
        assert code_commit(code, where) == (head, ""), where
    (code / "baselines" / "cpu.json").write_text('{"edited": 1}')  # the baseline's own file
    assert code_commit(code, code / "baselines") == (head, "")
    (code / "f.py").write_text("x = 2\n")  # the code measured is not HEAD's
    commit, why = code_commit(code, other)
    assert commit is None and "uncommitted changes other than the baseline files" in why
    assert code_commit(plain, plain) == (None, "")  # no repository: the compare run says so


def test_the_dirty_check_skips_only_the_baseline_files(tmp_path):
    """Issue 57: the dirty check skipped the whole baseline directory: with
    `--gpuperf-baseline-dir=tests` an uncommitted test edit was saved as HEAD's, with `.` a
    dirty module was. Only the baseline JSON files themselves are not code."""
    from pytest_gpuperf.run.baseline import code_commit

    code = tmp_path / "code"
    (code / "tests").mkdir(parents=True)
    (code / "m.py").write_text("x = 1\n")
    (code / "tests" / "test_m.py").write_text("def test(): pass\n")
    (code / "tests" / "cpu.json").write_text("{}")
    (code / "cpu.json").write_text("{}")
    git(code, "init", "-q")
    git(code, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(code, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=code, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    (code / "tests" / "cpu.json").write_text('{"saved": 1}')
    assert code_commit(code, code / "tests") == (head, "")
    git(code, "checkout", "-q", "tests/cpu.json")
    (code / "cpu.json").write_text('{"saved": 1}')
    assert code_commit(code, code) == (head, "")
    git(code, "checkout", "-q", "cpu.json")
    (code / "tests" / "test_m.py").write_text("def test(): assert 1\n")
    assert code_commit(code, code / "tests")[0] is None  # the test edited is not HEAD's
    git(code, "checkout", "-q", "tests/test_m.py")
    (code / "m.py").write_text("x = 2\n")
    assert code_commit(code, code)[0] is None  # nor a module, with the baseline at the root


def test_the_dirty_check_counts_an_untracked_python_file(tmp_path):
    """Found in review: an untracked `extra.py` a test imported changed the measured level,
    and the session was still stamped with HEAD. An untracked Python file git does not
    ignore makes the tree dirty; an ignored one, or an untracked non-Python file, not."""
    from pytest_gpuperf.run.baseline import code_commit

    code = tmp_path / "code"
    code.mkdir()
    (code / "m.py").write_text("x = 1\n")
    (code / ".gitignore").write_text("build/\n")
    git(code, "init", "-q")
    git(code, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(code, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    (code / "notes.txt").write_text("x")
    (code / "build").mkdir()
    (code / "build" / "gen.py").write_text("x = 1\n")
    assert code_commit(code, code)[0] is not None
    (code / "extra.py").write_text("SLOW = 2\n")
    assert code_commit(code, code)[0] is None


FROM_A_LOCAL_FILE = BENCH.replace("import work", """import work
import pathlib""").replace("    machine = float(", """    pathlib.Path(__file__).with_name("local.cfg").read_text()  # git ignores it
    machine = float(""")


def test_a_test_that_fails_in_the_base_build_only_says_how(pytester, monkeypatch):
    """A break-it pass (2026-12-05): a test reading a file git ignores failed in each of the
    base build's rounds, and its figure read "0 paired round(s) of finite positive figures:
    2 needed" with paired.rounds = 6, never saying that the test failed, where, or how."""
    pytester.makefile(".cfg", local="x")
    pytester.path.joinpath(".gitignore").write_text("local.cfg\n")
    repo = saved_repo(pytester, monkeypatch, bench=FROM_A_LOCAL_FILE)
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    v = json.loads((repo.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    assert v["status"] == "inconclusive" and v["paired"]["rounds"] == 0, v
    assert "its test failed in the base build's rounds: failed in call: FileNotFoundError" in (
        v["reason"]), v["reason"]
    assert "head build" not in v["reason"], r.stdout.str()


def test_a_shallow_clone_without_the_commit_keeps_stage_one_at_the_whole_budget(repo):
    path = repo.path / "baselines" / "cpu.json"
    data = json.loads(path.read_text())
    for e in data["entries"].values():
        e["commit"] = "0" * 40
    path.write_text(json.dumps(data))
    r = repo.runpytest(*FAST)
    r.stdout.fnmatch_lines(["*each metric judged at 99.000% confidence*",
                            "*paired stage off*is not in this clone*"])  # fmt: skip


@pytest.mark.slow
def test_figures_saved_at_another_commit_are_left_to_the_first_stage(repo, monkeypatch):
    """test_a's sessions are at the first commit; test_b is saved again at a second, which
    made test_a 10% slower: building the second for test_a would measure the slowdown on
    both sides and call it unchanged."""
    repo.makepyfile(test_q=BENCH.replace("def test_step", "def test_other"))
    git(repo.path, "add", "test_q.py")
    git(repo.path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "q")
    for machine in ("1.0", "1.2", "0.85"):
        monkeypatch.setenv("MACHINE", machine)
        repo.runpytest(*FAST, "test_q.py", "--gpuperf-baseline=save").assert_outcomes(passed=1)
    monkeypatch.delenv("MACHINE")
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    out = r.stdout.str()
    assert "1 figure(s) saved at another commit or none left to the first stage" in out, out
    got = {d["nodeid"]: d["verdicts"]["throughput"]
           for d in json.loads((repo.path / "run.json").read_text())["results"]}  # fmt: skip
    assert "paired" not in got["test_p.py::test_step"]
    assert got["test_q.py::test_other"]["paired"]["rounds"] == 6


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["src", "lib", "src/ns", "python", "packages/x/src"])
def test_a_base_that_imports_an_installed_copy_of_the_head_is_refused(
    pytester, monkeypatch, tmp_path, layout
):
    """`pip install .` (not editable) puts the head's code in site-packages: the base's
    rounds would import it too, and read 10% slower code as unchanged. Issue 57: from
    lib/ or as a namespace package (src/ns/mypkg, no ns/__init__.py) it went unseen, then
    from python/ and a monorepo's packages/x/src/."""
    import shutil

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    vclock.add_to(pytester)
    pytester.makeconftest(ROUND_CLOCK)
    name = "ns.mypkg" if layout.endswith("/ns") else "mypkg"
    pytester.makepyfile(test_p=BENCH.replace("import work", f"from {name} import work"))
    pkg = pytester.path / layout / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "work.py").write_text(WORK.format(factor=1.0))
    site = tmp_path / "site"
    shutil.copytree(pkg.parent.parent if "." in name else pkg.parent, site)
    monkeypatch.setenv("PYTHONPATH", str(site))
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "-A")
    git(pytester.path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    for machine in ("1.0", "1.2", "0.85"):
        monkeypatch.setenv("MACHINE", machine)
        pytester.runpytest_subprocess(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    monkeypatch.delenv("MACHINE")
    (site / name.replace(".", "/") / "work.py").write_text(WORK.format(factor=1.1))  # the head
    r = pytester.runpytest_subprocess(*FAST)
    r.stdout.fnmatch_lines([f"*not measured: the base process imported {name}* from {site}*not "
                            "from the baseline commit's worktree*"])  # fmt: skip


def test_a_compute_bound_head_slower_only_at_a_lower_clock_is_not_a_regression():
    """Stage 1's rule, kept by stage 2: compute-bound work regresses only in time AND per
    SM clock cycle. The head's rounds ran 10% slower at a 10% lower clock: the same
    cycles, a power state, never a regression."""
    import types

    from pytest_gpuperf.core.results import Result, Throughput
    from pytest_gpuperf.core.stats import summarize
    from pytest_gpuperf.paired.stage import _apply

    def measured_at(seconds, mhz, i):
        r = Result("t.py::mlp", None, "flop", 1e12, bound="compute")
        r.outcome = "ok"
        r.time = summarize([seconds * (1 + 1e-4 * i)] * 9, 0.95)
        r.throughput = Throughput("TFLOP/s", 1 / r.time.median, 0.999 / r.time.median,
                                  1.001 / r.time.median)  # fmt: skip
        r.telemetry = {"sm_clock_median_mhz": mhz}
        return r.to_dict()

    rounds = {"base": [[measured_at(1.0, 1980, i)] for i in range(6)],
              "head": [[measured_at(1.1, 1800, i)] for i in range(6)]}  # fmt: skip
    measured = types.SimpleNamespace(rounds=rounds, pair=[0, 0, 0, 1, 1, 1])
    run = Result("t.py::mlp", None, "flop", 1e12, bound="compute")
    run.verdicts = {"throughput": from_json({"status": "inconclusive", "reason": "wide"})}
    _apply([(run, "throughput", "compute")], measured, 0.005, "c" * 40)
    v = run.verdicts["throughput"]
    assert v.status != "regressed", v
    assert v.per_cycle == "unchanged" and v.stage1["status"] == "inconclusive"
    # the per-clock rounds that decided it are kept beside the time's, with their basis
    clock = v.paired["per_clock"]
    assert clock["round_pairs"] == [0, 0, 0, 1, 1, 1] and len(clock["head_rounds"]) == 6
    assert clock["head_median"] == pytest.approx(clock["base_median"], rel=1e-3)  # same cycles
    assert v.paired["head_median"] < v.paired["base_median"] * 0.92  # 10% slower in time
    assert clock["basis"].endswith("over 6 paired rounds (its own, 5 df)"), clock["basis"]


def test_a_compute_bound_time_inside_the_tolerance_is_unchanged_whatever_its_cycles():
    """The H200's matmuls in run 4: their paired time rounds agreed within 0.4% while their
    per-clock rounds (each at the round's own median SM clock) spread several percent, so
    the per-clock interval reached past the tolerance. The time's whole interval inside the
    tolerance decides it: neither slower nor faster in time, so neither verdict that needs
    time AND cycles can hold. Its interval is the time's, its per-cycle reading kept."""
    import random
    import types

    from pytest_gpuperf.core.results import Result, Throughput
    from pytest_gpuperf.core.stats import summarize
    from pytest_gpuperf.paired.stage import _apply

    rng = random.Random(4)

    def measured_at(seconds, mhz):
        r = Result("t.py::mm", None, "flop", 1e12, bound="compute")
        r.outcome = "ok"
        r.time = summarize([seconds] * 9, 0.95)
        r.throughput = Throughput("TFLOP/s", 1 / seconds, 0.999 / seconds, 1.001 / seconds)
        r.telemetry = {"sm_clock_median_mhz": mhz}
        return r.to_dict()

    def side():
        return [[measured_at(1.0 + rng.gauss(0, 0.002), 1980 * (1 + rng.gauss(0, 0.05)))]
                for _ in range(6)]  # fmt: skip

    rounds = {"base": side(), "head": side()}
    measured = types.SimpleNamespace(rounds=rounds, pair=[0, 0, 0, 1, 1, 1])
    run = Result("t.py::mm", None, "flop", 1e12, bound="compute")
    run.verdicts = {"throughput": from_json({"status": "inconclusive", "reason": "wide"})}
    _apply([(run, "throughput", "compute")], measured, 0.005, "c" * 40)
    v = run.verdicts["throughput"]
    assert v.status == "unchanged", v
    assert v.per_cycle == "inconclusive"  # the cycles alone could not say
    assert "in time; per clock cycle" in v.reason
    assert v.uncertainty < 0.015 < v.paired["per_clock"]["round_spread"], v
    assert v.basis.endswith("over 6 paired rounds (its own, 5 df)"), v.basis  # the time's
    # a 10% slower head at the same coarse clock readings: its cycles cannot tell, its time
    # can, and a clock that differs between the builds of one card is the code's doing
    rounds["head"] = [[measured_at(1.1 * (1.0 + rng.gauss(0, 0.002)),
                                   1980 * (1 + rng.gauss(0, 0.05)))] for _ in range(6)]  # fmt: skip
    run.verdicts = {"throughput": from_json({"status": "inconclusive", "reason": "wide"})}
    _apply([(run, "throughput", "compute")], measured, 0.005, "c" * 40)
    v = run.verdicts["throughput"]
    assert v.status == "regressed" and v.per_cycle == "inconclusive", v
    assert v.uncertainty < 0.015 and "in time; per clock cycle" in v.reason


LEVEL_BENCH = """
from vclock import spin

import work

def test_step(gpu_benchmark, virtual_clock):
    level = 1 + virtual_clock.rng.gauss(0.0, 0.04)  # set each time the test runs
    gpu_benchmark(lambda: spin(0.002 * work.FACTOR * level), work=64, unit="tokens")
"""


@pytest.mark.slow
def test_each_round_runs_a_lone_test_anew(repo):
    """A round process with one test once reported its first round's figures again in every
    later round (pytest kept the test's setup for itself as its own next item, and did not
    run it again): the paired rounds of a figure whose level is set each time its test runs
    were then a few values repeated, an interval far too narrow."""
    (repo.path / "test_p.py").write_text(LEVEL_BENCH)
    git(repo.path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "levels")
    for _ in range(3):
        repo.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=1)
    repo.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-paired-budget=100")
    v = json.loads((repo.path / "run.json").read_text())["results"][0]["verdicts"]["throughput"]
    p = v["paired"]
    assert p["round_pairs"][:6] == [0, 0, 1, 1, 2, 2], p
    for side in ("base_rounds", "head_rounds"):  # 2 rounds of one process, 2 levels
        assert all(len(set(p[side][i : i + 2])) == 2 for i in (0, 2, 4)), p


# a test that took DEAR more seconds in the first stage than it did (pytest's own report of
# its duration, raised in the run itself, never in a round process): the clock, controlled
DEAR = (
    ROUND_CLOCK
    + """
import os


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    dear = item.name in os.environ.get("DEAR", "") and call.when == "call"
    if dear and not os.environ.get("GPUPERF_ROUNDS_OUT"):
        outcome.get_result().duration += 400.0
"""
)


@pytest.fixture
def two_tests(pytester, monkeypatch):
    bench = BENCH + BENCH.split("import work", 1)[1].replace("def test_step", "def test_dear")
    return saved_repo(pytester, monkeypatch, bench, DEAR, tests=2)


def test_a_test_whose_rounds_would_not_fit_the_budget_is_left_to_the_first_stage(
    two_tests, monkeypatch
):
    """On the H200 the stage started rounds of two QLoRA batch sweeps (87 s each in the
    first stage) in a budget of 200 s and spent it all before the first round ended. A
    test whose rounds, priced at its first-stage time, cannot fit is left out up front,
    said so; the others are still re-measured."""
    monkeypatch.setenv("DEAR", "test_dear")
    r = two_tests.runpytest(*FAST, "--gpuperf-json=run.json")
    out = r.stdout.str()
    assert "1 figure(s) of 1 test(s) not re-measured (left to the first stage): their rounds would not fit " in out
    assert "(a round priced at a test's time in the first stage, its sampling and kernel pass " \
           "capped as a round's, a side, the base's at the baseline's saved time: test_dear 20" \
           in out, out  # the mean of the head's 400 s and the base's saved time
    assert "paired stage against the baseline's commit" in out, out
    got = {d["nodeid"]: d["verdicts"]["throughput"]
           for d in json.loads((two_tests.path / "run.json").read_text())["results"]}  # fmt: skip
    assert got["test_p.py::test_step"]["paired"]["rounds"] == 6
    assert "paired" not in got["test_p.py::test_dear"]
    assert got["test_p.py::test_dear"]["status"] == "inconclusive"
    assert got["test_p.py::test_dear"]["reason"].endswith(
        "; not re-measured by the paired stage: its test was left out of the rounds (the "
        "stage's line says why)")


def test_a_base_that_was_dear_when_saved_is_priced_at_its_own_time(pytester, monkeypatch):
    """On the H200 a base saved before the profiler's trace was read raw made a static
    decoder's round of both builds 53.9 s where the head's price alone was 14.5 s a side:
    the stage kept the test and spent 139 s before it saw that no two rounds a pair fit. The
    base's side is priced at the test's time when the baseline was saved (its entries'
    duration_s): here 400 s more than the head's, so the test is left out up front."""
    monkeypatch.setenv("DEAR", "test_dear")  # while the sessions are saved: the base's time
    bench = BENCH + BENCH.split("import work", 1)[1].replace("def test_step", "def test_dear")
    repo = saved_repo(pytester, monkeypatch, bench, DEAR, tests=2)
    monkeypatch.delenv("DEAR")  # the head's own run is cheap
    r = repo.runpytest(*FAST, "--gpuperf-json=run.json")
    out = r.stdout.str()
    assert "1 figure(s) of 1 test(s) not re-measured (left to the first stage): their rounds would not fit " in out
    assert "the base's at the baseline's saved time: test_dear 20" in out, out
    got = {d["nodeid"]: d["verdicts"]["throughput"]
           for d in json.loads((repo.path / "run.json").read_text())["results"]}  # fmt: skip
    assert got["test_p.py::test_step"]["paired"]["rounds"] == 6
    assert "paired" not in got["test_p.py::test_dear"]


def test_when_no_test_fits_the_stage_measures_nothing_and_says_so(two_tests, monkeypatch):
    monkeypatch.setenv("DEAR", "test_step test_dear")
    r = two_tests.runpytest(*FAST, "--gpuperf-json=run.json", "--gpuperf-paired-budget=500")
    r.stdout.fnmatch_lines([
        "*paired stage against *: 2 figure(s) of 2 test(s) the first stage left inconclusive, "
        "not measured: their rounds would not fit the budget of 500 s (a round priced at a "
        "test's time in the first stage, its sampling and kernel pass capped as a round's, a "
        "side, the base's at the baseline's saved time: test_*20? s, test_*20? s; all the "
        "stage's tests would need about 48?? s, --gpuperf-paired-budget); "
        "the first stage's verdicts stand",
    ])  # fmt: skip
    for d in json.loads((two_tests.path / "run.json").read_text())["results"]:
        assert "paired" not in d["verdicts"]["throughput"], d["nodeid"]


@pytest.mark.parametrize("error", ["rounds", "bug"])
def test_a_stage_that_measured_nothing_still_names_the_tests_it_left(two_tests, monkeypatch,
                                                                       error):  # fmt: skip
    """On the H200 the generation part's line said only why its one kept test was not
    measured (its base's rounds did not fit); the two decoder tests it had left to the
    first stage up front were named on their figures but not in the line."""
    import pytest_gpuperf.paired.rounds as rounds

    def fail(*args, **kwargs):
        if error == "rounds":
            raise rounds.OutOfTime("2 rounds a process pair do not fit the budget")
        raise ValueError("a bug")

    monkeypatch.setattr(rounds, "measure_rounds", fail)
    monkeypatch.setenv("DEAR", "test_dear")
    r = two_tests.runpytest(*FAST)
    said = ("2 rounds a process pair do not fit the budget" if error == "rounds"
            else "ValueError: a bug")  # fmt: skip
    r.stdout.fnmatch_lines([
        f"gpuperf: paired stage against *: 1 figure(s) of 1 test(s) the first stage left "
        f"inconclusive, not measured: {said}; the first stage's verdicts stand; 1 figure(s) "
        "of 1 test(s) not re-measured (left to the first stage): their rounds would not fit the budget *",
    ])  # fmt: skip


def test_a_stage_cut_by_ctrl_c_says_what_its_rounds_were_re_measuring(two_tests, monkeypatch):
    """A CI job's time limit (timeout -s INT) cut the stage on the H200 twice, and its line
    said only "interrupted": what it was re-measuring, and what it had left to the first
    stage, was lost."""
    import pytest_gpuperf.paired.rounds as rounds

    def cut(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rounds, "measure_rounds", cut)
    monkeypatch.setenv("DEAR", "test_dear")
    r = two_tests.runpytest(*FAST)
    assert r.ret == pytest.ExitCode.INTERRUPTED, r.stdout.str()
    r.stdout.fnmatch_lines([
        "gpuperf: paired stage interrupted (Ctrl-C) after * s, re-measuring 1 "
        "figure(s) of 1 test(s) the first stage left inconclusive against * within 4?? s; 1 "
        "figure(s) of 1 test(s) not re-measured (left to the first stage): their rounds would not fit the "
        "budget of 4?? s (a round priced at a test's time in the first stage, its sampling and "
        "kernel pass capped as a round's, a side, the base's at the baseline's saved time: "
        "test_dear 20? s; *",
    ])  # fmt: skip


def test_a_first_look_whose_rounds_do_not_fit_measures_the_rest_without_its_dearest(
    two_tests, monkeypatch
):
    """On the H200 (2026-12-03, run 4) a realistic-length QLoRA step priced at 13 s a side
    a round took 110.5 s for a pair's first round of both builds beside a cheap test: no two
    rounds a pair fit, and the stage measured nothing of either. Now the dearest by what its
    rounds took is left to the first stage and the rest is measured in new process pairs.
    The first look's rounds here are a stand-in (no clock needed); the second try is real."""
    import pytest_gpuperf.paired.rounds as rounds
    from pytest_gpuperf.paired import worker as roundworker

    real, calls = rounds.measure_rounds, []

    def first_too_dear(builds, env, work, root, tree, **kw):
        select = json.loads(Path(env[roundworker.SELECT]).read_text(encoding="utf-8"))
        calls.append((select, kw.get("pair0", 0)))
        if len(calls) > 1:
            return real(builds, env, work, root, tree, **kw)
        got = rounds.Measured(pair=[0], asked=kw["rounds"])
        got.seconds = {"test_p.py::test_dear": 150.0, "test_p.py::test_step": 2.0}
        got.timing.start_s = 1.0
        got.timing.record(0, 152.0)
        exc = rounds.TooDear("2 rounds a process pair do not fit the budget")
        exc.got = got
        raise exc

    import pytest_gpuperf.paired.figures as pairedfigs

    more = []  # a second look asked for every test it is given: the one still measured

    def second_look(*args, **kwargs):
        more.append((args[6], kwargs["pair0"]))
        return None, "none here"

    monkeypatch.setattr(rounds, "measure_rounds", first_too_dear)
    monkeypatch.setattr(rounds, "measure_more", second_look)
    monkeypatch.setattr(pairedfigs, "undecided_tests",
                        lambda todo, *a: sorted({r.nodeid for r, _, _ in todo}))  # fmt: skip
    r = two_tests.runpytest(*FAST, "--gpuperf-json=run.json")
    out = r.stdout.str()
    assert calls == [(["test_p.py::test_dear", "test_p.py::test_step"], 0),
                     (["test_p.py::test_step"], 3)], calls  # fmt: skip
    assert more == [(["test_p.py::test_step"], 6)], more  # new pairs again, numbered on
    assert "no more rounds of the 1 test(s) still undecided after them: none here" in out, out
    assert ("its first 1 round(s) showed that its tests' rounds no longer fit the budget, so 1 "
            "test(s) were left out of the rounds (a round of both builds: test_dear 150 s) "
            "and the other 1 re-measured in new process pairs") in out, out
    got = {d["nodeid"]: d["verdicts"]["throughput"]
           for d in json.loads((two_tests.path / "run.json").read_text())["results"]}  # fmt: skip
    step, dear = got["test_p.py::test_step"], got["test_p.py::test_dear"]
    assert step["status"] == "unchanged" and step["paired"]["rounds"] == 6, step
    assert step["paired"]["round_pairs"] == [3, 3, 4, 4, 5, 5]
    assert "paired" not in dear and dear["status"] == "inconclusive"
    assert dear["reason"].endswith("; not re-measured by the paired stage: its first rounds "
                                   "did not fit")  # fmt: skip

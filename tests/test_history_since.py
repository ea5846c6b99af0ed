"""Where a history is given (--gpuperf-history), a REGRESSED figure's line and its markdown
row say since which run and commit the figure has been at its new level, and how many
commits lie in that range (history/since.py, run/history.py levels_since): the history's
change finding on the figure's series with tonight's value added. No step found (a
regression first seen tonight): nothing more is said."""

import json
import subprocess

import pytest

from pytest_gpuperf.history.record import dumps
from pytest_gpuperf.history.since import new_levels, since_text
from pytest_gpuperf.history.store import Run, read_history
from pytest_gpuperf.judging.explain import failure_lines
from pytest_gpuperf.outputs.text import verdict_rows

from .gateproject import FAST, saved
from .historydata import commit, noisy, record, write_series
from .test_explain import NODE, _entries, _regressed

TONIGHT = Run("this run", "2027-01-01T02:00:00+00:00", "f" * 40, False, "h200", False, "run", {})


def test_a_figure_slower_for_nights_names_the_first_slow_run_and_its_range(tmp_path):
    write_series(tmp_path, noisy(20, 0.004, 1) + [v * 0.9 for v in noisy(6, 0.004, 2)], test=NODE)
    hist = read_history(tmp_path)
    found = new_levels(hist, [(NODE, "throughput", 900.0)], "h200", TONIGHT)
    since = found[(NODE, "throughput")]
    assert since.first_bad.commit == commit(20) and since.last_good.commit == commit(19)
    assert since_text(since, 3) == (f"at this level since 2026-06-21 (run night0020.json, commit "
                                    f"{commit(20)[:12]}); 3 commits in range "
                                    f"{commit(19)[:12]}..{commit(20)[:12]}")  # fmt: skip
    assert since_text(since, None).endswith(f"; range {commit(19)[:12]}..{commit(20)[:12]}")
    assert "; 1 commit in range" in since_text(since, 1)


def test_no_step_in_the_history_says_nothing_more(tmp_path):
    write_series(tmp_path, noisy(20, 0.004, 3), test=NODE)
    hist = read_history(tmp_path)
    # slower tonight only: one run at a new level is not yet a step (3 runs make one)
    assert new_levels(hist, [(NODE, "throughput", 900.0)], "h200", TONIGHT) == {}
    # a figure the history never saw, or another profile's
    assert new_levels(hist, [("b.py::test_new", "throughput", 1.0)], "h200", TONIGHT) == {}
    assert new_levels(hist, [(NODE, "throughput", 900.0)], "h100", TONIGHT) == {}


def test_the_newest_change_for_the_better_says_nothing(tmp_path):
    values = noisy(12, 0.004, 4) + [v * 0.9 for v in noisy(12, 0.004, 5)]
    values += [v * 1.05 for v in noisy(8, 0.004, 6)]  # slower, then partly back
    write_series(tmp_path, values, test=NODE)
    found = new_levels(read_history(tmp_path), [(NODE, "throughput", 945.0)], "h200", TONIGHT)
    assert found == {}


def test_the_line_and_the_row_carry_it():
    since = {(NODE, "throughput"): "at this level since 2026-06-21 (run n.json, commit abc)"}
    (line,) = failure_lines([_regressed()], _entries(), "h200", None, None, since)
    assert line.endswith("; confirmed in a fresh process; at this level since 2026-06-21 "
                         "(run n.json, commit abc)")  # fmt: skip
    (row,) = verdict_rows([_regressed()], (), since)
    assert row[0] == "REGRESSED" and row[-1].endswith("at this level since 2026-06-21 (run "
                                                      "n.json, commit abc)")  # fmt: skip
    (plain,) = failure_lines([_regressed()], _entries(), "h200", None, None)
    assert "at this level" not in plain


def _git(path, *args):
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


@pytest.mark.slow  # three pytest runs in process, and git: about 3.5 s
def test_a_run_given_a_history_says_since_when_in_its_line_and_step_summary(project, monkeypatch):
    """A real run (virtual clock) 1.5x slower than its baseline, whose history has it at
    that level for 8 nights: the gate's line and the step summary name the first slow
    night's run and commit, and the 2 commits between it and the last good one."""
    base = saved(project)
    level = base["entries"]["test_b.py::test_spin"]["metrics"]["throughput"]["history"][-1]["median"]
    _git(project.path, "init", "-q")
    commits = []
    for i in range(4):
        (project.path / "note.txt").write_text(str(i))
        _git(project.path, "add", "note.txt")
        _git(project.path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{i}")
        commits.append(_git(project.path, "rev-parse", "HEAD"))
    hist = project.path / "hist"
    hist.mkdir()
    values = noisy(20, 0.003, 7, level=level) + noisy(8, 0.003, 8, level=level / 1.5)
    for i, v in enumerate(values):
        rec = record(i, [("test_b.py::test_spin", "throughput", v, "tokens/s", "higher",
                          None, ())], profile="cpu")  # fmt: skip
        rec["commit"] = commits[0] if i < 19 else commits[1] if i == 19 else commits[3]
        (hist / f"night{i:04d}.json").write_text(dumps(rec))
    monkeypatch.setenv("SLOW", "0.5")
    step = project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = project.runpytest(*FAST, "-k", "test_spin", "--gpuperf-history=hist",
                               "--gpuperf-no-confirm")  # fmt: skip
    assert result.ret != 0
    said = (f"at this level since 2026-06-21 (run night0020.json, commit {commits[3][:12]}); "
            f"2 commits in range {commits[1][:12]}..{commits[3][:12]}")  # fmt: skip
    out = result.stdout.str()
    (line,) = [x for x in out.splitlines() if x.startswith("PERFORMANCE REGRESSION")]
    assert f"; {said}; reproduce: pytest test_b.py::test_spin" in line
    assert said in step.read_text().replace("\\", "")  # markdown escapes its parentheses
    # and the run recorded itself into that history, its verdict regressed
    runs = sorted(hist.glob("*.json"))
    assert len(runs) == 29
    newest = max(runs, key=lambda p: p.stat().st_mtime_ns)
    assert json.loads(newest.read_text())["figures"]["verdict"] == ["regressed"]

"""`gpuperf baseline rolling` (history/rolling.py): each figure's last N sessions at one
level, from made-up histories written with the project's own record writer (historydata):
only after the newest step, never an unconfirmed improvement or a regression, never
another card, nothing written on a dry run, nothing the history does not hold dropped
unasked, a bad directory one line."""

import json

from pytest_gpuperf.baseline.history import restart_note, values_of, window
from pytest_gpuperf.baseline.schema import SCHEMA
from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.cli.main import main as gpuperf_main
from pytest_gpuperf.core.verdict import Rule

from .historydata import CARD, START, commit, write_series

KEY, FIG = "b.py::test_x", "throughput"
H100 = {**CARD, "name": "NVIDIA H100", "uuid": "GPU-9"}
OTHER = {**CARD, "uuid": "GPU-2", "host": "node2"}


def session(i, median=1000.0, sid=None):
    """Night i's baseline session, as a save of that run writes it."""
    from datetime import timedelta

    return {"median": median, "date": (START + timedelta(days=i)).isoformat(timespec="seconds"),
            "commit": commit(i), "session": sid or f"s{i:04d}", "gpu_uuid": "GPU-1",
            "host": "node1"}  # fmt: skip


def baseline(path, items):
    data = {"schema": SCHEMA, "version": 2, "profile": "h200", "updated": "2026-06-01",
            "entries": {KEY: {"environment": {"gpu": "NVIDIA H200", "driver": "580.159.04"},
                              "date": items[-1]["date"], "commit": items[-1]["commit"],
                              "flags": {}, "metrics": {FIG: {
                                  "unit": "GB/s", "direction": "higher",
                                  "median": items[-1]["median"], "noise_class": "bandwidth",
                                  "history": items}}}}}  # fmt: skip
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def rolling(hist, base, *more):
    return gpuperf_main(["baseline", "rolling", str(hist), "--profile", "h200", "--baseline",
                         str(base), *more])  # fmt: skip


def judged(base):
    m = load(base).entries[KEY]["metrics"][FIG]
    return [h.get("session") for h in window(m)], values_of(m), m


def test_it_takes_only_the_runs_after_the_newest_step(tmp_path, capsys):
    hist = tmp_path / "hist"
    hist.mkdir()
    write_series(hist, [1000.0] * 16 + [1030.0] * 6)  # 3% faster from night 16, unchanged
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    assert rolling(hist, base, "--sessions", "10") == 0
    out = capsys.readouterr().out
    sessions, values, m = judged(base)
    assert sessions == [f"s{i:04d}" for i in range(16, 22)] and values == [1030.0] * 6
    assert f"{KEY} {FIG}: took 6 run(s) of card GPU-1, 2026-06-17 {commit(16)[:12]}" in out
    assert "at or after the change first seen in night0016.json" in out
    assert [h["session"] for h in m["history"][:3]] == ["s0000", "s0001", "s0002"]  # kept
    assert "rolling baseline" in restart_note(m)
    assert load(base).entries[KEY]["commit"] == commit(21)
    # run again: already so, the file untouched
    before = base.read_bytes()
    assert rolling(hist, base, "--sessions", "10") == 0
    assert "(already so)" in capsys.readouterr().out and base.read_bytes() == before


def test_an_unconfirmed_improvement_or_a_regression_is_never_taken(tmp_path, capsys):
    hist = tmp_path / "hist"
    hist.mkdir()
    verdicts = {i: "improved" for i in range(5, 12)} | {4: "regressed"}
    rules = {
        5: (Rule.UNCONFIRMED.value, "end of run"),
        6: (None, None),
        7: (Rule.LADDER.value, "stage 1"),  # recorded before Rule.UNCONFIRMED: nothing re-measured
        8: (Rule.LEFT_OUT.value, "paired stage"),  # the paired stage left it: not re-measured
        9: (Rule.STAGE1_STANDS.value, "paired stage"),
        10: (Rule.CONFIRM.value, "fresh process"),  # a fresh process showed it too
        11: (Rule.EACH_PAIR.value, "paired stage"),  # each process pair bore it out
    }  # fmt: skip
    from pytest_gpuperf.history.rolling import REMEASURED
    from pytest_gpuperf.paired.stage import STAGE

    assert STAGE in REMEASURED  # the paired stage's own name
    write_series(hist, [1000.0] * 12, verdicts=verdicts, rules=rules)
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    for force in ((), ("--force",)):  # no flag takes them
        assert rolling(hist, base, "--sessions", "5", *force) == 0
        out = capsys.readouterr().out
        assert judged(base)[0] == ["s0001", "s0002", "s0003", "s0010", "s0011"]
        assert "skipped 5 improved, unconfirmed, 1 regressed" in out


def test_runs_of_another_card_are_never_taken(tmp_path, capsys):
    hist = tmp_path / "hist"
    hist.mkdir()
    cards = {i: OTHER for i in (3, 5, 7)} | {i: H100 for i in (4, 8)}
    write_series(hist, [1000.0] * 10, cards=cards)
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    assert rolling(hist, base, "--sessions", "5", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "skipped 2 another GPU (NVIDIA H100), 3 another card (GPU-2)" in out
    assert rolling(hist, base, "--sessions", "10", "--card", "any", "--dry-run") == 0
    assert "took 8 run(s) of any card" in capsys.readouterr().out  # the H100's two: never
    assert rolling(hist, base, "--sessions", "5") == 0
    capsys.readouterr()
    sessions, _, m = judged(base)
    assert sessions == ["s0000", "s0001", "s0002", "s0006", "s0009"]
    assert {h["gpu_uuid"] for h in window(m)} == {"GPU-1"}
    assert rolling(hist, base, "--sessions", "3", "--card", "GPU-2") == 0
    assert judged(base)[0] == ["s0003", "s0005", "s0007"]


def test_a_dry_run_writes_nothing(tmp_path, capsys):
    hist = tmp_path / "hist"
    hist.mkdir()
    write_series(hist, [1000.0] * 8)
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    before = base.read_bytes()
    assert rolling(hist, base, "--sessions", "5", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "took 5 run(s)" in out and "1 figure(s) would change; dry run: nothing written" in out
    assert base.read_bytes() == before
    assert not list(tmp_path.glob(".h200.json.*.tmp"))


def test_sessions_the_history_does_not_hold_are_not_dropped_unasked(tmp_path, capsys):
    hist = tmp_path / "hist"
    hist.mkdir()
    write_series(hist, [1000.0] * 12)
    # 8 sessions saved elsewhere (ids the history never saw), nights 0-7
    base = baseline(tmp_path / "h200.json", [session(i, sid=f"x{i}") for i in range(8)])
    before = base.read_bytes()
    assert rolling(hist, base, "--sessions", "5") == 1
    err = capsys.readouterr().err
    assert err.count("refused:") == 3 and "session x0/GPU-1" in err
    assert f"gpuperf history import {hist} {base} keeps them" in err
    assert base.read_bytes() == before
    assert rolling(hist, base, "--sessions", "5", "--force") == 0
    _, _, m = judged(base)
    assert len(m["history"]) == 10 and len(m["history"][5]["restart"]["forced"]) == 3


def test_never_older_than_what_the_file_judges_against(tmp_path, capsys):
    """An accepted restart at night 8 is not undone by taking the nights before it."""
    hist = tmp_path / "hist"
    hist.mkdir()
    write_series(hist, [1000.0] * 10)
    items = [session(i) for i in range(3)] + [session(8)]
    items[3]["restart"] = {"date": "2026-06-09", "reason": "accepted", "commit": None,
                           "who": None}  # fmt: skip
    base = baseline(tmp_path / "h200.json", items)
    assert rolling(hist, base, "--sessions", "5") == 0
    out = capsys.readouterr().out
    assert "left as it was: 2 run(s) at its level to take, 3 needed" in out
    assert "older than the sessions the file judges against now" in out
    assert judged(base)[0] == ["s0008"]


def test_bad_input_is_one_line(tmp_path, capsys):
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    assert rolling(tmp_path / "nowhere", base) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gpuperf baseline rolling: history {tmp_path / 'nowhere'}: is not a directory"
    assert rolling(tmp_path, tmp_path / "none.json") == 2
    assert "no baseline file" in capsys.readouterr().err
    assert rolling(tmp_path, base, "--sessions", "1") == 2
    assert "--sessions 1: must be 3 to 10" in capsys.readouterr().err
    (tmp_path / "h").mkdir()
    assert rolling(tmp_path / "h", base) == 2
    assert "holds no run of profile 'h200'" in capsys.readouterr().err


def test_archived_runs_are_read_for_their_rules_and_flags(tmp_path, capsys):
    """Runs gathered by `gpuperf history compact` (an archive's `<file>#<i>`) are read back
    for the rule that decides an improvement, as a run's own file is."""
    from pytest_gpuperf.history.compact import compact

    hist = tmp_path / "hist"
    hist.mkdir()
    verdicts = {3: "improved", 4: "improved"}
    rules = {3: (Rule.UNCONFIRMED.value, "end of run"), 4: (Rule.CONFIRM.value, "fresh process")}
    write_series(hist, [1000.0] * 8, verdicts=verdicts, rules=rules)
    compact(hist, "2026-06-07")  # nights 0-5 into one archive
    assert len(list(hist.glob("*.json"))) == 3
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    assert rolling(hist, base, "--sessions", "6") == 0
    assert "skipped 1 improved, unconfirmed" in capsys.readouterr().out
    assert judged(base)[0] == ["s0001", "s0002", "s0004", "s0005", "s0006", "s0007"]


def test_a_step_for_the_worse_nobody_accepted_never_becomes_the_level(tmp_path, capsys):
    """A 5% slowdown from night 16 that the gate left inconclusive night after night (a
    small suite's blind figure) is a regression, not a new level: rolling past it would
    judge the next nights UNCHANGED against the slow runs. The figure is left as it was
    until `gpuperf baseline accept` restarts it; a step for the better, an environment's
    step or an accepted one is still rolled."""
    hist = tmp_path / "hist"
    hist.mkdir()
    verdicts = {i: "inconclusive" for i in range(16, 22)}
    write_series(hist, [1000.0] * 16 + [950.0] * 6, verdicts=verdicts)
    items = [session(i) for i in range(3)]
    base = baseline(tmp_path / "h200.json", items)
    before = base.read_bytes()
    assert rolling(hist, base, "--sessions", "5") == 0
    out = capsys.readouterr().out
    said = "left as it was: its newest change is -5.00% slower, first seen in night0016.json"
    assert said in out, out
    assert base.read_bytes() == before
    accepted = [*items, session(18)]
    accepted[3]["median"], accepted[3]["restart"] = 950.0, {
        "date": "2026-06-19", "reason": "accepted", "commit": None, "who": None}
    base = baseline(tmp_path / "h200.json", accepted)
    assert rolling(hist, base, "--sessions", "3") == 0
    capsys.readouterr()
    assert judged(base)[1] == [950.0] * 3  # accepted: the runs since the restart are rolled


def test_an_entry_whose_figures_end_at_other_commits_names_none(tmp_path, capsys):
    """The paired stage builds the entry's commit and takes a checked regression back where
    head and that build measure alike. The kernel time regressed from night 20 (left as it
    was: its sessions end at night 2), the wall time rolled to night 21: naming night 21's
    commit would build the regression into the base and read it unchanged. No commit is
    named: the paired stage leaves the test to stage 1, whose regression stands."""
    from pytest_gpuperf.history.record import dumps

    from .historydata import record

    hist = tmp_path / "hist"
    hist.mkdir()
    kern = "throughput_kernels"
    for i in range(22):
        slow = i >= 20
        rec = record(i, [(KEY, FIG, 1000.0, "GB/s", "higher", "bandwidth", ()),
                         (KEY, kern, 950.0 if slow else 1000.0, "GB/s", "higher",
                          "kernel-time", (), "regressed" if slow else "unchanged")])  # fmt: skip
        (hist / f"night{i:04d}.json").write_text(dumps(rec))
    base = baseline(tmp_path / "h200.json", [session(i) for i in range(3)])
    data = json.loads(base.read_text())
    metrics = data["entries"][KEY]["metrics"]
    metrics[kern] = {**metrics[FIG], "noise_class": "kernel-time"}
    base.write_text(json.dumps(data))
    assert rolling(hist, base, "--sessions", "5") == 0
    assert f"{KEY} {kern}: left as it was" in capsys.readouterr().out
    entry = load(base).entries[KEY]
    ends = {window(m)[-1]["commit"] for m in entry["metrics"].values()}
    assert ends == {commit(21), commit(2)}  # the wall time rolled, the kernel time not
    assert entry["commit"] is None


def test_an_accepted_restart_keeps_its_record_when_its_session_is_taken(tmp_path, capsys):
    """The file judges from night 8, where `gpuperf baseline accept` restarted it (its
    reason, who, commit); the history holds nights 8-12 at that level. Rolling takes night
    8 as its first session: the accept's record stays on it, never replaced unsaid."""
    hist = tmp_path / "hist"
    hist.mkdir()
    write_series(hist, [1000.0] * 13)
    items = [session(i) for i in range(3)] + [session(8)]
    accepted = {"date": "2026-06-09", "reason": "accepted: the new allocator, PR 12",
                "commit": commit(8), "who": "ana"}  # fmt: skip
    items[3]["restart"] = accepted
    base = baseline(tmp_path / "h200.json", items)
    assert rolling(hist, base, "--sessions", "5") == 0
    capsys.readouterr()
    sessions, _, m = judged(base)
    assert sessions == [f"s{i:04d}" for i in range(8, 13)]
    assert window(m)[0]["restart"] == accepted

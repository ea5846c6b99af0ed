"""baseline/edit.py: merging two files' sessions (commutative, idempotent, every session
kept, the result loads), and the restart record's checks in baseline/schema.py."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gpuperf.baseline.edit import merge_files
from pytest_gpuperf.baseline.history import restart_note, values_of, window
from pytest_gpuperf.baseline.schema import SCHEMA, BaselineError, validate

P = Path("cpu.json")
POOL = [
    {"median": 100.0 + i, "date": f"2026-12-0{i + 1}T00:00:00+00:00", "commit": f"c{i}",
     "session": f"s{i}", "host": "h"}
    for i in range(8)
]  # fmt: skip
RESTART = {"date": "2026-12-09T00:00:00+00:00", "reason": "bigger batch", "commit": None,
           "who": "ci"}  # fmt: skip


def file_of(histories, extra=None):
    entries = {}
    for key, hist in histories.items():
        if hist:
            entries[key] = {
                "environment": {"gpu": "cpu: x"}, "date": hist[-1]["date"], "commit": None,
                "flags": {},
                "metrics": {"throughput": {"unit": "tokens/s", "direction": "higher",
                                           "median": hist[-1]["median"], "n": 1,
                                           "history": hist}},
            }  # fmt: skip
    data = {"schema": SCHEMA, "version": 2, "profile": "cpu", "updated": "2026-12-01",
            "entries": entries, **(extra or {})}  # fmt: skip
    return validate(P, json.loads(json.dumps(data)))


def item(i, restart):
    return {**POOL[i], "restart": RESTART} if restart else dict(POOL[i])


histories = st.dictionaries(
    st.sampled_from(["t::a", "t::b"]),
    st.lists(st.tuples(st.integers(0, 7), st.booleans()), max_size=6, unique_by=lambda t: t[0]).map(
        lambda xs: [item(i, r) for i, r in sorted(xs)]
    ),
)


def ids(f):
    return {
        (k, h["session"]) for k, e in f.entries.items() for h in e["metrics"]["throughput"]["history"]
    }


@settings(max_examples=150, deadline=None)
@given(histories, histories)
def test_merge_is_commutative_idempotent_and_keeps_every_session(a, b):
    fa, fb = file_of(a), file_of(b)
    ab, ba = merge_files(fa, fb, P), merge_files(fb, fa, P)
    assert ab.to_json() == ba.to_json()
    assert ids(ab) == ids(fa) | ids(fb)
    assert merge_files(ab, ab, P).to_json() == ab.to_json()
    assert merge_files(ab, fa, P).to_json() == ab.to_json()
    validate(P, json.loads(json.dumps(ab.to_json())))  # the merge loads
    for e in ab.entries.values():
        hist = e["metrics"]["throughput"]["history"]
        assert [h["date"] for h in hist] == sorted(h["date"] for h in hist)
        assert len({h["session"] for h in hist}) == len(hist)  # a session once


def test_a_session_both_hold_keeps_its_restart_record():
    plain = file_of({"t::a": [item(0, False), item(1, False)]})
    marked = file_of({"t::a": [item(0, False), item(1, True)]})
    merged = merge_files(plain, marked, P)
    hist = merged.entries["t::a"]["metrics"]["throughput"]["history"]
    assert [h["session"] for h in hist] == ["s0", "s1"] and hist[1]["restart"] == RESTART


def test_with_the_ancestor_a_session_one_side_dropped_stays_out():
    base = file_of({"t::a": [item(0, False), item(1, False)]})
    ours = file_of({"t::a": [item(1, False), item(2, False)]})  # its save dropped s0
    theirs = file_of({"t::a": [item(0, False), item(1, False), item(3, False)]})
    merged = merge_files(ours, theirs, P, base)
    got = [h["session"] for h in merged.entries["t::a"]["metrics"]["throughput"]["history"]]
    assert got == ["s1", "s2", "s3"]
    assert [h["session"] for h in merge_files(ours, theirs, P).entries["t::a"]["metrics"]["throughput"]["history"]] == ["s0", "s1", "s2", "s3"]


def test_merge_refuses_other_profiles_versions_and_differing_keys():
    a = file_of({"t::a": [item(0, False)]}, {"comment": "ours"})
    b = file_of({"t::a": [item(1, False)]}, {"comment": "theirs"})
    with pytest.raises(BaselineError, match="top-level key 'comment' differs"):
        merge_files(a, b, P)
    base = file_of({}, {"comment": "ours"})
    assert merge_files(a, b, P, base).extra == {"comment": "theirs"}  # only theirs changed it
    b.profile = "h200"
    with pytest.raises(BaselineError, match=r"cannot merge profile 'cpu' \(ours\) with profile 'h200' \(theirs\)"):
        merge_files(a, b, P)


def test_a_version_1_file_migrates_and_merges_with_a_version_2_file():
    """The first merge after the 1 -> 2 upgrade: git's ancestor (or a side) is version 1."""
    a = file_of({"t::a": [item(0, False), item(1, False)]})
    old = validate(P, json.loads(json.dumps(dict(file_of({"t::a": [item(0, False)]}).to_json(), version=1))))
    assert old.read_version == 1
    for merged in (merge_files(a, old, P), merge_files(old, a, P), merge_files(a, a, P, old)):
        assert ids(merged) == {("t::a", "s0"), ("t::a", "s1")}
        assert merged.to_json()["version"] == 2 and validate(P, merged.to_json()).read_version == 2


def test_the_window_starts_at_the_last_restart():
    m = {"history": [item(0, False), item(1, False), item(2, True), item(3, False)]}
    assert values_of(m) == [102.0, 103.0]
    assert restart_note(m) == "history restarted on 2026-12-09: bigger batch"
    assert window(m, exclude_session="s2") == [POOL[3]]
    # ten sessions after it, the restart has left the window: the note goes with it
    later = {"history": [item(0, True), *({**POOL[1], "session": f"n{i}"} for i in range(10))]}
    assert restart_note(later) is None and len(window(later)) == 10


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("yes", "'restart' must be an object"),
        ({"date": "2026-12-09", "reason": ""}, "restart 'reason' must be a non-empty string"),
        ({"reason": "x"}, "restart 'date' must be a non-empty string"),
        ({"date": "d", "reason": "x", "who": 5}, "restart 'who' must be a string or null"),
        ({"date": "d", "reason": "x", "forced": "busy"}, "restart 'forced' must be a list"),
    ],
)
def test_a_malformed_restart_record_is_one_clear_error(record, message):
    data = file_of({"t::a": [item(0, False)]}).to_json()
    data["entries"]["t::a"]["metrics"]["throughput"]["history"][0]["restart"] = record
    with pytest.raises(BaselineError, match=f"cpu.json: entry 't::a' metric 'throughput' history\\[0\\]: {message}"):
        validate(P, json.loads(json.dumps(data)))


def test_the_shipped_baseline_still_loads_and_judges_its_whole_history():
    from pytest_gpuperf.baseline.store import load

    shipped = load(Path(__file__).parent.parent / "baselines" / "h200.json")
    assert shipped is not None
    for e in shipped.entries.values():
        for m in e["metrics"].values():
            assert len(window(m)) == len(m["history"]) and restart_note(m) is None


def test_accepting_a_run_that_saved_itself_marks_its_session_not_a_second_copy():
    from pytest_gpuperf.baseline.edit import restart

    f = file_of({"t::a": [item(0, False), item(1, False)]})
    m = {"unit": "tokens/s", "direction": "higher", "median": 101.0, "n": 1, "session": "s1",
         "host": "h"}  # fmt: skip
    accepted = {"t::a": {"environment": {"gpu": "cpu: x"}, "date": "2026-12-09", "commit": None,
                         "flags": {}, "metrics": {"throughput": m}}}  # fmt: skip
    out = restart(f, P, "cpu", accepted, RESTART, "2026-12-09")
    hist = out.entries["t::a"]["metrics"]["throughput"]["history"]
    assert [h["session"] for h in hist] == ["s0", "s1"] and hist[1]["restart"] == RESTART
    assert values_of(out.entries["t::a"]["metrics"]["throughput"]) == [101.0]
    # a new session is appended as the restarted history's first
    out = restart(f, P, "cpu", {"t::a": {**accepted["t::a"], "metrics": {"throughput": {**m, "session": "s9", "median": 90.0}}}}, RESTART, "2026-12-09")
    assert values_of(out.entries["t::a"]["metrics"]["throughput"]) == [90.0]
    assert len(out.entries["t::a"]["metrics"]["throughput"]["history"]) == 3
    with pytest.raises(BaselineError, match="another device"):
        restart(f, P, "cpu", {"t::a": {**accepted["t::a"], "environment": {"gpu": "NVIDIA H200"}}}, RESTART, "now")

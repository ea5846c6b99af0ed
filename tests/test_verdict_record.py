"""The verdict record (core/verdict.py): its dict form round-trips exactly, every rule after
the first appends one step, a file's unknown keys survive, and bad input is refused with
what is wrong."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.verdict import (
    Rule,
    Status,
    after,
    amend,
    from_json,
    make,
    problem,
    stage1_record,
    to_json,
)

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
maybe = st.none() | finite
text = st.text(max_size=20)
rules = st.sampled_from(list(Rule))


@st.composite
def records(draw: st.DrawFn):
    v = make(
        draw(st.sampled_from(list(Status))), draw(maybe), draw(maybe), draw(maybe),
        draw(st.floats(0.001, 0.5)), draw(text),
        rule=draw(st.none() | rules), mde=draw(maybe), basis=draw(text),
        confirmed=draw(st.none() | st.booleans()), advice=draw(st.none() | text),
    )  # fmt: skip
    for rule in draw(st.lists(rules, max_size=3)):
        v = amend(v, rule, draw(text), figures={"x": draw(maybe), "said": draw(text)},
                  note=draw(text), status=draw(st.sampled_from(list(Status))))  # fmt: skip
    if draw(st.booleans()):
        v = amend(v, None, paired={"commit": "abc", "rounds": draw(st.integers(0, 9)),
                                   "base_rounds": draw(st.lists(finite, max_size=3))},
                  stage1=stage1_record(v))  # fmt: skip
    return v


@given(records())
def test_the_dict_form_round_trips_exactly_through_json(v):
    d = json.loads(json.dumps(to_json(v)))
    assert from_json(d) == v
    assert to_json(from_json(d)) == d


@given(records(), st.sampled_from(list(Rule)), text)
def test_a_rule_appends_one_step_and_leaves_the_old_record_alone(v, rule, stage):
    w = amend(v, rule, stage, figures={"change": -0.1}, status="inconclusive", reason="why")
    assert w.trail[:-1] == v.trail and len(w.trail) == len(v.trail) + 1
    step = w.trail[-1]
    assert (step.rule, step.stage, step.status, dict(step.figures)) == (
        rule, stage, Status.INCONCLUSIVE, {"change": -0.1})  # fmt: skip
    assert amend(v, None, advice="more sessions").trail == v.trail  # an annotation: no step


def test_a_later_stage_continues_the_first_stages_trail():
    first = make("regressed", -0.1, 0.1, 0.01, 0.03, "slower", rule=Rule.LADDER)
    first = amend(first, Rule.CONFIRM, "fresh process", confirmed=True)
    later = make("unchanged", 0.0, 0.0, 0.01, 0.03, "within", rule=Rule.LADDER,
                 stage="paired stage")  # fmt: skip
    v = after(first, later, stage1=stage1_record(first))
    assert [(s.stage, s.status) for s in v.trail] == [
        ("stage 1", "regressed"), ("fresh process", "regressed"), ("paired stage", "unchanged")]
    assert v.stage1 == {"status": "regressed", "change": -0.1, "uncertainty": 0.01,
                        "reason": "slower"}  # fmt: skip
    assert v.said().splitlines()[-1] == f"paired stage, {Rule.LADDER}: unchanged"


def test_an_older_files_verdict_reads_and_its_unknown_keys_are_kept():
    old = {"status": "regressed", "change": -0.2, "tolerance": 0.03, "reason": "beyond",
           "note_from_v3": {"x": 1}}  # fmt: skip
    v = from_json(old)
    assert v.status is Status.REGRESSED and v.trail == () and v.worse is None
    assert to_json(v)["note_from_v3"] == {"x": 1}


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ([], "must be an object"),
        ({"status": "slower"}, "status must be one of regressed, failed"),
        ({"status": "regressed", "change": "9%"}, "change must be a finite number or null"),
        ({"status": "regressed", "change": math.inf}, "change must be a finite number"),
        ({"status": "regressed", "reason": 3}, "reason must be a string or null"),
        ({"status": "new", "sessions_needed": 2.5}, "sessions_needed must be a whole number"),
        ({"status": "new", "paired": [1]}, "paired must be an object or null"),
        ({"status": "new", "trail": [{"rule": "x"}]}, "trail must be a list of steps"),
    ],
)
def test_bad_input_is_refused_saying_what_is_wrong(bad, said):
    assert said in (problem(bad) or "")
    with pytest.raises(ValueError, match=said.split(" (")[0][:20]):
        from_json(bad)


def test_a_results_file_names_the_bad_verdict_and_its_result():
    d = Result(nodeid="t.py::test_a", unit="op/s", metric="ops", work_per_call=1.0).to_dict()
    d["verdicts"] = {"throughput": {"status": "slower"}}
    with pytest.raises(ValueError, match=r"'t.py::test_a' verdicts\['throughput'\]: status"):
        Result.from_dict(d)


def test_a_rule_is_one_of_the_named_set_but_a_file_may_hold_any():
    """make and amend take only Rule's names (a new rule shows in review and in the docs'
    list); a results file of another version may name others, and reads."""
    v = make("new", None, None, None, 0.03, "no baseline", rule=Rule.APART)
    with pytest.raises(ValueError, match="is not a valid Rule"):
        amend(v, "my own rule", status="regressed")
    d = {**to_json(v), "trail": [{"rule": "a rule of 2027", "stage": "stage 9",
                                  "status": "new", "figures": {}}]}  # fmt: skip
    assert from_json(d).trail[0].rule == "a rule of 2027"

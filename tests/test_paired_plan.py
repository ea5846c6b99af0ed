"""The paired stage's plan (paired/rounds.plan): after each round, how many rounds each
process pair still measures within the budget, from what the rounds cost so far. Pure: the
costs are given, no clock is read."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.paired.looks import PAIRS, salvage
from pytest_gpuperf.paired.plan import (
    affordable,
    first_need,
    fit,
    own_minimum,
    price,
    round_cap,
    round_cap_of,
    saved,
)
from pytest_gpuperf.paired.rounds import (
    MIN_PER_PAIR,
    STOP_S,
    Measured,
    RoundsError,
    Timing,
    TooDear,
    more_need,
    plan,
)
from pytest_gpuperf.paired.stage import BUDGET_FLOOR_S


def costs(start=8.0, first=20.0, round_s=10.0):
    t = Timing(start_s=start)
    t.record(0, first)
    if round_s is not None:
        t.record(1, round_s)
    return t


def test_a_plan_that_fits_is_kept():
    # pair 0 has measured 2 of 3; left: 1 round here, pair 1's start + first round + 2 more
    need = 10 + (8 + 10 + 3 * 10 + STOP_S)
    assert plan([3, 3], 0, 2, costs(), need + 1) == [3, 3]


def test_rounds_that_do_not_fit_are_cut_the_same_in_every_pair():
    need_2 = 0 + (8 + 10 + 2 * 10 + STOP_S)  # 2 a pair: none more here
    assert plan([3, 3], 0, 2, costs(), need_2 + 1) == [2, 2]


def test_a_pair_keeps_the_rounds_it_already_measured():
    assert plan([4, 4], 0, 3, costs(), 8 + 10 + 2 * 10 + STOP_S + 1) == [3, 2]


def test_when_not_even_two_rounds_a_pair_fit_the_stage_stops_saying_what_they_cost():
    with pytest.raises(RoundsError) as info:  # pair 1 needs 8 + 10 + 2 x 10 + 5 s
        plan([3, 3], 0, 2, costs(first=20.0, round_s=10.0), 30.0)
    text = str(info.value)
    assert "2 rounds a process pair do not fit the budget" in text
    assert "a round of both builds takes 10.0 s (the first of a pair 20.0 s)" in text
    assert "8.0 s to start" in text and "--gpuperf-paired-budget" in text


def test_a_first_round_alone_does_not_cut_the_plan():
    # on the H200 a pair's first round of two small tests took 22.1 s, each of them
    # measuring under 1.6 s a build: the stage stopped on that cost, with 47 s left
    t = costs(first=22.1, round_s=None)
    assert plan([3, 3], 0, 1, t, 20.0) == [3, 3]
    t.record(1, 6.0)  # the next round says what rounds cost
    assert plan([3, 3], 0, 2, t, 6.0 + 8 + 16.1 + 3 * 6.0 + STOP_S) == [3, 3]


def test_a_first_round_alone_stops_the_stage_when_not_even_a_pairs_start_fits():
    # pair 1's start and end alone take 8 + 5 s: with 10 s left the stage stops, saying so
    with pytest.raises(RoundsError, match="do not fit the budget"):
        plan([3, 3], 0, 1, costs(first=22.1, round_s=None), 10.0)


def test_a_plan_cut_on_dear_rounds_grows_back_to_the_asked_rounds():
    t = costs(first=20.0, round_s=10.0)
    left = 2 * 10 + (8 + 10 + 3 * 10 + STOP_S)  # 3 a pair fit now: 2 more here
    assert plan([2, 2], 0, 1, t, left) == [2, 2]  # without the asked rounds: as it was
    assert plan([2, 2], 0, 1, t, left, asked=[3, 3]) == [3, 3]
    assert plan([2, 2], 0, 1, t, left, asked=[5, 5]) == [3, 3]  # never more than fits


def test_an_odd_number_of_rounds_asked_is_measured_as_asked():
    # 5 rounds in 2 pairs: 3 then 2, never 3 and 3
    assert plan([3, 2], 0, 1, costs(), 1000.0) == [3, 2]
    assert plan([3, 2], 0, 3, costs(), 1000.0) == [3, 2]


def test_a_pair_whose_last_round_was_sent_as_its_last_measures_no_more():
    # its worker ended the session's fixtures after that round: another would be cold
    t = costs(first=20.0, round_s=10.0)
    assert plan([2, 2], 0, 2, t, 1000.0, asked=[3, 3]) == [2, 3]


def test_the_last_pair_stops_when_time_is_up_after_its_two_rounds():
    assert plan([3, 3], 1, 2, costs(), 0.0) == [3, 2]
    with pytest.raises(RoundsError):
        plan([3, 3], 1, 1, costs(), 0.0)  # one round of the last pair: not enough


@given(
    per=st.integers(1, 25).flatmap(lambda n: st.just([n, n])),
    grow=st.integers(0, 10),
    p=st.integers(0, 1),
    done=st.integers(1, 25),
    start=st.floats(0.0, 100.0),
    first=st.floats(0.0, 100.0),
    round_s=st.floats(0.0, 100.0),
    left=st.floats(-10.0, 5000.0),
)
def test_a_plan_never_asks_for_more_than_asked_and_fits_its_budget(
    per, grow, p, done, start, first, round_s, left
):
    done = min(done, per[p])
    t = costs(start, first, round_s)
    asked = [n + grow for n in per]  # the plan so far cut `grow` rounds a pair
    try:
        new = plan(per, p, done, t, left, asked)
    except RoundsError:
        return
    assert len(new) == len(per) and new[:p] == per[:p]
    assert new[p] >= done and all(n <= max(asked) for n in new)
    if done >= per[p]:  # its last round went out as the last: no more in that process
        assert new[p] == done
    rest = new[p + 1 :]
    assert all(n == rest[0] for n in rest) and all(n >= min(MIN_PER_PAIR, max(per)) for n in rest)
    extra = max(0.0, first - round_s)
    need = (new[p] - done) * round_s + sum(start + extra + n * round_s + STOP_S for n in rest)
    assert need <= left or (not rest and new[p] == done)


# ------------------------------------------- what a first look can afford (paired/plan.fit)


def test_the_h200s_batch_sweeps_are_left_to_the_first_stage_up_front():
    # finetune on the H200 (2026-12-03): two QLoRA batch sweeps, 112 and 87 s in the first
    # stage, a budget of 200 s (the run's test time); the stage had started their rounds and
    # spent the budget before the head's first round answered
    costs = {"sweep[7b]": 112.5, "sweep[13b]": 87.0}
    worth = {"sweep[7b]": (0, 2), "sweep[13b]": (0, 2)}
    assert fit(costs, worth, 200.0, 2) == ([], ["sweep[13b]", "sweep[7b]"])


def test_the_default_budget_holds_a_small_files_first_look_whole():
    # the own file on an H100 (2026-12-07, evidence/h100-2026-12-07-pairs3), 10% slower: its
    # seven tests' rounds priced 12.75 s a side ("all the stage's tests would need about 198 s"
    # at three pairs), two checked; at 180 s the MLP and sweep[8] (about 1 s each, the
    # dearest per figure) were left out. The other prices are made up to that total.
    costs = {"copy": 5.0, "launch": 2.0, "attention": 0.9, "sweep[256]": 1.6,
             "sweep[2048]": 0.95, "mlp": 1.2, "sweep[8]": 1.1}  # fmt: skip
    worth = {t: (int(t in ("copy", "launch")), 1 + (t == "sweep[256]")) for t in costs}
    assert first_need(sum(costs.values()), PAIRS) == pytest.approx(198.0)
    assert sorted(fit(costs, worth, 180.0, PAIRS)[1]) == ["mlp", "sweep[8]"]
    assert fit(costs, worth, BUDGET_FLOOR_S, PAIRS) == (sorted(costs), [])


def test_the_cheapest_per_figure_are_taken_first_and_checked_figures_before_all():
    costs = {"a": 30.0, "b": 8.0, "c": 20.0, "k": 25.0}
    worth = {"a": (0, 3), "b": (0, 1), "c": (0, 1), "k": (1, 1)}
    # per figure: a 10 s, b 8 s, c 20 s; k has a checked figure: first, whatever it costs
    budget = first_need(25.0 + 8.0, 2)  # k, then b fits, then a (30 s) does not
    assert fit(costs, worth, budget, 2) == (["b", "k"], ["a", "c"])
    assert fit(costs, worth, first_need(63.0, 2), 2) == (["a", "b", "k"], ["c"])


def test_a_test_whose_cost_is_unknown_costs_nothing():
    assert fit({}, {"t": (0, 1)}, first_need(0.0, 2), 2) == (["t"], [])


@given(
    st.dictionaries(
        st.sampled_from("abcdefgh"),
        st.tuples(st.floats(0, 500), st.integers(0, 2), st.integers(1, 4)),
        min_size=1,
    ),
    st.floats(0, 3000),
    st.integers(1, 3),
)
def test_a_look_fits_what_it_keeps_and_could_fit_none_of_what_it_leaves(tests, budget, pairs):
    costs = {t: c for t, (c, _, _) in tests.items()}
    worth = {t: (min(k, n), n) for t, (_, k, n) in tests.items()}
    kept, left = fit(costs, worth, budget, pairs)
    assert sorted(kept + left) == sorted(tests) and not set(kept) & set(left)
    total = sum(costs[t] for t in kept)
    if kept:
        assert first_need(total, pairs) <= budget
    for t in left:  # not even alone beside what was kept
        assert first_need(total + costs[t], pairs) > budget
    if first_need(sum(costs.values()), pairs) <= budget - 1e-6:  # sums in another order
        assert not left


def test_a_round_is_priced_at_the_first_stage_time_less_the_sampling_it_caps():
    # the H200's 7B batch sweep: 112.5 s in the first stage, 7 measurements of 56.9 s
    sampled = [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.9]
    savings = [saved(s, 0.0, 0, 0.5) for s in sampled]
    assert price(112.5, savings) == pytest.approx(112.5 - 56.9 + 7 * 0.5)
    assert price(3.0, [saved(0.2, 0.0, 0, 0.5), saved(0.4, 0.0, 0, 0.5)]) == 3.0  # under it
    assert price(1.0, [saved(5.0, 0.0, 0, 0.5)]) == 0.0  # never below nothing


def test_a_round_saves_the_kernel_pass_beyond_the_cap_and_one_chunk():
    # 10 chunks in 6 s: a round's pass stops at the 0.5 s cap after its first 0.6 s chunk
    assert saved(0.0, 6.0, 10, 0.5) == pytest.approx(6.0 - 0.6)
    # 20 chunks of 50 ms in 1 s: a round's pass takes the cap
    assert saved(0.0, 1.0, 20, 0.5) == pytest.approx(0.5)
    # 10 chunks of 0.3 s: a round's pass runs 2 of them before it passes the 0.5 s cap
    assert saved(0.0, 3.0, 10, 0.5) == pytest.approx(3.0 - 0.6)
    # one chunk of 12 s (a decoder's call under the profiler): a round traces it too
    assert saved(0.0, 12.0, 1, 0.5) == 0.0
    assert saved(9.8, 12.0, 1, 0.5) == pytest.approx(9.3)  # sampling and pass add up


@given(st.floats(0, 100), st.floats(0, 100), st.integers(0, 50), st.floats(0.01, 10))
def test_a_round_never_saves_more_than_the_measurement_took(measure_s, kernel_s, chunks, cap):
    s = saved(measure_s, kernel_s, chunks, cap)
    assert 0.0 <= s <= measure_s + kernel_s + 1e-9


def _figure(nodeid, status, measure_s=0.4):
    import types

    r = types.SimpleNamespace(nodeid=nodeid, kind="measured", measure_s=measure_s,
                              verdicts={"throughput_kernels": from_json({"status": status})})  # fmt: skip
    return (r, "throughput_kernels", "compute")


def test_a_checked_figure_is_re_measured_before_cheaper_ones_and_said_when_left():
    todo = [_figure("t.py::cheap", "inconclusive"), _figure("t.py::checked", "regressed")]
    tests = ["t.py::cheap", "t.py::checked"]
    durations = {"t.py::cheap": 1.0, "t.py::checked": 20.0}
    budget = first_need(20.0, 2)  # the checked one alone: it goes first
    kept_todo, kept, said = affordable(todo, tests, [r for r, _, _ in todo], durations, 0.5,
                                       budget, 2)  # fmt: skip
    assert kept == ["t.py::checked"] and kept_todo == [todo[1]]
    assert said.startswith("1 figure(s) of 1 test(s) not re-measured (left to the first stage): their rounds")
    # a budget that holds only the cheap one: the checked figure is left out, and said to
    # be inconclusive unchecked (paired/stage._leave makes it so: tests/test_paired_kernels.py)
    kept_todo, kept, said = affordable(todo, tests, [r for r, _, _ in todo], durations, 0.5,
                                       first_need(1.0, 2), 2)  # fmt: skip
    assert kept == ["t.py::cheap"]
    assert said.startswith("1 figure(s) of 1 test(s) not re-measured (left to the first stage), 1 of them "
                           "checked kernel-time figures, inconclusive unchecked (a first-stage "
                           "kernel-time change is not trusted alone): ")  # fmt: skip
    assert f"all the stage's tests would need about {first_need(21.0, 2):.0f} s" in said


def test_a_test_whose_kernel_pass_a_round_caps_is_priced_without_it():
    """The H200's static decoder: a 56 s test of which its kernel pass and sampling take
    most; a round caps both, so the test is kept where its first-stage time alone would
    not fit."""
    import types

    r = types.SimpleNamespace(nodeid="t.py::dec", kind="measured", measure_s=9.8,
                              kernel_s=30.0, kernel_time=types.SimpleNamespace(n=10),
                              verdicts={"throughput_kernels": from_json({"status": "inconclusive"})})  # fmt: skip
    todo = [(r, "throughput_kernels", "compute")]
    cheap = 56.0 - 9.3 - 27.0  # 19.7 s a round
    budget = first_need(cheap, 2) + 1.0
    _, kept, said = affordable(todo, ["t.py::dec"], [r], {"t.py::dec": 56.0}, 0.5, budget, 2)
    assert kept == ["t.py::dec"] and said == ""
    r.kernel_s = 0.0  # without the pass's seconds (a run before they were recorded): left
    _, kept, said = affordable(todo, ["t.py::dec"], [r], {"t.py::dec": 56.0}, 0.5, budget, 2)
    assert kept == [] and "dec 47 s" in said


def test_the_base_side_is_priced_at_its_own_saved_time():
    """A round measures both builds: a side costs the mean of the head's price and the
    base's (its baseline's saved duration less the same savings)."""
    import types

    r = types.SimpleNamespace(nodeid="t.py::dec", kind="measured", measure_s=9.5,
                              kernel_s=0.0, kernel_time=None,
                              verdicts={"throughput": from_json({"status": "inconclusive"})})  # fmt: skip
    todo = [(r, "throughput", "model")]
    head = {"t.py::dec": 24.0}  # 15 s a round once its 9 s of sampling beyond 0.5 s go
    budget = first_need(15.0, 2) + 1.0
    _, kept, _ = affordable(todo, ["t.py::dec"], [r], head, 0.5, budget, 2)
    assert kept == ["t.py::dec"]  # no base time saved: the base costs what the head does
    _, kept, _ = affordable(todo, ["t.py::dec"], [r], head, 0.5, budget, 2, {"t.py::other": 99})
    assert kept == ["t.py::dec"]  # another test's saved time changes nothing
    _, kept, said = affordable(todo, ["t.py::dec"], [r], head, 0.5, budget, 2, {"t.py::dec": 44.0})
    assert kept == [] and "dec 25 s" in said  # (15 + 35) / 2 a side
    _, kept, _ = affordable(todo, ["t.py::dec"], [r], head, 0.5, budget, 2, {"t.py::dec": 4.0})
    assert kept == ["t.py::dec"]  # a cheaper base only helps



def _result(max_time=None, **fields):
    import types

    return types.SimpleNamespace(config={} if max_time is None else {"max_time": max_time},
                                 **fields)  # fmt: skip


def test_a_round_keeps_the_max_time_its_test_set_for_itself():
    """The H200's realistic-length QLoRA step (2026-12-03, run 4): max_time=30 in its marker
    outranks a round's cap on the command line, so its rounds sample as the first stage did
    (25 s), where it was priced as if capped at 0.5 s."""
    assert round_cap_of(_result(30.0), 0.5, 10.0) == 30.0  # its marker's
    assert round_cap_of(_result(0.2), 0.5, 10.0) == 0.2  # a keyword's, under the cap
    assert round_cap_of(_result(10.0), 0.5, 10.0) == 0.5  # the run's own: the round's cap
    assert round_cap_of(_result(30.0), 0.5, None) == 0.5  # the run's max_time not known
    assert round_cap_of(_result(), 0.5, 10.0) == 0.5  # no config recorded


class _Config:
    """The two ways a run is given settings: its command line and its ini file."""

    def __init__(self, cli=None, ini=None):
        self.cli, self.ini = cli or {}, ini or {}

    def getoption(self, name, default=None):
        return self.cli.get(name, default)

    def getini(self, name):
        return self.ini.get(name, "")  # pytest's value of an ini option not set


def test_a_rounds_cap_never_contradicts_the_runs_own_minimum():
    """A round samples for at most 0.5 s, given on its command line; an ini file's
    gpuperf_min_time = 1 would contradict that in every round ("min_time=1 (ini) is above
    max_time=0.5 (command line)"), so the cap is lifted to the run's minimum."""
    assert round_cap(_Config()) == 0.5
    assert round_cap(_Config(cli={"gpuperf_max_time": "0.2"})) == 0.2  # the run's own, smaller
    assert round_cap(_Config(ini={"gpuperf_min_time": "1"})) == 1.0
    assert round_cap(_Config(ini={"gpuperf_min_time": "1500ms"})) == 1.5  # parsed as the plugin does
    assert round_cap(_Config(ini={"gpuperf_min_sample_time": "0.8s"})) == 0.8
    assert round_cap(_Config(cli={"gpuperf_min_time": "0.7s"})) == 0.7  # "0.7s": was ignored
    both = _Config(cli={"gpuperf_min_time": "0.1"}, ini={"gpuperf_min_time": "2"})
    assert round_cap(both) == 0.5  # the command line's beats the ini file's
    assert round_cap(_Config(ini={"gpuperf_min_time": "soon"})) == 0.5  # the run reports it
    assert round_cap(_Config(cli={"gpuperf_max_time": "300ms"})) == 0.3  # was taken for 0.5
    assert round_cap(_Config(ini={"gpuperf_max_time": "0.3s"})) == 0.3  # was ignored
    assert round_cap(_Config(cli={"gpuperf_max_time": "1"}, ini={"gpuperf_max_time": "0.3"})) == 0.5
    assert round_cap(object()) == 0.5  # no config at all


def test_a_test_that_asks_more_sampling_than_a_round_allows_is_left_out_saying_so():
    """A marker's min_time=2 outranks a round's cap of 0.5 s on its command line, so each
    round would stop at "min_time=2 (marker) is above max_time=0.5 (command line)"."""
    def res(nodeid, **config):
        r = _result(nodeid=nodeid, kind="measured", measure_s=2.0, kernel_s=0.0,
                    kernel_time=None, verdicts={"throughput": from_json({"status": "inconclusive"})})  # fmt: skip
        r.config = config
        return r

    slow = res("t.py::slow", min_time=2.0, max_time=10.0, set_by_test=["min_time"])
    fine = res("t.py::fine", min_time=0.1, max_time=10.0, set_by_test=["min_time"])
    own = res("t.py::own", min_time=2.0, max_time=5.0, set_by_test=["max_time", "min_time"])
    batch = res("t.py::batch", min_sample_time=0.8, max_time=10.0, set_by_test=["min_sample_time"])
    run = res("t.py::run", min_time=2.0, max_time=10.0, set_by_test=[])  # the run's: cap lifted
    every = [slow, fine, own, batch, run]
    todo = [(r, "throughput", "model") for r in every]
    names = [r.nodeid for r in every]
    kept_todo, kept, said = affordable(todo, names, every, dict.fromkeys(names, 3.0), 0.5, 1e6, 2)
    assert kept == ["t.py::fine", "t.py::own", "t.py::run"]
    assert [t[0].nodeid for t in kept_todo] == kept
    assert said == ("2 test(s) asking more sampling of themselves than a round's cap of 0.5 s "
                    "allows (each round would stop at the setting error), left out: batch 0.8 s, "
                    "slow 2 s")
    _, kept, said = affordable(todo, names, every, dict.fromkeys(names, 3.0), 2.0, 1e6, 2)
    assert kept == names and said == ""  # a cap of 2 s holds them all


def test_a_test_left_out_for_its_sampling_stays_out_when_the_budget_drops_another():
    """`fit` ranks the tests it is given: a test left out for the sampling it asks of itself
    was still ranked (at no cost) and kept once a dear test was dropped, and each of its
    rounds would have stopped at the setting error (a review, 2026-12-05)."""
    def res(nodeid, **config):
        r = _result(nodeid=nodeid, kind="measured", measure_s=0.4, kernel_s=0.0,
                    kernel_time=None, verdicts={"throughput": from_json({"status": "inconclusive"})})  # fmt: skip
        r.config = {"max_time": 10.0, "set_by_test": sorted(config), **config}
        return r

    every = [res("t.py::slow", min_time=2.0), res("t.py::cheap"), res("t.py::dear")]
    names = [r.nodeid for r in every]
    todo = [(r, "throughput", "model") for r in every]
    costs = {"t.py::slow": 3.0, "t.py::cheap": 3.0, "t.py::dear": 500.0}
    kept_todo, kept, said = affordable(todo, names, every, costs, 0.5, 200.0, 2)
    assert kept == ["t.py::cheap"] and [t[0].nodeid for t in kept_todo] == kept
    assert said.startswith("1 test(s) asking more sampling of themselves") and "dear 500 s" in said
    _, kept, _ = affordable(todo[::2], names[::2], every[::2], costs, 0.5, 200.0, 2)
    assert kept == []  # slow and dear: nothing to measure, not slow's failing rounds


def test_own_minimum_foretells_which_tests_a_rounds_cap_stops(pytester):
    """Each way a test asks sampling of itself, run as the first stage ran it and then
    under a round's cap on the command line: `own_minimum` names exactly the tests the
    capped run stops at a setting error. The fixture checks the marker against the command
    line before a call's keywords apply, so a marker's min_time above the cap stops the
    test though the call sets a max_time of its own or a smaller min_time (a review found
    both taken for fine)."""
    import json
    import re

    from pytest_gpuperf.core.results import Result

    pytester.makepyfile(test_s="""
        import pytest

        def work():
            pass

        @pytest.mark.gpuperf(min_time=0.3)
        def test_marker_min(gpu_benchmark):
            gpu_benchmark(work)

        @pytest.mark.gpuperf(min_time=0.3)
        def test_marker_min_call_max(gpu_benchmark):
            gpu_benchmark(work, max_time=1.0)

        @pytest.mark.gpuperf(min_sample_time=0.3)
        def test_marker_min_call_lowers(gpu_benchmark):
            gpu_benchmark(work, min_sample_time=0.001)

        @pytest.mark.gpuperf(min_time=0.3, max_time=1.0)
        def test_marker_both(gpu_benchmark):
            gpu_benchmark(work)

        def test_call_min(gpu_benchmark):
            gpu_benchmark(work, min_time=0.3)

        def test_call_both(gpu_benchmark):
            gpu_benchmark(work, min_time=0.3, max_time=1.0)

        @pytest.mark.gpuperf(max_time=1.0)
        def test_marker_max_call_min(gpu_benchmark):
            gpu_benchmark(work, min_time=0.3)

        def test_plain(gpu_benchmark):
            gpu_benchmark(work)

        def test_samples(gpu_benchmark):
            gpu_benchmark.from_samples([0.01, 0.011, 0.012], work=1, unit="calls")
    """)
    fast = ["-p", "no:cacheprovider", "--gpuperf-warmup-time=0", "--gpuperf-min-samples=3"]
    pytester.runpytest(*fast, "--gpuperf-json=first.json").assert_outcomes(passed=9)
    results = [Result.from_dict(d)
               for d in json.loads((pytester.path / "first.json").read_text())["results"]]  # fmt: skip
    assert all(isinstance(r.config.get("marker_sampling"), dict) for r in results)
    foretold = {r.nodeid.split("::")[-1] for r in results if own_minimum(r, 0.2) is not None}
    capped = pytester.runpytest(*fast, "--gpuperf-max-time=0.2", "-rA")
    stopped = {m[1] for line in capped.outlines
               if (m := re.match(r"(?:FAILED|ERROR) test_s\.py::(\w+)", line))}  # fmt: skip
    assert stopped == {"test_marker_min", "test_marker_min_call_max",
                       "test_marker_min_call_lowers", "test_call_min"}  # fmt: skip
    assert foretold == stopped


def test_a_max_time_the_test_set_at_the_runs_own_value_is_still_its_own():
    """A marker's max_time=10 in a run whose own is 10 outranks a round's cap of 0.5 s all
    the same; only a result written before `set_by_test` is judged by the value."""
    mine = _result(10.0)
    mine.config["set_by_test"] = ["max_time"]
    assert round_cap_of(mine, 0.5, 10.0) == 10.0
    assert round_cap_of(mine, 0.5, None) == 10.0  # the run's max_time not needed
    run = _result(30.0)
    run.config["set_by_test"] = ["min_samples"]  # 30 s from the ini file or command line
    assert round_cap_of(run, 0.5, 10.0) == 0.5
    odd = _result(True)
    odd.config["set_by_test"] = ["max_time"]
    assert round_cap_of(odd, 0.5, 10.0) == 0.5  # not a number of seconds


def test_a_test_with_a_max_time_of_its_own_is_priced_at_it():
    r = _result(30.0, nodeid="t.py::real", kind="measured", measure_s=24.96, kernel_s=0.0,
                kernel_time=None, verdicts={"throughput": from_json({"status": "inconclusive"})})  # fmt: skip
    todo = [(r, "throughput", "model")]
    durations = {"t.py::real": 37.0}
    budget = first_need(37.0 - 24.46, 2) + 1.0  # what the capped price would fit
    _, kept, _ = affordable(todo, ["t.py::real"], [r], durations, 0.5, budget, 2)
    assert kept == ["t.py::real"]  # the run's max_time not given: priced as capped
    _, kept, said = affordable(todo, ["t.py::real"], [r], durations, 0.5, budget, 2,
                               run_max_s=10.0)  # fmt: skip
    assert kept == [] and "real 37 s" in said


# --------------------------- a first look whose rounds no longer fit (paired/looks.salvage)


def _got(seconds, rounds=1, start=1.4, first=None, later=None):
    got = Measured(pair=[0] * rounds, seconds=dict(seconds))
    got.timing.start_s = start
    got.timing.record(0, first if first is not None else sum(seconds.values()))
    if later is not None:
        got.timing.record(1, later)
    return got


def test_the_dearest_test_by_its_rounds_is_dropped_and_the_rest_kept():
    # run 4's finetune part on the H200: one round of both builds, 110.5 s, of which the
    # realistic-length QLoRA step took about 100 s and the hidden casts 10 s; about 90 s left
    got = _got({"real": 100.0, "casts": 10.0}, first=110.5)
    assert salvage(["casts", "real"], got, 90.0, 2) == (["casts"], ["real"])
    assert more_need(got, ["casts"], 2) <= 90.0 < more_need(got, ["casts", "real"], 2)
    # with less left the cheap one goes too: nothing is re-measured
    assert salvage(["casts", "real"], got, 40.0, 2) == ([], ["real", "casts"])


def test_the_dearest_goes_even_where_the_rest_would_fit_and_a_checked_test_goes_last():
    got = _got({"a": 4.0, "b": 3.0, "k": 9.0}, rounds=2, first=20.0, later=12.0)
    # the measured costs say all three would fit: the plan said they do not, so one goes
    assert salvage(["a", "b", "k"], got, 1000.0, 2) == (["a", "b"], ["k"])
    # k holds a checked figure: the dearer of the others goes first
    assert salvage(["a", "b", "k"], got, 1000.0, 2, keep_first={"k"}) == (["b", "k"], ["a"])


def test_a_salvage_is_priced_with_a_pairs_first_round_not_the_mean_of_the_rounds_alone():
    """A first round of 100 s and two of 10 s: the mean, 40 s, would price 2 rounds at 80 s
    where a new pair's first two cost 110 s; the first round's extra (90 s) is added."""
    got = _got({"a": 120.0, "b": 0.0}, rounds=3, start=1.0, first=100.0, later=10.0)
    assert salvage(["a", "b"], got, 200.0, 1) == (["b"], ["a"])  # a is the dearest: it goes
    got = _got({"a": 120.0}, rounds=3, start=1.0, first=100.0, later=10.0)
    assert more_need(got, ["a"], 1) == pytest.approx(1.0 + 90.0 + 2 * 40.0 + STOP_S)


@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0.0, 500.0), min_size=1),
    st.integers(1, 6), st.floats(0.0, 20.0), st.floats(0.0, 400.0), st.integers(1, 3),
    st.sets(st.sampled_from("abcdefgh")), st.floats(0.0, 60.0),
)  # fmt: skip
def test_a_salvage_keeps_only_what_fits_and_drops_no_more_than_it_must(seconds, rounds, start,
                                                                       left, pairs, first,
                                                                       extra):  # fmt: skip
    tests = sorted(seconds)
    got = _got(seconds, rounds, start, first=sum(seconds.values()) / rounds + extra,
               later=sum(seconds.values()) / rounds if rounds > 1 else None)  # fmt: skip
    kept, dropped = salvage(tests, got, left, pairs, first)
    assert sorted(kept + dropped) == tests and dropped  # every test once; one at least goes
    if kept:
        assert more_need(got, kept, pairs) <= left
    if len(dropped) > 1:  # the last to go went because the rest did not fit with it
        assert more_need(got, [*kept, dropped[-1]], pairs) > left
    for d in dropped:  # nothing kept was to go before what went
        for k in kept:
            assert (d in first, -seconds[d]) <= (k in first, -seconds[k])


def test_a_plan_that_no_longer_fits_raises_too_dear():
    with pytest.raises(TooDear) as info:
        plan([3, 3], 0, 2, costs(first=20.0, round_s=10.0), 30.0)
    assert isinstance(info.value, RoundsError) and info.value.got is None  # the pair sets it


def test_a_pair_whose_plan_no_longer_fits_hands_on_what_it_measured(monkeypatch, tmp_path):
    """The stage drops its dearest tests by what their rounds took: the TooDear that
    measure_rounds raises carries the rounds measured (process starts and rounds faked)."""
    import types

    from pytest_gpuperf.paired import rounds

    def fake_round(procs, got, i, last, deadline, tree):
        for side in ("base", "head"):
            got.rounds[side].append([])
        got.seconds["t.py::dear"] = got.seconds.get("t.py::dear", 0.0) + 50.0

    def too_dear(per, p, done, timing, left, asked=None, least=None):
        raise TooDear("2 rounds a process pair do not fit the budget")

    proc = types.SimpleNamespace(popen=None)
    monkeypatch.setattr(rounds, "start_process", lambda *a, **k: proc)
    monkeypatch.setattr(rounds, "answer", lambda proc, deadline: ["ready", "1"])
    monkeypatch.setattr(rounds, "_round", fake_round)
    monkeypatch.setattr(rounds, "plan", too_dear)
    monkeypatch.setattr(rounds, "stop_processes", lambda procs, kill: None)
    (tmp_path / "probe").mkdir()
    builds = {s: rounds.Build(s, tmp_path, (), ()) for s in rounds.SIDES}
    with pytest.raises(TooDear) as info:
        rounds.measure_rounds(builds, {}, tmp_path, tmp_path, tmp_path, rounds=6, pairs=2,
                              budget_s=100.0)  # fmt: skip
    got = info.value.got
    assert got is not None and got.pair == [0] and got.seconds == {"t.py::dear": 50.0}


def test_the_base_build_keeps_a_virtual_environment_inside_the_checkout(tmp_path):
    """A `.venv` in the checkout holds the interpreter's packages (pytest itself), not the
    code: the base's rounds import from it as the head's do (they once dropped it: the
    base process died with "No module named 'pytest'"); any other checkout path the worktree
    lacks is still dropped, and a code directory maps into the worktree."""
    from pytest_gpuperf.paired.rounds import Build, base_build

    root, tree = tmp_path / "repo", tmp_path / "tree"
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "build" / "lib").mkdir(parents=True)  # an untracked build: not the base's
    (root / "src").mkdir()
    (tree / "src").mkdir(parents=True)
    head = Build("head", root, (str(root / "src"), str(site), str(root / "build" / "lib")),
                 (), "")  # fmt: skip
    base = base_build(head, root, tree, [])
    assert base.sys_path == (str(tree / "src"), str(site))


def test_pairs_beyond_the_least_are_dropped_where_not_even_two_rounds_a_pair_fit():
    # the CPU's second look plans many pairs (looks.second_size); where the budget left
    # cannot hold them all, the last ones go instead of the look stopping unmeasured
    t = costs(start=8.0, first=20.0, round_s=10.0)
    a_pair = 8 + 10 + 2 * 10 + STOP_S  # a later pair's start, first round's extra, 2 rounds
    left = 2 * a_pair + 1  # two later pairs fit of the five planned after this one
    assert plan([3] * 6, 0, 2, t, left, least=3) == [2, 2, 2]
    with pytest.raises(TooDear):  # without `least`, as before: every pair or none
        plan([3] * 6, 0, 2, t, left)
    with pytest.raises(TooDear):  # never fewer than the least
        plan([3] * 6, 0, 2, t, a_pair, least=3)

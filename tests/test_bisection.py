"""The bisection engine (judging/bisection.py) on made-up figures: no git, no processes.
A range is a list of levels (log units, against the good commit); `measure` answers each
round with the levels' difference, exactly or with seeded noise at the GPU evidence's
paired-round spreads (1-2% a round)."""

import json
import math
import random
import statistics

import pytest

from pytest_gpuperf.judging.bisection import (
    FLAT,
    STEP,
    UNSURE,
    BisectError,
    Bisection,
    Est,
    Settings,
    Skip,
    step_of,
)


def commits(n):
    return [f"c{i:02d}" for i in range(n)]


class Fake:
    """A range's figures: `levels[i]` the log level of commit i; `broken` commits raise Skip;
    `sd` the per-round noise; `seconds` of clock each round costs; `stop_after` calls then
    KeyboardInterrupt (a kill)."""

    def __init__(self, levels, broken=(), sd=0.0, seed=0, seconds=1.0, stop_after=None):
        self.names = commits(len(levels))
        self.level = dict(zip(self.names, levels, strict=True))
        self.broken, self.sd, self.rng = set(broken), sd, random.Random(seed)
        self.seconds, self.stop_after = seconds, stop_after
        self.now = 0.0
        self.calls = []

    def clock(self):
        return self.now

    def __call__(self, commit, against, rounds, first=0):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt
        self.calls.append((commit, against, rounds))
        self.now += self.seconds * rounds
        if commit in self.broken:
            raise Skip(f"{commit} does not import")
        d = self.level[commit] - self.level[against]
        return [d + self.rng.gauss(0, self.sd) if self.sd else d for _ in range(rounds)]

    def run(self, settings=None, **kw):
        settings = settings or Settings(rounds=2)
        b = Bisection(self.names, self, settings, clock=self.clock, **kw)
        return b.run()


FIVE = math.log(1.05)


def step_at(n, where, size=FIVE):
    return [size if i >= where else 0.0 for i in range(n)]


def interior(outcome, n):
    ends = {"c00", f"c{n - 1:02d}"}
    return [p["commit"] for p in outcome.probes if p["commit"] not in ends]


@pytest.mark.parametrize("where", range(1, 24))
def test_one_step_in_24_commits_is_found_in_at_most_7_probes(where):
    fake = Fake(step_at(24, where))
    out = fake.run()
    assert out.verdict == "walked"
    assert [c.last for c in out.culprits] == [f"c{where:02d}"]
    assert out.culprits[0].candidates == (f"c{where:02d}",)
    assert out.culprits[0].change == pytest.approx(math.log(1.05))
    assert out.culprits[0].first_before == f"c{where - 1:02d}"
    assert len(interior(out, 24)) <= 7 and not out.undecided


def test_two_steps_in_one_range_are_both_named():
    levels = [0.0] * 5 + [0.03] * 9 + [0.07] * 10  # steps at c05 (+3%) and c14 (+4%)
    out = Fake(levels).run()
    assert [c.last for c in out.culprits] == ["c05", "c14"]
    assert [round(c.change, 6) for c in out.culprits] == [0.03, 0.04]


def test_two_steps_in_the_same_half_and_opposite_directions_are_named():
    levels = [0.0] * 3 + [0.05] * 2 + [0.02] * 19  # up at c03, down at c05
    out = Fake(levels).run()
    assert [(c.last, round(c.change, 6)) for c in out.culprits] == [("c03", 0.05), ("c05", -0.03)]


def test_a_step_under_half_the_tolerance_is_not_named():
    levels = [0.0] * 5 + [0.01] * 9 + [0.06] * 10  # 1% (under 1.5%) then 5%
    out = Fake(levels).run()
    assert [c.last for c in out.culprits] == ["c14"]


def test_a_broken_commit_is_skipped_named_and_stepped_over():
    fake = Fake(step_at(24, 15), broken={"c12", "c11"})
    out = fake.run()
    assert [c.last for c in out.culprits] == ["c15"]
    # the middle probes failed (c11, then c12); the next nearest the middle (c10) was taken
    assert out.skipped == {"c11": "c11 does not import", "c12": "c12 does not import"}
    assert {p["commit"]: p.get("skipped") for p in out.probes}["c12"] == "c12 does not import"
    assert sorted(c for c, _, _ in fake.calls if c in ("c11", "c12")) == ["c11", "c12"]  # tried once each
    assert "c10" in interior(out, 24)


def test_a_culprit_whose_neighbour_cannot_be_measured_comes_with_it_as_a_candidate():
    out = Fake(step_at(8, 4), broken={"c03"}).run()
    (c,) = out.culprits
    assert c.last == "c04" and c.candidates == ("c03", "c04") and "could not be measured" in c.why


def test_good_and_bad_that_measure_the_same_are_not_walked():
    fake = Fake([0.0] * 24)
    out = fake.run()
    assert out.verdict == "same" and not out.culprits and [p["commit"] for p in out.probes] == ["c23"]
    assert {c for c, _, _ in fake.calls} == {"c23"}  # only bad against good was measured


def test_a_bad_commit_that_cannot_be_measured_is_an_error_not_a_walk():
    with pytest.raises(BisectError, match="the bad commit cannot be measured: c23 does not import"):
        Fake(step_at(24, 3), broken={"c23"}).run()


def test_a_kill_and_a_resume_ask_only_for_what_was_not_measured():
    levels = [0.0] * 5 + [0.03] * 9 + [0.07] * 10
    whole = Fake(levels, sd=0.01, seed=3)
    expected = whole.run(Settings())
    saved = []
    killed = Fake(levels, sd=0.01, seed=3, stop_after=5)
    with pytest.raises(KeyboardInterrupt):
        killed.run(Settings(), save=lambda s: saved.append(json.loads(json.dumps(s))))
    assert len(saved) == 5  # the state was written after each measurement
    rest = Fake(levels, sd=0.01, seed=3)
    rest.rng = killed.rng  # the same noise continues
    resumed = rest.run(Settings(), state=saved[-1])
    assert killed.calls + rest.calls == whole.calls
    assert [c.last for c in resumed.culprits] == [c.last for c in expected.culprits] == ["c05", "c14"]
    assert resumed.probes == expected.probes


def test_a_state_of_another_range_is_refused():
    fake = Fake(step_at(6, 2))
    state = Bisection(fake.names, fake, Settings(rounds=2)).state()
    state["commits"] = commits(7)
    with pytest.raises(BisectError, match="another range"):
        Bisection(fake.names, fake, Settings(rounds=2), state=state)


def test_a_budget_stops_before_the_next_measurement_with_the_range_reached():
    fake = Fake(step_at(24, 17), seconds=10.0)  # each pair of 2 rounds: 20 s
    out = fake.run(Settings(rounds=2, budget_s=100))
    assert out.verdict == "budget" and not out.culprits
    assert len(fake.calls) == 5  # 100 s spent after five measurements: no sixth started
    (left,) = out.open
    # bad vs good, then two probes (c11, then c17): the step lies after c11, up to c17
    assert (left.first_before, left.last) == ("c11", "c17")
    assert "c17" in left.candidates and "budget" in left.why


@pytest.mark.parametrize(
    ("mean", "half", "verdict"),
    [(0.05, 0.01, STEP), (-0.05, 0.01, STEP), (0.0, 0.01, FLAT), (0.05, 0.06, UNSURE), (0.01, 0.01, UNSURE),
     (0.02, 0.0, STEP), (0.0148, 0.0, FLAT), (0.0149, 0.0, STEP)],
)
def test_decide_against_half_the_tolerance(mean, half, verdict):
    assert step_of(Est(mean, half), Settings().step) == verdict


def test_a_probe_that_cannot_be_placed_is_undecided_never_a_culprit():
    levels = [0.0] * 12 + [0.05] * 12

    class Wild(Fake):  # the probe c12's rounds against good swing wildly
        def __call__(self, commit, against, rounds, first=0):
            out = super().__call__(commit, against, rounds, first)
            return [x + (0.2 if i % 2 else -0.2) for i, x in enumerate(out)] if commit == "c12" else out

    out = Wild(levels).run(Settings(rounds=2, max_rounds=8))
    assert "c12" not in [c.last for c in out.culprits]
    assert out.undecided and out.undecided[0].last in ("c12",)
    assert "too wide" in out.undecided[0].why


def simulate(levels_of, n_ranges, seed):
    """Each range: 24 commits, a per-round spread drawn from 1-2%, default settings."""
    rng = random.Random(seed)
    found = []
    for _ in range(n_ranges):
        levels, truth = levels_of(rng)
        fake = Fake(levels, sd=rng.uniform(0.01, 0.02), seed=rng.randrange(2**32))
        out = fake.run(Settings())
        found.append(([c.last for c in out.culprits], truth, out))
    return found


def test_noisy_a_a_ranges_name_no_culprit():
    runs = simulate(lambda rng: ([0.0] * 24, None), 100, seed=62)
    named = [c for c, _, _ in runs if c]
    assert len(named) <= 1, named
    # not walked: the same (shown flat) or no step shown at the most rounds
    assert sum(out.verdict in ("same", "small") for _, _, out in runs) >= 99
    assert sum(out.verdict == "same" for _, _, out in runs) >= 80


def test_noisy_one_step_ranges_name_the_true_culprit():
    def one_step(rng):
        where = rng.randrange(1, 24)
        return step_at(24, where), f"c{where:02d}"

    runs = simulate(one_step, 100, seed=57)
    right = [c == [truth] for c, truth, _ in runs]
    assert sum(right) >= 90, [(c, t) for c, t, _ in runs if c != [t]]
    # a false culprit beside the true one: at most 2 of 100 (at the gate's 0.99 a decision, 4)
    assert sum(any(x != truth for x in c) for c, truth, _ in runs) <= 2


def test_settings_are_checked():
    with pytest.raises(BisectError, match="rounds must be at least 2"):
        Settings(rounds=1)
    with pytest.raises(BisectError, match="budget"):
        Settings(budget_s=0)


class Swing(Fake):
    """Rounds of `swinging` commits alternate ±0.2 around their true difference: exact means,
    intervals far too wide to decide anything."""

    swinging = ("c23",)

    def __call__(self, commit, against, rounds, first=0):
        out = super().__call__(commit, against, rounds, first)
        return [x + (0.2 if i % 2 else -0.2) for i, x in enumerate(out)] if commit in self.swinging else out


@pytest.mark.parametrize(("level", "verdict"), [(0.03, "undecided"), (0.005, "small"), (0.0, "small")])
def test_good_and_bad_that_cannot_be_told_apart_are_not_walked(level, verdict):
    fake = Swing([0.0] * 23 + [level])
    out = fake.run(Settings(rounds=2, max_rounds=8))
    assert out.verdict == verdict and not out.culprits and not out.undecided
    assert [(c, n) for c, _, n in fake.calls] == [("c23", 2), ("c23", 2), ("c23", 4)]  # to the cap, no walk


def test_a_probe_that_fails_when_asked_for_more_rounds_leaves_its_range_undecided():
    class Flaky(Swing):  # c05's rounds swing (so c05 against c11 needs more rounds); c11 breaks
        swinging = ("c05",)

        def __call__(self, commit, against, rounds, first=0):
            if commit == "c11" and sum(c == "c11" for c, _, _ in self.calls) == 2:
                raise Skip("c11 broke on its third measurement")
            return super().__call__(commit, against, rounds, first)

    fake = Flaky(step_at(24, 9))
    out = fake.run(Settings(rounds=2, max_rounds=8))
    assert out.skipped == {"c11": "c11 broke on its third measurement"}
    assert not out.culprits  # never a guess past the probe that broke
    (r,) = out.undecided
    assert (r.first_before, r.last) == ("c00", "c11") and "failed on a later measurement" in r.why


def test_the_estimate_s_rounds_follow_the_spread_and_match_the_simulation():
    from pytest_gpuperf.judging.bisection import rounds_needed

    s = Settings()
    assert rounds_needed([0.01] * 5, s) == s.rounds  # exact figures: the first rounds decide
    ladder = [rounds_needed([sd, -sd] * 20, s) for sd in (0.002, 0.005, 0.01, 0.015, 0.03)]
    assert ladder == sorted(ladder) and ladder[0] == s.rounds and ladder[-1] == s.max_rounds
    # at the simulation's spreads (1-2% a round) the rounds a pair got, against the estimate's
    runs = simulate(lambda rng: (step_at(24, rng.randrange(1, 24)), None), 20, seed=11)
    got = [p[k]["rounds"] for *_, out in runs for p in out.probes[:-1] for k in ("vs_good", "vs_bad") if k in p]
    predicted = rounds_needed([0.015, -0.015] * 20, s)
    assert predicted / 2 <= statistics.median(got) <= predicted * 2


def test_a_budget_never_starts_a_measurement_the_time_left_cannot_hold():
    """Found on an H200: `--budget 480` ran past 540 s, the budget checked only between
    measurements. Priced (`cost`), the walk stops before one that would overrun it."""
    fake = Fake(step_at(24, 17), seconds=10.0)  # each pair of 2 rounds: 20 s
    out = fake.run(Settings(rounds=2, budget_s=50), cost=lambda commit, against, n: 10.0 * n)
    assert out.verdict == "budget" and len(fake.calls) == 2  # 40 s spent: a third would end at 60
    assert out.spent_s <= 50
    # unpriced (nothing measured yet), the measurement starts as before
    fake = Fake(step_at(24, 17), seconds=10.0)
    out = fake.run(Settings(rounds=2, budget_s=50), cost=lambda commit, against, n: 0.0)
    assert len(fake.calls) == 3 and out.spent_s == 60


class Processes(Fake):
    """Rounds in long-lived processes: each build's process in slot s (round i of a pair in
    slot i % 2) has its own level, drawn once (sd `sp`), beside the per-round noise; the slot
    is counted here, so an engine that does not say it is measured alike."""

    def __init__(self, levels, sp, sw, seed):
        super().__init__(levels, sd=sw, seed=seed)
        self.sp, self.offsets, self.count = sp, {}, {}

    def offset(self, commit, slot):
        if (commit, slot) not in self.offsets:
            self.offsets[(commit, slot)] = self.rng.gauss(0, self.sp)
        return self.offsets[(commit, slot)]

    def __call__(self, commit, against, rounds, first=None):
        out = super().__call__(commit, against, rounds)
        done = self.count.get((commit, against), 0)
        assert first is None or first == done  # the engine names the pair's next round
        self.count[(commit, against)] = done + rounds
        slots = [(done + i) % 2 for i in range(rounds)]
        return [x + self.offset(commit, s) - self.offset(against, s) for x, s in zip(out, slots, strict=True)]


def simulate_processes(step, sp, sw, seed, n_ranges=100):
    rng = random.Random(seed)
    found = []
    for _ in range(n_ranges):
        where = rng.randrange(1, 24)
        fake = Processes(step_at(24, where) if step else [0.0] * 24, sp, sw, rng.randrange(2**32))
        out = fake.run(Settings())
        found.append(([c.last for c in out.culprits], f"c{where:02d}" if step else None))
    return found


def test_a_process_s_own_level_names_no_culprit_in_a_a_ranges():
    """A process's level drawn per process (sd 1.25%: two processes of one build differ by
    1.4% on average; rounds within one 0.3%): more rounds in the same processes never
    average it away. The engine adds the slots' disagreement to the interval and asks a step
    of every slot: no culprit in these 100 A/A ranges, where rounds judged as if each were a
    fresh process pair (the engine before slots) named one in 8. (At sd 1.5%: 2 of 100.)"""
    runs = simulate_processes(False, sp=0.0125, sw=0.003, seed=5)
    assert sum(bool(c) for c, _ in runs) <= 1, [c for c, _ in runs if c]


def test_a_process_s_own_level_still_lets_a_step_be_named():
    runs = simulate_processes(True, sp=0.005, sw=0.003, seed=6)
    assert sum(c == [truth] for c, truth in runs) >= 90
    assert sum(any(x != truth for x in c) for c, truth in runs) <= 2


def test_a_step_must_hold_in_every_process_slot():
    s = Settings().step
    assert step_of(Est(0.05, 0.01, slots=(0.05, 0.05)), s) == STEP
    assert step_of(Est(0.05, 0.01, slots=(0.09, 0.01)), s) == UNSURE  # one process says flat
    assert step_of(Est(-0.05, 0.01, slots=(-0.04, -0.06)), s) == STEP
    a = Est(0.05, 0.0, (("c1", "c0"),), (0.06, 0.04))
    b = Est(0.01, 0.0, (("c2", "c0"),), (0.02, 0.0))
    assert a.minus(b).slots == pytest.approx((0.04, 0.04))  # the shared build's process cancels

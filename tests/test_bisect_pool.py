"""`gpuperf bisect`'s rounds in long-lived processes (paired/pool.py, cli/bisect.py's Builds
and Measurer): which processes start and stop, what a measurement is priced at before it
starts, the estimate. The processes are faked on a controlled clock: a start takes 9 s, a
process's first round 4 s, a later one 1.5 s (no real time, no subprocess)."""

import contextlib
import types

import pytest

from pytest_gpuperf.cli.bisect import Builds, Estimate, Measurer
from pytest_gpuperf.judging.bisection import Settings
from pytest_gpuperf.paired import pool as poolmod
from pytest_gpuperf.paired.pool import Costs, Pool
from pytest_gpuperf.paired.rounds import Build

START_S, FIRST_S, ROUND_S = 9.0, 4.0, 1.5
FIG = {"key": "t.py::t", "metric": "throughput", "unit": "calls/s", "higher": True}
LEVEL = {"g": 10.0, "b": 9.5, "m1": 10.0, "m2": 9.5, "m3": 9.5}


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The pool's process calls faked: `fake.live` the processes alive now, `fake.most` the
    most alive at once, `fake.started` every process started (its build, its name)."""
    f = types.SimpleNamespace(clock=Clock(), live=set(), most=0, started=[], rounds=[])

    def start_process(build, work, name, env, probe):
        proc = types.SimpleNamespace(build=build.side, name=name, log=tmp_path / "none.log")
        f.started.append((build.side, name))
        f.live.add(id(proc))
        f.most = max(f.most, len(f.live))
        return proc

    def answer(proc, deadline):  # a build's processes start together: 9 s in all
        f.clock.now += START_S / 2
        return ["ready", "1"]

    def one_round(proc, i, last, deadline):
        f.clock.now += FIRST_S if i == 0 else ROUND_S
        f.rounds.append((proc.build, proc.name, i))
        return {"results": [], "modules": {}}

    def stop_processes(procs, kill):
        for proc in procs:
            f.live.discard(id(proc))

    monkeypatch.setattr(poolmod, "start_process", start_process)
    monkeypatch.setattr(poolmod, "answer", answer)
    monkeypatch.setattr(poolmod, "one_round", one_round)
    monkeypatch.setattr(poolmod, "stop_processes", stop_processes)
    monkeypatch.setattr(poolmod, "check_imports", lambda proc, root, tree: None)
    monkeypatch.setattr(poolmod, "check_modules", lambda proc, modules, tree: None)
    f.tmp = tmp_path
    return f


class FakeBuilds(Builds):
    """Builds whose worktrees are not made (the pool's processes are faked) and whose
    rounds give set figures: each commit's LEVEL."""

    def __init__(self, fake):
        super().__init__(fake.tmp, ("g", "b"), ["t.py"], None, contextlib.ExitStack(), None)
        self.pool = Pool(fake.tmp, 2, self.ends, clock=fake.clock)
        self.order = []

    def ready(self, commit):
        if commit not in self.made:
            self.made.add(commit)
            self.pool.add(commit, Build(commit, self.root, (), ()), self.root, self.root, {})

    def one(self, commit, slot):
        self.ready(commit)
        self.pool.round(commit, slot)
        self.order.append((commit, slot))
        return {("t.py::t", "throughput"): (LEVEL[commit], "calls/s", True)}


def test_a_build_s_processes_start_once_and_a_measurement_is_priced_before_it_starts(fake):
    builds = FakeBuilds(fake)
    m = Measurer(builds, dict(FIG), lambda _: None, slots=2)
    assert builds.cost("b", "g", 5) == 0.0  # nothing measured yet: no price
    m("b", "g", 5, 0)
    # good and bad: 2 processes each, started once; 5 rounds a side over both slots
    assert [b for b, _ in fake.started] == ["b", "b", "g", "g"]
    assert [s for c, s in builds.order if c == "b"] == [0, 1, 0, 1, 0]
    costs = builds.pool.costs
    assert (costs.start_s, costs.round_s, costs.first_extra_s) == (START_S, ROUND_S, FIRST_S - ROUND_S)
    # a new probe: its 2 processes start (9 s), their first rounds cost 2.5 s more, and 5
    # rounds of both builds 15 s; good's processes live on
    price = builds.cost("m1", "g", 5)
    assert price == START_S + 2 * (FIRST_S - ROUND_S) + 5 * 2 * ROUND_S
    t0 = fake.clock.now
    m("m1", "g", 5, 0)
    assert fake.clock.now - t0 == price
    assert builds.cost("m1", "b", 5) == 5 * 2 * ROUND_S  # every process alive: rounds only
    m("m1", "b", 5, 0)
    builds.order.clear()
    m("m1", "g", 3, 5)  # more rounds of a pair go on in its slots: 5 % 2, 6 % 2, 7 % 2
    assert [s for c, s in builds.order if c == "m1"] == [1, 0, 1]
    assert len(fake.started) == 6


def test_one_probe_s_processes_live_at_a_time_beside_good_and_bad(fake):
    builds = FakeBuilds(fake)
    m = Measurer(builds, dict(FIG), lambda _: None, slots=2)
    m("b", "g", 2, 0)
    for p in ("m1", "m2", "m3"):
        m(p, "g", 2, 0)
        m(p, "b", 2, 0)
    assert len(fake.started) == 2 * 5  # each build's 2 processes, once
    assert fake.most == 2 * 3  # good's, bad's and one probe's
    m("m1", "g", 2, 2)  # a probe asked again after another's: its processes start anew
    assert [n for b, n in fake.started if b == "m1"] == ["p1-0", "p1-1", "p2-0", "p2-1"]  # 2nd start
    assert fake.most == 6
    builds.pool.close()
    assert not fake.live


def test_the_estimate_prices_a_probe_by_its_start_and_its_rounds(capsys):
    """Printed before the first probe, from the costs measured (or a resumed run's saved
    ones): 16 commits take 4 probes; each a build ready in 1 s, its 2 processes started in
    9 s with first rounds 2 s dearer, then 2 x 5 rounds of both builds at 1.5 s a side."""
    est = Estimate(16, Settings())
    est.engine = types.SimpleNamespace(data={("b", "g"): [0.05] * 5}, bad="b", good="g")
    costs = Costs(prior={"prep_s": 1.0, "start_s": 9.0, "first_s": 3.5, "round_s": 1.5})
    m = types.SimpleNamespace(builds=types.SimpleNamespace(pool=types.SimpleNamespace(costs=costs)))
    assert est.minutes(m) == (4, 5, 1.0 + 9.0 + 2 * 2.0, 3.0, pytest.approx(4 * (14.0 + 2 * 5 * 3.0) / 60))
    est(m)
    said = capsys.readouterr().out
    assert "estimate: about 4 probe(s)" in said and "ready in about 14.0 s" in said
    assert "of 3.0 s (both builds): ~2.9 min" in said


def test_the_costs_a_run_saved_are_used_until_it_measures_its_own():
    c = Costs(prior={"start_s": 9.0, "round_s": 1.5, "first_s": 4.0})
    assert (c.start_s, c.round_s, c.first_extra_s, c.prep_s) == (9.0, 1.5, 2.5, None)
    c.laters += [1.0, 3.0, 2.0]
    assert c.round_s == 2.0 and c.first_extra_s == 2.0
    assert c.saved() == {"start_s": 9.0, "round_s": 2.0, "first_s": 4.0}

"""`gpuperf history`'s change finding (history/changes.py) on made-up nightly series with a
fixed seed: a 5% step found with its true commit in the range it names, nothing on flat
series at the real spreads between nights (0.5-2%), a creep of 0.5% a night over 10
nights found as a creep (no step beyond the tolerance), a step on a driver change named the
environment's, runs on a shared GPU left out and counted."""

import pytest

from pytest_gpuperf.history.changes import find_changes
from pytest_gpuperf.history.store import read_history

from .historydata import noisy, write_series


def changes_of(tmp_path, values, **kw):
    write_series(tmp_path, values, **kw)
    hist = read_history(tmp_path)
    return hist, find_changes(hist)


@pytest.mark.parametrize("seed", range(5))
def test_a_5pc_step_is_found_with_the_true_commit_in_its_range(tmp_path, seed):
    values = noisy(20, 0.01, seed) + [v * 0.95 for v in noisy(20, 0.01, seed + 100)]
    hist, found = changes_of(tmp_path, values)
    (c,) = found.changes
    assert (c.kind, c.direction, c.figure) == ("step", "slower", "throughput")
    assert c.last_good < 20 <= c.first_bad  # night 20 is the first slow one
    assert c.first_bad - c.last_good <= 3
    assert abs(c.change - (-0.05)) < 0.015 and c.z > 5
    assert hist.runs[c.first_bad].commit.startswith(f"{c.first_bad:04d}")


def test_a_step_found_within_three_nights_after_it(tmp_path):
    values = noisy(30, 0.01, 7) + [v * 0.95 for v in noisy(3, 0.01, 8)]
    _, found = changes_of(tmp_path, values)
    (c,) = found.changes
    assert c.kind == "step" and c.last_good < 30 <= c.first_bad


@pytest.mark.parametrize("seed", range(4))
def test_a_kernel_time_step_is_found_within_three_nights_at_its_recorded_spread(tmp_path, seed):
    # kernel time's sessions spread 0.87% (docs/evidence/history-2026-12-07.md); judged at
    # the base check's 10% machines' allowance, a 5% step hid for 13-17 nights
    values = noisy(30, 0.0087, seed) + [v * 0.95 for v in noisy(3, 0.0087, seed + 50)]
    _, found = changes_of(tmp_path, values, cls="kernel-time", figure="throughput_kernels")
    (c,) = found.changes
    assert c.kind == "step" and c.last_good < 30 <= c.first_bad


@pytest.mark.parametrize("sd", [0.005, 0.01, 0.02])
def test_no_change_on_flat_series_at_the_real_spreads(tmp_path, sd):
    for seed in range(8):
        directory = tmp_path / f"s{seed}"
        directory.mkdir()
        _, found = changes_of(directory, noisy(60, sd, 1000 + seed))
        assert found.changes == [], (seed, found.changes)


def test_a_creep_of_half_a_percent_a_night_over_ten_nights_is_found(tmp_path):
    base = noisy(40, 0.005, 3)
    values = [v * (1 - 0.005 * min(max(i - 14, 0), 10)) for i, v in enumerate(base)]
    _, found = changes_of(tmp_path, values)
    (c,) = found.changes  # the creep, and no step of its own
    assert (c.kind, c.direction) == ("creep", "slower")
    assert -0.07 < c.change < -0.03 and -0.007 < c.rate < -0.003
    assert c.last_good <= 16 and c.first_bad >= 22 and c.runs >= 6


def test_a_step_with_a_driver_change_is_the_environments(tmp_path):
    values = noisy(15, 0.005, 4) + [v * 1.06 for v in noisy(15, 0.005, 5)]
    new = {"name": "NVIDIA H200", "uuid": "GPU-1", "driver": "590.10", "cuda": "13.1",
           "torch": "2.11.0", "host": "node1"}  # fmt: skip
    _, found = changes_of(tmp_path, values, cards={i: new for i in range(15, 30)})
    (c,) = found.changes
    assert (
        c.direction == "faster"
        and c.environment == "driver 580.159.04 -> 590.10, cuda 13.0 -> 13.1"
    )


def test_a_latency_that_grew_is_slower_and_memory_that_grew_is_worse(tmp_path):
    lat = noisy(12, 0.005, 6, level=2.0) + [v * 1.05 for v in noisy(12, 0.005, 9, level=2.0)]
    (tmp_path / "a").mkdir()
    _, found = changes_of(tmp_path / "a", lat, figure="latency", unit="s", direction="lower",
                          cls="model")  # fmt: skip
    (c,) = found.changes
    assert c.direction == "slower" and abs(c.change - 0.05) < 0.01
    mem = [1e9] * 12 + [1.1e9] * 12  # deterministic: peak memory
    (tmp_path / "b").mkdir()
    _, found = changes_of(tmp_path / "b", mem, figure="peak_allocated", unit="bytes",
                          direction="lower", cls="memory")  # fmt: skip
    (c,) = found.changes
    assert c.direction == "worse" and (c.last_good, c.first_bad) == (11, 12)


def test_runs_on_a_shared_gpu_are_left_out_and_counted(tmp_path):
    values = noisy(30, 0.005, 11)
    for i in (10, 11, 12, 13):
        values[i] *= 0.7  # another process on the GPU: not the code's
    flags = {i: ("gpu-shared",) for i in (10, 11, 12, 13)}
    flags[20] = ("power-state",)
    _, found = changes_of(tmp_path, values, flags=flags)
    assert found.changes == []
    assert found.left_out == {
        ("h200", "b.py::test_x", "throughput"): {"gpu-shared": 4, "power-state": 1}
    }


def test_a_flaky_verdict_and_false_alarms_are_counted_per_figure(tmp_path):
    """A flat series whose verdict flips between unchanged and inconclusive, and regressed on
    two nights with no change behind them: 2 false alarms; a regressed night after a real
    step for the worse is none."""
    verdicts = {i: "inconclusive" for i in range(0, 20, 2)} | {7: "regressed", 13: "regressed"}
    (tmp_path / "flat").mkdir()
    _, found = changes_of(tmp_path / "flat", noisy(20, 0.005, 12), verdicts=verdicts)
    assert found.changes == []
    (judged, flips, false) = found.verdicts[("h200", "b.py::test_x", "throughput")]
    assert (judged, flips, false) == (20, 19, 2)
    (tmp_path / "step").mkdir()
    values = noisy(10, 0.005, 13) + [v * 0.9 for v in noisy(10, 0.005, 14)]
    _, found = changes_of(tmp_path / "step", values, verdicts={10: "regressed"})
    assert found.verdicts[("h200", "b.py::test_x", "throughput")] == (20, 2, 0)


def test_the_recorded_noise_pools_are_each_sessions_deviation_once(tmp_path):
    """tools/history_detection_rates.py --real: a figure's sessions as deviations from its
    mean (better up, scaled by sqrt(n/(n-1))), a figure two files hold counted once, a
    session flagged gpu-shared left out (as a history's series leaves it)."""
    import importlib.util
    import json
    import math
    from pathlib import Path

    from pytest_gpuperf.baseline.schema import SCHEMA

    path = Path(__file__).resolve().parent.parent / "tools" / "history_detection_rates.py"
    spec = importlib.util.spec_from_file_location("history_detection_rates", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    def item(i, v, flags=()):
        return {"median": v, "date": f"2026-12-0{i + 1}", "commit": None, "session": f"s{i}",
                "flags": list(flags)}  # fmt: skip

    metrics = {
        "throughput": {"unit": "GB/s", "direction": "higher", "noise_class": "bandwidth",
                       "history": [item(0, 100.0), item(1, 102.0), item(2, 50.0, ["gpu-shared"])]},
        "latency": {"unit": "ms", "direction": "lower", "noise_class": "model",
                    "history": [item(0, 10.0), item(1, 10.0), item(2, 10.3)]},
    }  # fmt: skip
    data = {"schema": SCHEMA, "version": 2, "profile": "h200", "updated": "2026-12-03",
            "entries": {"t.py::test_a": {"environment": {}, "flags": {}, "metrics": metrics}}}
    files = []
    for name in ("a.json", "b.json"):  # the same sessions in two files
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps(data))
    pools, figures, flagged = tool.recorded_pools(files)
    d = math.log(1.02) / 2 * math.sqrt(2)
    assert pools["bandwidth"] == pytest.approx([-d, d]) and figures == {"bandwidth": 1, "model": 1}
    x = [-math.log(10.0), -math.log(10.0), -math.log(10.3)]
    mean = sum(x) / 3
    assert pools["model"] == pytest.approx([(v - mean) * math.sqrt(1.5) for v in x])
    assert pools["model"][2] < 0 and flagged == 2  # slower is worse; once per file read


def _time_and_clock(directory, time, clock):
    from pytest_gpuperf.history.record import dumps

    from .historydata import record

    for i, (t, c) in enumerate(zip(time, clock, strict=True)):
        rec = record(i, [("b.py::test_mlp", "throughput", t, "TFLOP/s", "higher", "compute", ()),
                         ("b.py::test_mlp", "throughput_per_clock", c, "TFLOP/cycle", "higher",
                          "per-clock", ())])  # fmt: skip
        (directory / f"night{i:04d}.json").write_text(dumps(rec))
    return find_changes(read_history(directory)).changes


def test_a_per_clock_step_is_reported_only_beside_a_step_of_its_time(tmp_path):
    # the gate judges per cycle only beside the time; alone, a per-clock step is its clock
    # readings' noise (5.5% of flat per-clock series of the recorded noise reported one)
    flat, stepped = noisy(40, 0.004, 1), noisy(20, 0.004, 2) + [v * 0.93 for v in noisy(20, 0.004, 3)]
    (tmp_path / "alone").mkdir()
    assert _time_and_clock(tmp_path / "alone", flat, stepped) == []
    (tmp_path / "both").mkdir()
    slow = noisy(20, 0.004, 4) + [v * 0.93 for v in noisy(20, 0.004, 5)]
    found = _time_and_clock(tmp_path / "both", slow, stepped)
    assert sorted(c.figure for c in found) == ["throughput", "throughput_per_clock"], found

"""The measuring engine, settings, units and results on the CPU (perf_counter backend)."""

import json
import math
import weakref

import pytest

from pytest_gpuperf.core.results import Result, check_work, resolve_unit, throughput_of
from pytest_gpuperf.core.settings import SettingError, parse_layer, resolve
from pytest_gpuperf.core.stats import summarize
from pytest_gpuperf.measure.kernels import busy as _busy
from pytest_gpuperf.measure.telemetry import Sample, reason_names, summarize_samples
from pytest_gpuperf.measure.timing import BenchmarkError, OutOfMemory, is_oom, measure

from . import vclock

FAST = parse_layer(
    {"min_time": 0.01, "max_time": 0.3, "warmup_time": 0.0, "min_samples": 6}, "test"
)


def test_measure_on_cpu_gives_time_and_throughput(monkeypatch):
    vclock.install(monkeypatch, seed=1)  # 1 ms per call, exactly enough to check the figures
    cfg = resolve("cpu", FAST)
    r = measure(lambda: vclock.spin(0.001), work=100, unit="tokens", cfg=cfg, backend="cpu")
    assert r.outcome == "ok" and r.timer == "perf_counter"
    assert r.time.median == pytest.approx(0.001, rel=1e-3)
    assert r.time.ci_low <= r.time.median <= r.time.ci_high
    assert r.throughput.unit == "tokens/s"
    assert math.isclose(r.throughput.median, 100 / r.time.median)
    assert r.throughput.ci_low <= r.throughput.median <= r.throughput.ci_high
    assert r.calls_total == len(r.samples) * r.calls_per_sample
    assert r.warmup_calls >= 2
    assert r.busy_fraction is None and r.launch_bound is None  # CPU: not applicable


def test_short_work_is_batched_per_sample(monkeypatch):
    vclock.install(monkeypatch, seed=6)  # a real clock on a loaded machine can stall a call
    cfg = resolve("cpu", FAST, parse_layer({"min_sample_time": 0.002}, "t"))
    r = measure(lambda: vclock.spin(1e-5), work=1, unit="calls", cfg=cfg, backend="cpu")
    assert r.calls_per_sample in (200, 201)  # 2 ms per sample / 10 us per call, rounded up


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"fn": 3}, "must be callable, got int 3"),
        ({"work": 0}, "positive"),
        ({"work": -5}, "positive"),
        ({"work": float("nan")}, "positive finite"),
        ({"work": True}, "positive number"),
        ({"unit": "parsec-s"}, "unknown unit 'parsec-s'"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, fragment):
    args = {"fn": lambda: None, "work": 1, "unit": "calls"} | kwargs
    with pytest.raises(BenchmarkError) as info:
        measure(
            args["fn"],
            work=args["work"],
            unit=args["unit"],
            cfg=resolve("cpu", FAST),
            backend="cpu",
        )
    assert fragment in str(info.value)


def test_a_benchmark_that_raises_propagates_its_error():
    def boom():
        raise KeyError("model missing")

    with pytest.raises(KeyError, match="model missing"):
        measure(boom, work=1, unit="calls", cfg=resolve("cpu", FAST), backend="cpu")


class Big:
    pass


def test_out_of_memory_releases_what_the_call_held():
    refs = []

    def oom():
        big = Big()  # stands for the tensors allocated before the allocation that failed
        refs.append(weakref.ref(big))
        raise MemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

    with pytest.raises(OutOfMemory) as info:
        measure(oom, work=1, unit="calls", cfg=resolve("cpu", FAST), backend="cpu", nodeid="t::x")
    assert "t::x ran out of memory" in str(info.value)
    assert "its memory was released" in str(info.value)
    assert refs and refs[0]() is None  # the failing frame's objects are gone


def test_is_oom():
    assert is_oom(MemoryError())
    assert is_oom(RuntimeError("CUDA error: out of memory"))
    assert not is_oom(RuntimeError("shape mismatch"))


def test_units():
    assert resolve_unit("token") == "tokens"
    assert resolve_unit("FLOPS") == "flop"
    s = summarize([0.5] * 10)
    assert throughput_of(s, 1e12, "flop").median == pytest.approx(2.0)  # TFLOP/s
    assert throughput_of(s, 1e9, "bytes").unit == "GB/s"
    for bad in ("furlongs/s", "m^2", "2x", ""):
        with pytest.raises(ValueError, match=r"unknown unit.*a plain word.*tokens, samples"):
            resolve_unit(bad)


@pytest.mark.parametrize("unit", ["adds", "queries", "Frames"])
def test_any_countable_unit_is_a_throughput_per_second(unit):
    """Eight units were known and any other refused (`unit="adds"`); a plain word is a count,
    reported as '<unit>/s' with divisor 1, judged and projected like tokens."""
    key = resolve_unit(unit)
    assert key == unit.lower()
    t = throughput_of(summarize([0.5] * 10), 3.0, key)
    assert t.unit == f"{key}/s" and t.median == pytest.approx(6.0)
    with pytest.raises(ValueError):
        check_work(-1)


def test_result_round_trips_through_json(monkeypatch):
    vclock.install(monkeypatch, seed=2)
    cfg = resolve("cpu", FAST)
    r = measure(
        lambda: vclock.spin(0.0005),
        work=3,
        unit="samples",
        cfg=cfg,
        backend="cpu",
        nodeid="a.py::t",
        metric="m",
    )
    again = Result.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again == r
    assert again.key == "a.py::t::m"
    assert "samples/s" in r.headline()


def test_settings_layers_and_errors():
    cfg = resolve(
        "cuda", parse_layer({"max_time": "30"}, "ini"), parse_layer({"target": "1%"}, "cli")
    )
    assert cfg.max_time == 30 and cfg.target == 0.01 and cfg.min_samples == 10
    assert resolve("cpu").max_time == 2.0
    with pytest.raises(SettingError, match=r"command line: max_time='-3': must be > 0"):
        parse_layer({"max_time": "-3"}, "command line")
    with pytest.raises(SettingError, match="unknown setting 'max_tme'"):
        parse_layer({"max_tme": 3}, "marker")
    with pytest.raises(SettingError, match="tolerance=2"):
        parse_layer({"tolerance": 2}, "marker")
    # torch's threads for a CPU measurement: a whole number, 0 (torch's own) or more
    assert resolve("cpu").cpu_threads == 1 and resolve("cuda").cpu_threads == 0
    assert resolve("cpu", parse_layer({"cpu_threads": "0"}, "ini")).cpu_threads == 0
    for bad in (-1, 1.5, "two", True):
        with pytest.raises(SettingError, match=r"marker: cpu_threads=.*whole number"):
            parse_layer({"cpu_threads": bad}, "marker")
    with pytest.raises(
        SettingError,
        match=r"min_time=5 \(marker\) is above max_time=1 \(marker\): the minimum sampling time",
    ):
        resolve("cpu", parse_layer({"min_time": 5, "max_time": 1}, "marker"))
    # each value's own source is named, defaults included
    with pytest.raises(
        SettingError, match=r"min_time=3 \(command line\) is above max_time=2 \(the CPU default\)"
    ):
        resolve("cpu", parse_layer({"min_time": 3}, "command line"))
    with pytest.raises(
        SettingError, match=r"min_sample_time=30 \(cli\) is above max_time=0.05 \(ini\)"
    ):
        resolve(
            "cpu",
            parse_layer({"max_time": 0.05, "min_time": 0}, "ini"),
            parse_layer({"min_sample_time": 30}, "cli"),
        )
    with pytest.raises(
        SettingError, match="command line: min_samples='100000000': must be at most 100,000 samples"
    ):
        parse_layer({"min_samples": "100000000"}, "command line")


def test_max_time_is_a_hard_budget_for_slow_calls(monkeypatch):
    """Calls batched per sample never push sampling past max_time: one call takes 20 ms and
    min_sample_time asks for 1 s samples, so 5 samples would take 5 s against a 1.5 s budget;
    the engine batches fewer calls instead."""
    cfg = resolve(
        "cpu",
        parse_layer(
            {
                "min_sample_time": 1.0,
                "max_time": 1.5,
                "min_time": 0,
                "min_samples": 5,
                "warmup_time": 0,
            },
            "t",
        ),
    )
    vclock.install(monkeypatch, seed=4)
    r = measure(lambda: vclock.spin(0.02), work=1, unit="calls", cfg=cfg, backend="cpu")
    assert r.measure_s <= 1.5
    assert r.calls_per_sample * 0.02 * cfg.min_samples <= cfg.max_time * 1.01


def test_telemetry_summary_flags_throttling_and_energy():
    samples = [
        Sample(0.0, 1980, 0x0, 300.0, 50, 99),
        Sample(0.05, 1500, 0x4, 690.0, 60, 100),  # sw power cap
        Sample(0.10, 1400, 0x40 | 0x4, 700.0, 85, 100),  # hw thermal + power
        Sample(0.15, 1980, 0x1, 80.0, 55, 0),  # idle is not throttling
    ]
    s = summarize_samples(samples, 1_000_000, 1_500_000, 2.0)
    assert s.throttled_fraction == 0.5 and s.thermal_fraction == 0.25
    assert s.power_fraction == 0.5
    assert set(s.reasons) == {"sw-power-cap", "hw-thermal"}
    assert s.energy_j == 500.0 and s.power_max_w == 700.0 and s.temperature_max_c == 85
    assert s.utilization_mean == pytest.approx(0.7475)
    assert reason_names(0x8) == ["hw-slowdown"]
    assert summarize_samples([], None, None, 0.0).energy_j is None


def test_busy_fraction_is_the_union_of_kernel_spans():
    # two overlapping kernels [0,10] and [5,15] us, one at [20,30] us, over 40 us of wall
    assert _busy([(20, 30), (0, 10), (5, 15)], 40e-6) == pytest.approx(25 / 40)
    assert _busy([], 1.0) is None


def test_a_clock_that_does_not_move_between_samples_is_not_a_crash(monkeypatch):
    # a coarse clock can read the same value before and after short work: here warm-up and
    # the whole first chunk read 0 s, and sizing the next chunk must not divide by it
    clock = vclock.install(monkeypatch, seed=3)
    calls = []

    def work():
        calls.append(1)
        if len(calls) > 3 + 6 * 1000:  # 3 warm-up calls, then 6 samples of 1000 calls
            clock.spin(1e-6)

    r = measure(work, work=1, unit="calls", cfg=resolve("cpu", FAST), backend="cpu")
    assert r.calls_per_sample == 1000 and r.samples[:6] == [0.0] * 6
    assert r.outcome == "ok" and r.time.n > 6


def test_cycles_divide_out_a_clock_that_moves_within_the_session(monkeypatch):
    """Compute-bound work under a power cap: the SM clock swings between 1230 and 1545 MHz,
    so the time per call swings by 25%, while the cycles per call stay put. The engine
    takes each sample's clock from the telemetry readings within its span."""
    from pytest_gpuperf.core.figures import PER_CLOCK, metrics_of
    from pytest_gpuperf.measure.telemetry import Sample as Reading
    from pytest_gpuperf.measure.telemetry import summarize_samples
    from pytest_gpuperf.measure.timing import clocks_over

    clock = vclock.install(monkeypatch, seed=5)
    state = {"mhz": 1545.0, "calls": 0}
    readings = []

    class FakeSampler:
        samples = readings

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def summary(self):
            return summarize_samples(readings, None, None, 1.0)

    def work():
        state["calls"] += 1
        if state["calls"] % 7 == 0:  # the power controller moves the clock now and then
            state["mhz"] = 1230.0 if state["mhz"] == 1545.0 else 1545.0
        readings.append(Reading(clock.now, int(state["mhz"]), 0x4, 690.0, 60, 100))
        clock.spin(0.01 * 1545.0 / state["mhz"])  # 10 ms at full clock: time x clock is fixed

    cfg = resolve(
        "cpu",
        parse_layer(
            {
                "min_samples": 20,
                "min_time": 0.3,
                "max_time": 2,
                "warmup_time": 0,
                "min_sample_time": 0.001,
            },
            "t",
        ),
    )
    r = measure(
        work,
        work=1e12,
        unit="flop",
        cfg=cfg,
        backend="cpu",
        telemetry=lambda interval: FakeSampler(),
    )
    assert r.bound == "compute"
    assert r.time.max / r.time.min > 1.2  # the time moved with the clock ...
    assert r.cycles is not None and r.cycles.max / r.cycles.min < 1.001  # ... the cycles did not
    assert r.cycles.median == pytest.approx(0.01 * 1545.0 / 1e3, rel=1e-3)  # giga-cycles per call
    per_clock = metrics_of(r)[PER_CLOCK]
    assert per_clock["unit"] == "TFLOP/s per GHz"
    assert per_clock["median"] == pytest.approx(1 / (0.01 * 1.545), rel=1e-3)
    assert (per_clock["ci_high"] - per_clock["ci_low"]) / per_clock["median"] < 0.002
    # a sample whose span holds no reading takes the nearest one
    assert clocks_over(
        [Reading(1.0, 1500, 0, None, None, None), Reading(5.0, 1200, 0, None, None, None)],
        [(1.5, 2.0), (4.0, 4.5)],
    ) == [1500.0, 1200.0]


# ------------------------------------------------------------------- the time budget


def _stepper(times):
    """A benchmark whose successive calls take these virtual seconds (the last repeats)."""
    it = iter(times)
    last = [times[-1]]

    def step():
        last[0] = next(it, last[0])
        vclock.spin(last[0])

    return step


def test_multi_second_steps_warm_up_after_two_agreeing_calls(monkeypatch):
    vclock.install(monkeypatch, seed=2)
    cfg = resolve("cpu", parse_layer({"warmup_max_time": 60}, "t"))
    r = measure(_stepper([4.0, 2.0, 2.0]), work=1, unit="calls", cfg=cfg, backend="cpu")
    # the slow first step, then two agreeing 2 s steps: not a third one
    assert r.warmup_calls == 3


def test_short_calls_still_need_three_agreeing_calls(monkeypatch):
    vclock.install(monkeypatch, seed=3)
    cfg = resolve("cpu", parse_layer({"warmup_max_time": 60, "warmup_time": 0}, "t"))
    r = measure(
        _stepper([0.004, 0.002, 0.002, 0.002]), work=1, unit="calls", cfg=cfg, backend="cpu"
    )
    assert r.warmup_calls == 4


def test_a_sweep_point_is_one_warm_up_step_and_max_samples_timed_steps(monkeypatch):
    vclock.install(monkeypatch, seed=4)
    layer = parse_layer(
        {
            "min_samples": 3,
            "max_samples": 3,
            "min_time": 0,
            "warmup_time": 0,
            "warmup_max_time": 0.1,
            "max_time": 30,
        },
        "sweep",
    )
    r = measure(
        _stepper([3.0, 1.5]), work=1, unit="calls", cfg=resolve("cpu", layer), backend="cpu"
    )
    assert r.warmup_calls == 1
    assert r.calls_total == 3 and len(r.samples) == 3
    assert r.stop_reason == "max-samples"
    assert not any("max-samples" in n for n in r.notes)  # asked for: no note on every point
    # the budget adds up: one warm-up step and three timed ones
    assert r.warmup_s + r.measure_s == pytest.approx(3.0 + 3 * 1.5, rel=1e-3)


def test_max_samples_caps_sampling_of_fast_work(monkeypatch):
    vclock.install(monkeypatch, seed=5)
    cfg = resolve("cpu", FAST, parse_layer({"max_samples": 7, "target": 0.0001}, "t"))
    r = measure(lambda: vclock.spin(0.001), work=1, unit="calls", cfg=cfg, backend="cpu")
    assert len(r.samples) == 7 and r.stop_reason == "max-samples"


def test_max_samples_below_min_samples_is_a_clear_error():
    with pytest.raises(SettingError, match=r"min_samples=10 .*above max_samples=3"):
        resolve("cpu", parse_layer({"min_samples": 10, "max_samples": 3}, "marker"))

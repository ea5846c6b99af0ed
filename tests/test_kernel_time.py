"""A launch-bound result's GPU kernel time as a judged figure (`throughput_kernels`, from
core/figures.metrics_of): its class, direction and unit, in throughput and latency form;
saved into a baseline, read back and judged beside the launch-bound wall time; confirmed
by name in a fresh process's verdicts; shown in the tables; kept by a results file."""

from __future__ import annotations

import json

import pytest

from pytest_gpuperf.baseline.schema import entries_to_save
from pytest_gpuperf.baseline.store import load, save
from pytest_gpuperf.core.figures import KERNEL_TIME, KERNELS, LAUNCH, metrics_of
from pytest_gpuperf.core.results import Result, Throughput, throughput_of
from pytest_gpuperf.core.stats import summarize
from pytest_gpuperf.judging.confirmation import confirm
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.outputs.runfile import ResultsFileError, read_results
from pytest_gpuperf.outputs.text import result_rows, verdict_rows

from .reportdata import payload

SPREAD = (-5, -3, -1, 0, 0, 1, 2, 3, 4, 5)


def launch_bound(
    wall_s: float, kernel_s: float, *, unit="tokens", work=64.0, bound="memory", key="t.py::gen"
) -> Result:
    """A launch-bound result: `wall_s` per call on the host's clock, `kernel_s` of it on the
    GPU (10 samples and 10 chunks, each within ±0.5%)."""
    r = Result(nodeid=key, metric=None, unit=unit, work_per_call=work)
    r.samples = [wall_s * (1 + d / 1000) for d in SPREAD]
    r.time = summarize(r.samples, 0.95)
    r.throughput = throughput_of(r.time, work, unit)
    r.kernel_time = summarize([kernel_s * (1 + d / 1000) for d in SPREAD], 0.95)
    r.calls_total, r.stop_reason, r.bound = 10, "converged", bound
    r.busy_fraction, r.busy_source, r.launch_bound = 0.2, "profiler", True
    r.config = {"tolerance": 0.03}
    return r


def test_the_kernel_figure_is_work_per_kernel_second_in_the_kernel_time_class():
    r = launch_bound(0.010, 0.002)
    figs = metrics_of(r, LAUNCH)  # the run's class of the result's figures: launch-bound
    assert figs["throughput"]["noise_class"] == LAUNCH
    k = figs[KERNELS]
    assert k["unit"] == "tokens/s" and k["direction"] == "higher"
    assert k["median"] == pytest.approx(64 / 0.002, rel=1e-3)
    assert k["ci_low"] < k["median"] < k["ci_high"] and k["n"] == 10
    assert k["noise_class"] == KERNEL_TIME
    assert "launch-bound" in figs["throughput"]["flags"] and "flags" not in k


@pytest.mark.parametrize(
    ("unit", "bound", "declared"),
    [("bytes", "memory", None), ("flop", "compute", None), ("tokens", "memory", None),
     ("tokens", "memory", "bandwidth"), ("tokens", "memory", "launch-bound")],
)  # fmt: skip
def test_its_class_is_the_kernel_time_class_whatever_the_work_or_the_declared_one(
    unit, bound, declared
):
    r = launch_bound(0.010, 0.002, unit=unit, bound=bound)
    r.noise_class = declared
    assert metrics_of(r)[KERNELS]["noise_class"] == KERNEL_TIME


def test_a_latency_gets_its_kernel_time_per_call_in_its_unit():
    r = launch_bound(0.010, 0.002, unit="calls", work=1.0)
    r.higher_is_better = False
    t = r.time
    r.throughput = Throughput("ms", t.median * 1e3, t.ci_low * 1e3, t.ci_high * 1e3)
    figures = metrics_of(r)  # a latency's twin is named after it: latency_kernels
    assert KERNELS not in figures and set(figures) == {"latency", "latency_kernels"}
    k = figures["latency_kernels"]
    assert k["unit"] == "ms" and k["direction"] == "lower"
    assert k["median"] == pytest.approx(2.0, rel=1e-3) and k["ci_low"] < 2.0 < k["ci_high"]


def test_a_result_without_kernel_time_has_no_kernel_figure():
    r = launch_bound(0.010, 0.002)
    r.kernel_time = None
    assert KERNELS not in metrics_of(r)


def _sessions(tmp_path, walls, kernels):
    """A baseline file saved from one session per (wall, kernel) pair."""
    path = tmp_path / "h200.json"
    for i, (w, k) in enumerate(zip(walls, kernels, strict=True)):
        r = launch_bound(w, k)
        r.gpu_uuid = "GPU-a"
        save(path, "h200", entries_to_save([r], {}, date=f"d{i}", commit=None,
                                           session=f"s{i}"), now=f"n{i}")  # fmt: skip
    return load(path)


def test_saved_read_back_and_judged_beside_the_launch_bound_wall_time(tmp_path):
    """Three sessions whose wall time moved 30% (the host) and whose kernels moved 0.1%:
    a 10% slower kernel is a regression; the wall time, 10% slower too, decides nothing
    (launch-bound: a spread of at least 30%); an A/A run is unchanged in kernel time."""
    base = _sessions(tmp_path, [0.010, 0.013, 0.0085], [0.002, 0.002002, 0.001998])
    saved = base.entries["t.py::gen"]["metrics"]
    assert saved[KERNELS]["noise_class"] == KERNEL_TIME and len(saved[KERNELS]["history"]) == 3
    assert saved["throughput"]["noise_class"] == LAUNCH

    slower = launch_bound(0.011, 0.0022)
    judge_run([slower], base.entries, {})
    assert slower.verdicts[KERNELS].status == "regressed", slower.verdicts[KERNELS]
    assert slower.verdicts["throughput"].status != "regressed"
    assert "launch-bound" in slower.verdicts["throughput"].basis
    assert "launch-bound" not in slower.verdicts[KERNELS].basis

    same = launch_bound(0.0125, 0.002)
    judge_run([same], base.entries, {})
    assert same.verdicts[KERNELS].status == "unchanged", same.verdicts[KERNELS]

    again = launch_bound(0.009, 0.0022)  # the fresh process: the kernels slower again
    first = judge_run([slower], base.entries, {})
    again_j = judge_run([again], base.entries, {}, offsets=first.metric_offsets)
    confirm([slower], first, [again], again_j, None)
    assert slower.verdicts[KERNELS].confirmed is True

    rows = verdict_rows([slower])
    assert any(row[0] == "REGRESSED" and row[2] == KERNELS for row in rows)


def test_the_results_table_shows_the_kernel_time_beside_the_wall_time():
    (row,) = result_rows([launch_bound(0.010, 0.002)])
    assert row[6].startswith("launch-bound (GPU busy 20%), GPU kernels 2.001 ms/call")


def test_a_results_file_keeps_the_kernel_time():
    r = launch_bound(0.010, 0.002)
    (back,) = read_results(payload([r])["results"], "run.json")
    assert back.kernel_time == r.kernel_time
    assert metrics_of(back)[KERNELS] == metrics_of(r)[KERNELS]
    doc = json.loads(json.dumps(payload([r])))
    doc["results"][0]["kernel_time"]["n"] = "ten"
    with pytest.raises(ResultsFileError, match=r"results\[0\].*kernel_time: n must be int"):
        read_results(doc["results"], "run.json")

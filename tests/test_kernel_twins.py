"""A kernel-time figure beside its wall time in one noise class (work busy enough not to be
launch-bound, the band below KERNEL_BUSY_BELOW, has both): one benchmark, whose two figures
share most of their noise. It is judged, but it never votes beside its wall time: not in the
class's session offsets or pool (noise.py), not in the run's class shift or the offsets its
class-mates are judged after (offsets.py), not in the paired stage's pool (stage2.py)."""

from __future__ import annotations

import pytest

from pytest_gpuperf.baseline.schema import entries_to_save
from pytest_gpuperf.baseline.store import load, save
from pytest_gpuperf.core.figures import KERNELS, LAUNCH, metrics_of, same_class_twins
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.judging.offsets import ClassShift
from pytest_gpuperf.judging.stage2 import PairedFigure, judge_paired, pooled
from pytest_gpuperf.judging.verdict import Verdict
from pytest_gpuperf.run.envshift import environment_shifts

from .test_kernel_time import launch_bound

TESTS = ("t.py::a", "t.py::b", "t.py::c", "t.py::d")  # a has a kernel figure; b-d do not
SESSIONS = (1.0, 1.012, 0.991)  # a machine's shift of the whole class, session by session
OWN = {"t.py::a": (0.000, 0.002, -0.001), "t.py::b": (0.001, -0.002, 0.000),
       "t.py::c": (-0.001, 0.000, 0.002), "t.py::d": (0.002, 0.001, -0.002)}  # fmt: skip


def busy(key: str, wall_s: float, kernel_s: float | None) -> object:
    """A 90%-busy copy (bandwidth class): not launch-bound, a kernel figure where given."""
    r = launch_bound(wall_s, kernel_s or wall_s, unit="bytes", work=1e9, bound="memory", key=key)
    r.launch_bound, r.busy_fraction = False, 0.9
    if kernel_s is None:
        r.kernel_time = None
    return r


def _run(slow: dict[str, float] | None = None, shift: float = 1.0) -> list:
    slow = slow or {}
    return [
        busy(k, 0.001 * shift * slow.get(k, 1.0),
             0.0009 * shift * slow.get(k, 1.0) if k == "t.py::a" else None)
        for k in TESTS
    ]  # fmt: skip


def _baseline(tmp_path):
    path = tmp_path / "h200.json"
    for i, f in enumerate(SESSIONS):
        rs = [busy(k, 0.001 / f * (1 + OWN[k][i]),
                   0.0009 / f * (1 + OWN[k][i] * 0.8) if k == "t.py::a" else None)
              for k in TESTS]  # fmt: skip
        for r in rs:
            r.gpu_uuid = "GPU-a"
        save(path, "h200", entries_to_save(rs, {}, date=f"d{i}", commit=None, session=f"s{i}"),
             now=f"n{i}")  # fmt: skip
    return load(path).entries


def test_a_busy_results_kernel_figure_is_the_twin_of_its_wall_time():
    figs = metrics_of(busy("t.py::a", 0.001, 0.0009))
    assert figs["throughput"]["noise_class"] == figs[KERNELS]["noise_class"] == "bandwidth"
    assert same_class_twins(figs) == {KERNELS}
    # launch-bound work: the wall time is launch-bound, the kernels in their own class
    lb = metrics_of(launch_bound(0.010, 0.002), LAUNCH)
    assert lb["throughput"]["noise_class"] == LAUNCH and same_class_twins(lb) == set()
    assert same_class_twins(metrics_of(busy("t.py::b", 0.001, None))) == set()
    # launch-bound work with a declared class has both figures in it, but its wall time is
    # the host's: its kernel figure keeps its vote
    declared = launch_bound(0.010, 0.002)
    declared.noise_class = "model"
    figs = metrics_of(declared)
    assert figs["throughput"]["noise_class"] == figs[KERNELS]["noise_class"] == "model"
    assert same_class_twins(figs) == set()


def test_the_class_shift_counts_benchmarks_and_the_twin_takes_its_wall_times_offset(tmp_path):
    entries = _baseline(tmp_path)
    run = _run(shift=1 / 1.02)  # a machine 2% faster for the whole class
    j = judge_run(run, entries, {})
    median, members = j.offsets[("bandwidth", None)]
    assert members == 4  # a, b, c, d: a's kernel figure is not a fifth voter
    assert median == pytest.approx(0.0198, abs=0.004)
    off = j.metric_offsets
    assert off["t.py::a::throughput_kernels"] == off["t.py::a::throughput"]
    a = run[0].verdicts
    assert a["throughput"]["status"] == a[KERNELS]["status"] == "unchanged", a


def test_one_benchmark_slower_in_both_figures_moves_its_class_mates_offsets_once(tmp_path):
    """a 10% slower in wall and kernel time: b's offset is the median of a, c, d (a once),
    so b is judged after c and d's shift, not dragged by a twice; a is regressed in both."""
    entries = _baseline(tmp_path)
    run = _run(slow={"t.py::a": 1.10})
    j = judge_run(run, entries, {})
    assert j.offsets[("bandwidth", None)][1] == 4
    b_off = j.metric_offsets["t.py::b::throughput"]
    assert b_off[1] == 3  # its 3 class-mates a, c, d: not a's kernel figure as a fourth
    a = run[0].verdicts
    assert a["throughput"]["status"] == a[KERNELS]["status"] == "regressed", a
    assert all(r.verdicts["throughput"]["status"] == "unchanged" for r in run[1:])


def test_the_class_pool_is_made_of_benchmarks_not_figures(tmp_path):
    entries = _baseline(tmp_path)
    run = _run()
    judge_run(run, entries, {})
    basis = run[0].verdicts[KERNELS]["basis"]
    wall = run[1].verdicts["throughput"]["basis"]
    # each of the 4 benchmarks gives its 3 sessions (2 df) to the pool; the twin takes it
    assert "of 4 memory-bandwidth-bound metrics (8 df)" in wall, wall
    assert "of 4 memory-bandwidth-bound metrics (8 df)" in basis, basis


def _fig(key, metric, d, pair=(0, 0, 0, 1, 1, 1)):
    base = tuple(100.0 for _ in d)
    head = tuple(100.0 * (1 + x) for x in d)
    return PairedFigure(key, metric, "bandwidth", True, base, head, pair)


D = ((0.001, -0.001, 0.002, 0.0, -0.002, 0.001), (-0.001, 0.002, 0.0, 0.001, -0.001, -0.002),
     (0.002, 0.0, -0.001, -0.002, 0.001, 0.0), (0.0, 0.001, -0.002, 0.002, -0.001, 0.001))  # fmt: skip


def test_the_paired_pool_counts_a_benchmark_once_kernel_time_apart_from_wall_time():
    figs = [_fig("x", "throughput", D[0]), _fig("x", KERNELS, D[0]),
            _fig("y", "throughput", D[1]), _fig("z", "throughput", D[2])]  # fmt: skip
    out = pooled(figs)
    assert out[("x", "throughput")][1] == 15  # x, y, z: 5 df each
    assert out[("x", KERNELS)][1] == 5  # alone of its kind: its own, adds nothing to theirs
    two = pooled(figs[:3])  # x's two figures and y: two benchmarks, too few for a pool
    assert all(df == 5 for _, df in two.values())
    kernels = pooled([_fig(k, KERNELS, d) for k, d in zip("abc", D, strict=False)])
    assert all(df == 15 for _, df in kernels.values())  # kernel figures pool among themselves


def test_noisy_kernel_figures_do_not_let_a_noisy_wall_figure_into_the_quiet_pool():
    """Three quiet wall-time figures (0.1-0.2% a round), one wall-time figure ten times
    noisier, and three kernel-time figures as noisy as it: in one pool the kernel figures
    would make the noisy wall figure look ordinary; by kind, the screen keeps it out."""
    loud = [tuple(10 * v for v in d) for d in D]
    figs = [_fig(k, "throughput", d) for k, d in zip("abc", D[:3], strict=True)]
    figs += [_fig("w", "throughput", loud[3])]
    figs += [_fig(k, KERNELS, d) for k, d in zip("pqr", loud[:3], strict=True)]
    out = pooled(figs)
    assert out[("w", "throughput")][1] == 5  # its own variance and degrees of freedom
    assert all(out[(k, "throughput")][1] == 15 for k in "abc")
    assert all(out[(k, KERNELS)][1] == 15 for k in "pqr")  # a pool of their own


def test_a_run_of_some_tests_fits_the_same_pool_as_the_whole_run(tmp_path):
    """The twins are read from the baseline file too: a run of b alone (a -k subset, or the
    fresh-process confirmation of b) must not let a's saved kernel figure vote again."""
    entries = _baseline(tmp_path)
    whole, alone = _run(), [busy("t.py::b", 0.001, None)]
    judge_run(whole, entries, {})
    judge_run(alone, entries, {})
    want = "of 4 memory-bandwidth-bound metrics (8 df)"
    assert want in whole[1].verdicts["throughput"]["basis"]
    assert want in alone[0].verdicts["throughput"]["basis"], alone[0].verdicts["throughput"]


def _class_line(status: str, keys: tuple[str, ...]) -> ClassShift:
    return ClassShift("bandwidth", None, Verdict(status, -0.05, 0.05, 0.01, 0.03, "moved"),
                      len(keys), keys)  # fmt: skip


def test_an_environment_shift_needs_most_benchmarks_of_the_class_re_measured():
    """A class line of 6 benchmarks, 3 with a kernel figure beside the wall time: 2 of them
    re-measured unchanged in both figures is 2 benchmarks (4 figures), not most of 6; 3 is."""
    keys = tuple(f"t.py::b{i}" for i in range(6))
    same = {"status": "unchanged", "paired": {"commit": "c"}, "stage1": {"status": "inconclusive"}}

    def run(remeasured: int) -> list:
        res = [busy(k, 0.001, 0.0009 if i < 3 else None) for i, k in enumerate(keys)]
        for i, r in enumerate(res):
            v = dict(same) if i < remeasured else {"status": "inconclusive"}
            r.verdicts = {"throughput": v, **({KERNELS: dict(v)} if i < 3 else {})}
        return res

    shifts = [_class_line("regressed", keys)]
    assert environment_shifts(shifts, run(2), {}, {}) == []
    assert shifts[0].verdict.status == "regressed"  # 2 of 6 benchmarks: the code may have
    shifts = [_class_line("regressed", keys)]
    assert len(environment_shifts(shifts, run(3), {}, {})) == 1
    assert shifts[0].verdict.status == "inconclusive"


def test_a_class_figure_each_process_pair_bore_out_as_improved_blocks_an_environment_shift():
    # 3 of 6 benchmarks re-measured: 2 unchanged, 1 kept improved (stage 1's verdict, every
    # process pair beyond the tolerance, run/paired.py _each_pair): the code may have moved
    keys = tuple(f"t.py::b{i}" for i in range(6))
    same = {"status": "unchanged", "paired": {"commit": "c"}, "stage1": {"status": "inconclusive"}}
    kept = {"status": "improved", "paired": {"commit": "c", "each_pair": [0.06, 0.05]}}
    res = [busy(k, 0.001, None) for k in keys]
    for i, r in enumerate(res):
        r.verdicts = {"throughput": dict(same) if i < 2 else dict(kept) if i == 2
                      else {"status": "inconclusive"}}  # fmt: skip
    shifts = [_class_line("improved", keys)]
    assert environment_shifts(shifts, res, {}, {}) == []
    assert shifts[0].verdict.status == "improved"
    res[2].verdicts = {"throughput": dict(same)}  # re-measured unchanged: the environment
    assert len(environment_shifts(shifts, res, {}, {})) == 1


def test_a_paired_kernel_figures_pool_is_named_for_what_it_is():
    figs = [_fig(k, KERNELS, d) for k, d in zip("abc", D, strict=False)]
    verdicts, _ = judge_paired(figs, {k: 0.03 for k in "abc"}, 0.005)
    assert "(pooled over its class's kernel-time figures, 15 df)" in verdicts[("a", KERNELS)].basis


def test_the_run_offsets_find_the_same_twins_as_the_figures():
    """offsets.kernel_twins (over the judged items) is same_class_twins: a busy result's
    kernel figure is a twin; a launch-bound result's with a declared class is not."""
    from pytest_gpuperf.judging.noise import Spread
    from pytest_gpuperf.judging.offsets import Item, kernel_twins

    declared = launch_bound(0.010, 0.002, key="t.py::lb")
    declared.noise_class = "model"
    items = [
        Item(r, name, m, str(m["noise_class"]), Spread(0.0, 1e-4, 4, 3, "own"), 0.03, 0.0)
        for r in (busy("t.py::a", 0.001, 0.0009), declared)
        for name, m in metrics_of(r).items()
        if name in ("throughput", KERNELS)
    ]
    assert kernel_twins(items) == {"t.py::a::throughput_kernels"}

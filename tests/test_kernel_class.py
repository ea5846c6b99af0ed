"""GPU kernel-time figures are a noise class of their own (core.figures.KERNEL_TIME): pooled
only among themselves, judged on each session's value as measured (no class offsets), never
beside their wall time in one class, whatever class the work's wall time is in or a file
saved before 2026-12-03 says. Their wall-time figures keep their class, its offsets and
its pool, counting each benchmark once."""

from __future__ import annotations

import statistics

import pytest

from pytest_gpuperf.baseline.history import metric_class, series_of
from pytest_gpuperf.baseline.schema import entries_to_save
from pytest_gpuperf.baseline.store import load, save
from pytest_gpuperf.core.figures import KERNEL_TIME, KERNELS, LAUNCH, metrics_of
from pytest_gpuperf.core.verdict import from_json, make
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.judging.noise import OFFSET_CLASSES
from pytest_gpuperf.judging.offsets import ClassShift
from pytest_gpuperf.judging.pairedrounds import PairedFigure
from pytest_gpuperf.paired.envshift import environment_shifts
from pytest_gpuperf.paired.judge import judge_paired, pooled

from .test_kernel_time import launch_bound

TESTS = ("t.py::a", "t.py::b", "t.py::c", "t.py::d")  # each with wall and kernel time
SESSIONS = (1.0, 1.012, 0.991)  # a machine's shift of the wall-time class, session by session
OWN = {"t.py::a": (0.000, 0.002, -0.001), "t.py::b": (0.001, -0.002, 0.000),
       "t.py::c": (-0.001, 0.000, 0.002), "t.py::d": (0.002, 0.001, -0.002)}  # fmt: skip
KOWN = {"t.py::a": (0.001, -0.001, 0.000), "t.py::b": (-0.001, 0.000, 0.001),
        "t.py::c": (0.000, 0.001, -0.001), "t.py::d": (0.001, 0.000, -0.001)}  # fmt: skip


def busy(key: str, wall_s: float, kernel_s: float | None) -> object:
    """A 90%-busy copy (bandwidth class): not launch-bound, a kernel figure where given."""
    r = launch_bound(wall_s, kernel_s or wall_s, unit="bytes", work=1e9, bound="memory", key=key)
    r.launch_bound, r.busy_fraction = False, 0.9
    if kernel_s is None:
        r.kernel_time = None
    return r


def _run(wall: float = 1.0, kernels: float = 1.0, slow: dict[str, float] | None = None) -> list:
    """This run: every wall time `wall` times, every kernel time `kernels` times the
    baseline's level; `slow` makes one benchmark slower in both."""
    slow = slow or {}
    return [busy(k, 0.001 * wall * slow.get(k, 1.0), 0.0009 * kernels * slow.get(k, 1.0))
            for k in TESTS]  # fmt: skip


def _baseline(tmp_path, kernel_sessions=(1.0, 1.0, 1.0)):
    """3 sessions: the wall times moved together by SESSIONS (the host), the kernel times
    by `kernel_sessions` (the GPU's state), each figure by its own few 0.1%s."""
    path = tmp_path / "h200.json"
    for i, (f, kf) in enumerate(zip(SESSIONS, kernel_sessions, strict=True)):
        rs = [busy(k, 0.001 / f * (1 + OWN[k][i]), 0.0009 / kf * (1 + KOWN[k][i]))
              for k in TESTS]  # fmt: skip
        for r in rs:
            r.gpu_uuid = "GPU-a"
        save(path, "h200", entries_to_save(rs, {}, date=f"d{i}", commit=None, session=f"s{i}"),
             now=f"n{i}")  # fmt: skip
    return load(path).entries


def test_a_kernel_figure_is_in_the_kernel_time_class_whatever_its_work():
    figs = metrics_of(busy("t.py::a", 0.001, 0.0009))
    assert figs["throughput"]["noise_class"] == "bandwidth"
    assert figs[KERNELS]["noise_class"] == KERNEL_TIME
    lb = metrics_of(launch_bound(0.010, 0.002), LAUNCH)
    assert lb["throughput"]["noise_class"] == LAUNCH and lb[KERNELS]["noise_class"] == KERNEL_TIME
    declared = launch_bound(0.010, 0.002)
    declared.noise_class = "model"  # a declared class is the wall time's, not the kernels'
    figs = metrics_of(declared)
    assert figs["throughput"]["noise_class"] == "model"
    assert figs[KERNELS]["noise_class"] == KERNEL_TIME
    assert KERNEL_TIME not in OFFSET_CLASSES


def test_a_file_saved_with_the_works_class_is_read_in_the_kernel_time_class(tmp_path):
    """Files saved before 2026-12-03 gave a kernel figure its work's class: read now, it is
    pooled with the other kernel figures, not with the wall times it was saved beside."""
    entries = _baseline(tmp_path)
    for entry in entries.values():
        entry["metrics"][KERNELS]["noise_class"] = "bandwidth"  # as saved before
    assert metric_class(KERNELS, entries["t.py::a"]["metrics"][KERNELS], entries["t.py::a"]) \
        == KERNEL_TIME
    classes = {s.key: s.cls for s in series_of(entries)}
    assert classes["t.py::a::throughput_kernels"] == KERNEL_TIME
    assert classes["t.py::a::throughput"] == "bandwidth"
    run = _run()
    judge_run(run, entries, {})
    assert "of 4 GPU-kernel-time metrics (8 df)" in run[0].verdicts[KERNELS].basis
    # a run of b alone classes only b's figures: a, c and d's saved kernel figures must be
    # read in the kernel-time class from the file itself to pool with b's
    alone = [busy("t.py::b", 0.001, 0.0009)]
    judge_run(alone, entries, {})
    assert "of 4 GPU-kernel-time metrics (8 df)" in alone[0].verdicts[KERNELS].basis


def test_each_class_pools_one_figure_per_benchmark(tmp_path):
    entries = _baseline(tmp_path)
    run = _run()
    j = judge_run(run, entries, {})
    assert j.offsets[("bandwidth", None)][1] == 4  # 4 wall times: no kernel figure votes
    assert not any(cls == KERNEL_TIME for cls, _ in j.offsets)  # no offsets of kernel time
    for r in run:
        assert "of 4 memory-bandwidth-bound metrics (8 df)" in r.verdicts["throughput"].basis
        k = r.verdicts[KERNELS]
        assert "of 4 GPU-kernel-time metrics (8 df)" in k.basis, k
        assert "class-wide" not in k.basis and k.status == "unchanged", k


def test_the_hosts_shift_of_the_wall_times_never_reaches_the_kernel_figures(tmp_path):
    """The wall-time class moved 1.2% between sessions with the host; the kernels did not.
    Removing the wall-time class's offsets from the kernel figures (the rule before) would
    have added that 1.2% to their spread; in their own class it is not in it."""
    entries = _baseline(tmp_path)
    run = _run(wall=1 / 1.02)  # this machine's host 2% faster: the wall times' class shift
    j = judge_run(run, entries, {})
    assert j.offsets[("bandwidth", None)][0] == pytest.approx(0.0198, abs=0.004)
    for r in run:
        assert r.verdicts["throughput"].status == "unchanged"
        k = r.verdicts[KERNELS]
        assert k.status == "unchanged" and abs(k.change) < 0.003, k
        assert float(k.basis.split("%")[0].lstrip("±")) < 2.0, k  # sessions 0.1% apart


def test_a_machine_whose_kernels_all_run_slower_reads_each_kernel_figure_slower(tmp_path):
    """No offset absorbs a shift of every kernel figure: a GPU state (or a change of the
    code) that slows every kernel 10% reads as each figure 10% slower. A GPU state is what
    the paired stage's kernel check re-measures (paired/stage.py candidates); a whole class
    of kernels slowed by the code stays caught."""
    entries = _baseline(tmp_path)
    run = _run(kernels=1.10)
    j = judge_run(run, entries, {})
    for r in run:
        assert r.verdicts["throughput"].status == "unchanged"
        k = r.verdicts[KERNELS]
        assert k.status == "regressed" and k.change == pytest.approx(-0.0909, abs=0.004)
    assert not any(s.cls == KERNEL_TIME for s in j.shifts)


def test_kernel_sessions_that_moved_together_widen_the_spread_not_the_verdict(tmp_path):
    """Sessions whose kernels all ran 1.5% apart (a GPU state the baseline saw): the pool
    keeps that spread, so a run at one of those states is not a change."""
    entries = _baseline(tmp_path, kernel_sessions=(1.0, 1.015, 0.985))
    quiet = _baseline(tmp_path / "q")
    run, run_q = _run(kernels=1.015), _run(kernels=1.015)
    judge_run(run, entries, {})
    judge_run(run_q, quiet, {})

    def width(r):
        return float(r.verdicts[KERNELS].basis.split("%")[0].lstrip("±"))

    assert all(r.verdicts[KERNELS].status != "regressed" for r in run)
    assert all(width(a) > 3 * width(b) for a, b in zip(run, run_q, strict=True))


def test_one_benchmark_slower_in_both_figures_is_regressed_in_both(tmp_path):
    entries = _baseline(tmp_path)
    run = _run(slow={"t.py::a": 1.10})
    j = judge_run(run, entries, {})
    assert j.metric_offsets["t.py::b::throughput"][1] == 3  # its class-mates a, c, d
    a = run[0].verdicts
    assert a["throughput"].status == a[KERNELS].status == "regressed", a
    for r in run[1:]:
        assert r.verdicts["throughput"].status == r.verdicts[KERNELS].status == "unchanged"


def test_a_run_of_some_tests_fits_the_same_pools_as_the_whole_run(tmp_path):
    """A -k subset (or the fresh-process confirmation of b) is judged with the pool of every
    saved kernel figure, not only of those it measured."""
    entries = _baseline(tmp_path)
    alone = [busy("t.py::b", 0.001, 0.0009)]
    judge_run(alone, entries, {})
    assert "of 4 GPU-kernel-time metrics (8 df)" in alone[0].verdicts[KERNELS].basis


def _fig(key, metric, d, cls="bandwidth", pair=(0, 0, 0, 1, 1, 1)):
    base = tuple(100.0 for _ in d)
    head = tuple(100.0 * (1 + x) for x in d)
    return PairedFigure(key, metric, cls, True, base, head, pair)


D = ((0.001, -0.001, 0.002, 0.0, -0.002, 0.001), (-0.001, 0.002, 0.0, 0.001, -0.001, -0.002),
     (0.002, 0.0, -0.001, -0.002, 0.001, 0.0), (0.0, 0.001, -0.002, 0.002, -0.001, 0.001))  # fmt: skip


def _pooled_as(out, figs, df_sum):
    """Each of `figs` judged on the pool of them all (its variance and df) where its own
    variance is at most the pool's, else on its own variance with its own df."""
    own = {(f.key, f.metric): statistics.variance(f.diffs()) for f in figs}
    sp = sum(own.values()) / len(own)  # equal df each: the pool is their mean
    for k, v in own.items():
        want = (sp, df_sum) if v <= sp else (v, 5)
        assert out[k] == pytest.approx(want), (k, out[k], want)


def test_the_paired_pool_keeps_kernel_time_apart_from_wall_time():
    figs = [_fig("x", "throughput", D[0]), _fig("x", KERNELS, D[0], KERNEL_TIME),
            _fig("y", "throughput", D[1]), _fig("z", "throughput", D[2])]  # fmt: skip
    out = pooled(figs)
    _pooled_as(out, [figs[0], figs[2], figs[3]], 15)  # x, y, z: 5 df each
    assert out[("x", KERNELS)][1] == 5  # alone in its class: its own
    kfigs = [_fig(k, KERNELS, d, KERNEL_TIME) for k, d in zip("abc", D, strict=False)]
    _pooled_as(pooled(kfigs), kfigs, 15)  # kernel figures pool among themselves


def test_noisy_kernel_figures_do_not_let_a_noisy_wall_figure_into_the_quiet_pool():
    """Three quiet wall-time figures (0.1-0.2% a round), one ten times noisier, and three
    kernel-time figures as noisy as it: apart, the screen keeps the noisy wall figure out."""
    loud = [tuple(10 * v for v in d) for d in D]
    figs = [_fig(k, "throughput", d) for k, d in zip("abc", D[:3], strict=True)]
    figs += [_fig("w", "throughput", loud[3])]
    figs += [_fig(k, KERNELS, d, KERNEL_TIME) for k, d in zip("pqr", loud[:3], strict=True)]
    out = pooled(figs)
    assert out[("w", "throughput")][1] == 5  # its own variance and degrees of freedom
    _pooled_as(out, figs[:3], 15)
    _pooled_as(out, figs[4:], 15)  # a pool of their own


def test_a_paired_kernel_figures_pool_is_named_for_what_it_is():
    figs = [_fig(k, KERNELS, d, KERNEL_TIME) for k, d in zip("abc", D, strict=False)]
    verdicts, _ = judge_paired(figs, {k: 0.03 for k in "abc"}, 0.005)
    named = [v.basis for v in verdicts.values() if "pooled over" in v.basis]
    assert named and all("(pooled over its class's kernel-time figures, 15 df)" in b for b in named)


def _class_line(status: str, keys: tuple[str, ...]) -> ClassShift:
    return ClassShift("bandwidth", None, make(status, -0.05, 0.05, 0.01, 0.03, "moved"),
                      len(keys), keys)  # fmt: skip


def test_an_environment_shift_counts_the_class_lines_benchmarks_not_their_kernel_figures():
    """A class line of 6 benchmarks, 3 with a kernel figure: 2 re-measured unchanged in both
    figures is 2 of the class's 6 benchmarks, not most of them; 3 is."""
    keys = tuple(f"t.py::b{i}" for i in range(6))
    same = {"status": "unchanged", "paired": {"commit": "c"}, "stage1": {"status": "inconclusive"}}

    def run(remeasured: int) -> list:
        res = [busy(k, 0.001, 0.0009 if i < 3 else None) for i, k in enumerate(keys)]
        for i, r in enumerate(res):
            v = from_json(same if i < remeasured else {"status": "inconclusive"})
            r.verdicts = {"throughput": v, **({KERNELS: v} if i < 3 else {})}
        return res

    shifts = [_class_line("regressed", keys)]
    assert environment_shifts(shifts, run(2), {}, {}) == []
    assert shifts[0].verdict.status == "regressed"
    shifts = [_class_line("regressed", keys)]
    assert len(environment_shifts(shifts, run(3), {}, {})) == 1
    assert shifts[0].verdict.status == "inconclusive"


def test_a_class_figure_each_process_pair_bore_out_as_improved_blocks_an_environment_shift():
    # 3 of 6 benchmarks re-measured: 2 unchanged, 1 kept improved (stage 1's verdict, every
    # process pair beyond the tolerance, paired/stage.py _each_pair): the code may have moved
    keys = tuple(f"t.py::b{i}" for i in range(6))
    same = {"status": "unchanged", "paired": {"commit": "c"}, "stage1": {"status": "inconclusive"}}
    kept = {"status": "improved", "paired": {"commit": "c", "each_pair": [0.06, 0.05]}}
    res = [busy(k, 0.001, None) for k in keys]
    for i, r in enumerate(res):
        r.verdicts = {"throughput": from_json(same if i < 2 else kept if i == 2
                                              else {"status": "inconclusive"})}  # fmt: skip
    shifts = [_class_line("improved", keys)]
    assert environment_shifts(shifts, res, {}, {}) == []
    assert shifts[0].verdict.status == "improved"
    res[2].verdicts = {"throughput": from_json(same)}  # re-measured unchanged: the environment
    assert len(environment_shifts(shifts, res, {}, {})) == 1

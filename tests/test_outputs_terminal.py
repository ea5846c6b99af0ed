"""The terminal output (outputs/terminal.py): the results table, progress lines, the plan."""

import json

import pytest

from .gateproject import FAST, saved


def test_one_compact_table_by_default_details_with_v(project):
    saved(project, times=2)
    default = project.runpytest(*FAST).stdout.str()
    assert "verdict    benchmark" in default and "median/call" not in default  # one table
    assert "to settle" not in default
    verbose = project.runpytest(*FAST, "-v").stdout.str()
    assert "verdict    benchmark" in verbose and "median/call" in verbose  # both tables
    quiet = project.runpytest(*FAST, "-q").stdout.str()
    assert "verdict    benchmark" in quiet
    widths = [len(line) for line in quiet.splitlines() if str(project.path) not in line]
    assert max(widths) <= 120, quiet  # no 190-character lines (file paths aside)
    # -v: how each verdict was reached, one numbered line a rule; none without -v
    assert "how each verdict was reached" not in default
    trail = verbose.split("how each verdict was reached", 1)[1].splitlines()
    heads = [line for line in trail if line.split(" ")[0] in ("UNCHANGED", "INCONCLUSIVE")]
    assert heads and all("  1. stage 1, " in trail[trail.index(h) + 1] for h in heads)


SWEEP = """
from vclock import spin

def test_sweep(gpu_benchmark):
    for batch in (1, 2, 4):
        gpu_benchmark(lambda: spin(0.001 * batch), work=batch * 64, unit="tokens", metric=f"batch{batch}")
"""


def test_progress_lines_for_each_measurement(project, monkeypatch):
    import pytest_gpuperf.measure.bench as bench

    project.makepyfile(test_s=SWEEP)
    verbose = project.runpytest(*FAST, "test_s.py", "-v")
    verbose.stdout.fnmatch_lines(
        ["*gpuperf: test_s.py::test_sweep::batch1: 64,0* tokens/s (95% CI*", "*gpuperf: test_s.py::test_sweep::batch4: *tokens/s*"]
    )
    plain = project.runpytest(*FAST, "test_s.py").stdout.str()
    assert "gpuperf: test_s.py::test_sweep::batch1:" not in plain  # a short test: no lines
    monkeypatch.setattr(bench.GpuBenchmark, "PROGRESS_AFTER_S", -1.0)  # as if it ran long
    long = project.runpytest(*FAST, "test_s.py")
    long.stdout.fnmatch_lines(["*gpuperf: test_s.py::test_sweep::batch2: *tokens/s*"])
    quiet = project.runpytest(*FAST, "test_s.py", "-q").stdout.str()
    assert "gpuperf: test_s.py::test_sweep::batch" not in quiet  # nothing extra under -q


def test_a_plan_before_spending(project):
    saved(project, times=1)
    data = json.loads((project.path / "baselines" / "cpu.json").read_text())
    assert all(e["duration_s"] >= 0 for e in data["entries"].values())  # recorded when saved
    project.makepyfile(
        test_c="def test_new(gpu_benchmark):\n    pass\n",
        test_d="import pytest\n\n@pytest.mark.gpu_requires_gpus(2)\n"
        "def test_two(gpu_benchmark):\n    pass\n",
    )
    result = project.runpytest(*FAST, "--gpuperf-plan")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "gpuperf plan: 4 test(s), durations from *cpu.json",
            "test_b.py::test_spin * s",
            "test_b.py::test_other * s",
            "test_c.py::test_new *unknown",
            "test_d.py::test_two *skipped here: needs 2 GPU(s), 0 visible*",
            "total: * s + 1 test(s) of unknown duration; 1 test(s) skipped here",
        ]
    )
    assert "passed" not in result.stdout.str()  # nothing ran
    assert "!!!" not in result.stdout.str()  # an ordinary end, not pytest.exit's (issue #21)
    assert "Exit" not in result.stdout.str()


RECORDING = """
from vclock import spin

def test_spin(gpu_benchmark):
    gpu_benchmark(lambda: spin(0.002), work=64, unit="tokens")
    gpu_benchmark.record("max_batch", 24, "samples")
    gpu_benchmark.record("padding", 0.1, "fraction")
"""


def test_quiet_counts_recorded_figures_and_verbose_lists_them(project):
    project.makepyfile(test_r=RECORDING)
    quiet = project.runpytest(*FAST, "-q", "test_r.py", "--gpuperf-baseline=off").stdout.str()
    assert "2 recorded figure(s): -v lists them" in quiet
    assert "test_r.py::test_spin::max_batch" not in quiet
    default = project.runpytest(*FAST, "test_r.py", "--gpuperf-baseline=off").stdout.str()
    assert "test_r.py::test_spin::max_batch: 24 samples" in default
    assert "recorded figure(s)" not in default


RECORDED_ONLY = """
def test_sizes(gpu_benchmark):
    gpu_benchmark.record("max_batch", 24, "samples")
"""


def test_a_run_of_recorded_figures_alone_prints_no_results_table(project):
    project.makepyfile(test_o=RECORDED_ONLY)
    result = project.runpytest(*FAST, "test_o.py", "--gpuperf-baseline=off")
    out = result.stdout.str()
    assert "test_o.py::test_sizes::max_batch: 24 samples" in out
    assert "throughput" not in out and "median/call" not in out  # no empty header


@pytest.mark.parametrize("figures", [9, 1000, 20000, 10**7])
def test_the_confidence_line_never_rounds_a_run_s_confidence_to_certainty(figures):
    """Issue 58: a 20,000-figure run said "judged at 100.000% confidence"."""
    from pytest_gpuperf.outputs.terminal import verdict_count_line

    confidence = 1 - 0.01 / figures
    line = verdict_count_line([["UNCHANGED"]], confidence, 0)
    shown = line.split("judged at ")[1].split("%")[0]
    assert float(shown) < 100
    assert abs(float(shown) / 100 - confidence) <= 0.01 / figures / 2  # and close to it
    if figures == 9:
        assert "99.889%" in line  # three decimals where they suffice, as before

"""outputs/terminal.py under -q: the results table alone, recorded figures counted (#21.9)."""

from .gateproject import FAST

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

"""The gpu_benchmark fixture's object (bench.py): record() checks figures, keys never collide."""

import pytest

from .gateproject import FAST


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('record("delta", -3.5, "ms")', "value of 'delta' must be >= 0, got -3.5"),
        ('record("m", 5, None)', "unit of 'm' must be a non-empty string, got None"),
        ('record("m", 5, "")', "unit of 'm' must be a non-empty string"),
        ('record("m", float("nan"), "x")', "value of 'm' must be a finite number"),
        (
            'record("m", 10**400, "x")',
            "value of 'm' must be a finite number, got a whole number of 401 digits",
        ),
        ('from_samples([10**400], work=1, unit="calls")', "samples must be positive finite"),
        (
            'record("m", 5, "x", noise_class="modle")',
            "test_r.py::test_r: record('m', ..., noise_class='modle'): use one of auto, "
            "bandwidth, compute, model, launch-bound, memory, recorded, per-clock (in any case)",
        ),
        ('record("m", 5, "ms", higher_is_better="yes")', "higher_is_better must be True, False or None"),
    ],
)
def test_record_refuses_what_the_loader_would_refuse(project, call, message):
    project.makepyfile(test_r=f"def test_r(gpu_benchmark):\n    gpu_benchmark.{call}\n")
    result = project.runpytest(*FAST, "test_r.py", "--gpuperf-baseline=save")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*ValueError: {message}*"])
    assert not (project.path / "baselines" / "cpu.json").exists()
    # and the next run is not broken by anything this one did
    project.runpytest(*FAST, "test_b.py").assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'gpu_benchmark(lambda: spin(0.001), metric="peak")\n    gpu_benchmark.record("peak", 1, "GB")',
            "test_k.py::test_k::peak was already measured in this test and is now recorded again",
        ),
        (
            'gpu_benchmark.record("bs", 1, "samples")\n    gpu_benchmark.record("bs", 2, "samples")',
            "test_k.py::test_k::bs was already recorded in this test and is now recorded again",
        ),
        ('gpu_benchmark(lambda: spin(0.001), metric="m]")', "metric 'm]': use printable text"),
        ('gpu_benchmark.record("a::b", 1, "x")', "metric 'a::b': use printable text"),
        ('gpu_benchmark.record("\\n\\n# HEADING", 1, "x")', "metric '\\n\\n# HEADING': use printable"),
    ],
)
def test_key_collisions_are_errors_naming_both(project, body, message):
    project.makepyfile(test_k=f"from vclock import spin\n\ndef test_k(gpu_benchmark):\n    {body}\n")
    result = project.runpytest(*FAST, "test_k.py")
    result.assert_outcomes(failed=1)
    assert message in result.stdout.str()


NOISE_CLASS_CASES = """
import pytest

@pytest.mark.gpuperf(noise_class="MODEL")
def test_marker(gpu_benchmark):
    from vclock import spin
    assert gpu_benchmark(lambda: spin(0.001)).noise_class == "model"

def test_record(gpu_benchmark):
    assert gpu_benchmark.record("m", 5, "x", noise_class="MODEL").noise_class == "model"
    assert gpu_benchmark.record("n", 5, "x", noise_class=" Auto ").noise_class is None
"""


def test_noise_class_is_checked_alike_in_the_marker_and_in_record(project):
    """Both take settings.NOISE_CLASSES in any case, and a bad one names where it was
    given and the values allowed."""
    project.makepyfile(test_n=NOISE_CLASS_CASES)
    project.runpytest(*FAST, "test_n.py").assert_outcomes(passed=2)
    project.makepyfile(
        test_bad='import pytest\n\n@pytest.mark.gpuperf(noise_class="modle")\n'
        "def test_bad(gpu_benchmark):\n    pass\n"
    )
    result = project.runpytest(*FAST, "test_bad.py")
    result.stdout.fnmatch_lines(
        ["*test_bad.py::test_bad: @pytest.mark.gpuperf: marker: noise_class='modle': use one "
         "of auto, bandwidth, compute, model, launch-bound, memory, recorded, per-clock "
         "(in any case)*"]
    )  # fmt: skip


def test_the_settings_noise_classes_are_the_noise_models():
    from pytest_gpuperf.core.figures import CLASSES, KERNEL_TIME
    from pytest_gpuperf.core.settings import NOISE_CLASSES

    # every class a benchmark's figure can be in, but the kernel-time class: a declared
    # class is the wall time's, and a GPU kernel-time figure is always in its own
    assert ("auto", *(c for c in CLASSES if c != KERNEL_TIME)) == NOISE_CLASSES


TWO_MARKERS = """
import pytest

@pytest.mark.gpuperf(tolerance=0.05)
@pytest.mark.gpuperf(tolerance=0.10)
def test_two(gpu_benchmark):
    pass
"""

CLOSEST_MARKER = """
import pytest

pytestmark = pytest.mark.gpuperf(tolerance=0.2)

@pytest.mark.gpuperf(tolerance=0.07)
@pytest.mark.gpuperf(tolerance=0.07, max_time=1)
def test_agree(gpu_benchmark):
    from vclock import spin
    assert gpu_benchmark(lambda: spin(0.001)).config["tolerance"] == 0.07

class TestC:
    pytestmark = pytest.mark.gpuperf(tolerance=0.08)

    @pytest.mark.gpuperf(tolerance=0.06)
    def test_closest(self, gpu_benchmark):
        from vclock import spin
        assert gpu_benchmark(lambda: spin(0.001)).config["tolerance"] == 0.06

    def test_class(self, gpu_benchmark):
        from vclock import spin
        assert gpu_benchmark(lambda: spin(0.001)).config["tolerance"] == 0.08

def test_module(gpu_benchmark):
    from vclock import spin
    assert gpu_benchmark(lambda: spin(0.001)).config["tolerance"] == 0.2
"""


def test_two_markers_giving_one_setting_two_values_on_one_test_are_refused(project):
    """Issue 58: two gpuperf(tolerance=) markers on one function were resolved silently
    (the one nearer the `def` won). Now refused, naming both values; across levels the
    closest wins (function over class over module), as pytest's get_closest_marker."""
    project.makepyfile(test_m=TWO_MARKERS, test_c=CLOSEST_MARKER)
    result = project.runpytest(*FAST, "test_m.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_m.py::test_two: @pytest.mark.gpuperf: two markers on one test set tolerance "
         "(0.1 and 0.05): keep one*"]
    )  # fmt: skip
    project.runpytest(*FAST, "test_c.py").assert_outcomes(passed=4)

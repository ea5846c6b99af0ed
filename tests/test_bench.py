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

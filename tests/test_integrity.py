"""Baselines you can trust: each case of the integrity issue, as a user or an attacker
would meet it, on the CPU. Every case here failed before its fix."""


import pytest

from .gateproject import FAST

# 1 --------------------------------------------------- results of one device, another's file


# 2 ------------------------------------------------------------- record() validated at once


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


# 3 ------------------------------------------------------------------- gpuperf compare input


# one gate ------------------------------------------------------------------------------


# 4 ---------------------------------------------------------------------------------- xdist


# 5 ------------------------------------------------------------------------- key collisions


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


# 6 ------------------------------------------------------------- links, unknown keys, mode


# 7 -------------------------------------------------------------------------------- escaping


# 8 ----------------------------------------------------------------------- validation gaps


# 9 ------------------------------------------------------------ leftovers of a killed save


# 10 ----------------------------------------------------------------- conflicting settings


def test_conflicting_settings_are_one_usage_error_naming_the_sources(project):
    result = project.runpytest("--gpuperf-min-time=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*gpuperf: min_time=3 (command line) is above max_time=2 (the CPU default): the minimum sampling time is above the hard budget*"]
    )
    result = project.runpytest("--gpuperf-min-samples=100000000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*min_samples='100000000': must be at most 100,000 samples*"])


def test_a_contradictory_marker_is_a_collection_error(project):
    project.makepyfile(
        test_m="import pytest\n@pytest.mark.gpuperf(min_time=5, max_time=1)\ndef test_m(gpu_benchmark):\n    pass\n"
    )
    result = project.runpytest("test_m.py")
    result.stdout.fnmatch_lines(
        ["*test_m.py::test_m: @pytest.mark.gpuperf: marker: min_time=5 is above max_time=1*"]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_marker_against_the_command_line_fails_the_test_naming_both(project):
    project.makepyfile(
        test_m="import pytest\n@pytest.mark.gpuperf(max_time=1)\ndef test_m(gpu_benchmark):\n    pass\n"
    )
    result = project.runpytest("test_m.py", "--gpuperf-min-time=1.5")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_m.py::test_m: min_time=1.5 (command line) is above max_time=1 (test_m.py::test_m: @pytest.mark.gpuperf)*"]
    )


# 11 -------------------------------------------------------------------- unwritable outputs


# 12 ---------------------------------------------------------- interrupted and failed tests


# 13 --------------------------------------------------------------------- smaller settings


def test_a_bad_warn_only_ini_value_names_the_key_and_the_file(project):
    project.makeini("[pytest]\ngpuperf_warn_only = maybe\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_warn_only: *maybe*; use true or false*"])


def test_a_bad_ini_profile_is_reported_as_the_ini_key(project):
    project.makeini("[pytest]\ngpuperf_profile = h9000\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_profile: *h9000*"])
    assert "--gpu-profile:" not in result.stderr.str()


def test_an_empty_profile_is_a_usage_error(project):
    result = project.runpytest("--gpu-profile=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-profile is empty: name a GPU profile*"])



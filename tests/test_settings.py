"""Settings from marker, command line and ini (settings.py): bad or conflicting values."""

import pytest


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


def test_a_bad_warn_only_ini_value_names_the_key_and_the_file(project):
    project.makeini("[pytest]\ngpuperf_warn_only = maybe\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_warn_only: *maybe*; use true or false*"])


@pytest.mark.parametrize("ini", [False, True], ids=["no-ini-file", "ini-file"])
def test_a_bad_o_value_is_blamed_on_o_not_the_ini_file(project, ini):
    """`-o gpuperf_confirm=maybe` said `None: gpuperf_confirm: invalid truth value` with no
    ini file, and blamed the ini file when there was one."""
    if ini:
        project.makeini("[pytest]\ngpuperf_max_time = 1\n")
    cases = [
        (["-o", "gpuperf_confirm=maybe"], "gpuperf: -o gpuperf_confirm: *maybe*; use true or false"),
        (["-o", "gpuperf_warn_only=maybe"], "gpuperf: -o gpuperf_warn_only: *maybe*; use true or false"),
        (["-o", "gpuperf_baseline=sometimes"], "gpuperf: -o gpuperf_baseline='sometimes': use one of *"),
        (["-o", "gpuperf_false_alarm=often"], "gpuperf: -o gpuperf_false_alarm='often': expected a number*"),
        (["-o", "gpuperf_max_time=long"], "gpuperf: -o gpuperf_max_time: max_time='long': expected a number*"),
    ]  # fmt: skip
    for args, line in cases:
        result = project.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        result.stderr.fnmatch_lines([f"*{line}"])
        assert "None:" not in result.stderr.str() and "tox.ini" not in result.stderr.str()
    # from addopts too, and a setting's clash names -o against the ini file's value
    project.makeini("[pytest]\ngpuperf_max_time = 1\naddopts = -o gpuperf_min_time=3\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*min_time=3 (-o gpuperf_min_time) is above max_time=1 (*tox.ini)*"])


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


def test_a_bad_false_alarm_rate_is_a_usage_error(project):
    result = project.runpytest("--gpuperf-false-alarm=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpuperf-false-alarm='5': must be a fraction between 0 and 1*"])
    project.makeini("[pytest]\ngpuperf_false_alarm = often\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_false_alarm='often': expected a number*"])


def test_a_bad_bound_in_a_marker_is_a_collection_error(project):
    project.makepyfile(test_m="import pytest\n@pytest.mark.gpuperf(bound='gpu')\ndef test_m(gpu_benchmark):\n    pass\n")
    result = project.runpytest("test_m.py")
    result.stdout.fnmatch_lines(["*test_m.py::test_m: @pytest.mark.gpuperf: marker: bound='gpu': use one of auto, compute, memory*"])

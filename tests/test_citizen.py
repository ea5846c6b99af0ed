"""A good citizen: installing the plugin changes nothing for tests that do not use it.

Each test runs pytest in a subprocess, as a user's shell would: the plugin is loaded
through its pytest11 entry point, exactly as in any environment where it is installed.
"""

import pytest


@pytest.mark.parametrize("flag", ["--help", "--markers", "--fixtures"])
def test_pytest_informational_flags_work_with_the_plugin_installed(pytester, flag):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess(flag)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert "Traceback" not in result.stderr.str()
    if flag == "--help":
        # every plugin option's help text reaches the user, '%' signs and all
        result.stdout.fnmatch_lines(["*--gpuperf-false-alarm=RATE*", "*at least 99%*"])
    elif flag == "--markers":
        result.stdout.fnmatch_lines(["@pytest.mark.requires_vram*"])
    else:
        result.stdout.fnmatch_lines(["*gpu_benchmark*"])

"""pytest's hooks (plugin.py): installing the plugin changes nothing for tests that do not use it."""

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
        result.stdout.fnmatch_lines(["@pytest.mark.gpu_requires_vram*"])
    else:
        result.stdout.fnmatch_lines(["*gpu_benchmark*"])


def test_a_pytester_run_in_this_checkout_gives_no_rewrite_warning(pytester):
    # the editable install's pytest_gpuperf.egg-info lists the tests (MANIFEST.in), which made
    # pytest warn in every inner run that it cannot rewrite our `tests` package
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "PytestAssertRewriteWarning" not in result.stdout.str()


OWN_NAMES = """
import pytest
import torch


def pytest_configure(config):
    for name in ("dtype(value): this project's own dtype marker", "cpu_only: ours",
                 "requires_vram(size): ours", "requires_gpus(n): ours"):
        config.addinivalue_line("markers", name)


@pytest.fixture
def dtype(request):
    marker = request.node.get_closest_marker("dtype")
    return marker.args[0] if marker else torch.float32
"""


def test_a_projects_own_dtype_marker_fixture_and_requirement_markers_are_left_alone(pytester):
    """The plugin's markers and fixtures are prefixed (gpu_*): a project's own `dtype`
    marker and fixture, and markers named like the plugin's old ones, mean what the
    project says (issue #21: a collection error before)."""
    pytester.makeconftest(OWN_NAMES)
    pytester.makepyfile(
        test_own="""
        import pytest
        import torch

        @pytest.mark.dtype(torch.float16)
        def test_half(dtype):
            assert dtype is torch.float16

        def test_default(dtype):
            assert dtype is torch.float32

        @pytest.mark.cpu_only
        @pytest.mark.requires_vram(10**15)
        @pytest.mark.requires_gpus(64)
        def test_marked_but_not_ours():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    plain = pytester.runpytest("--strict-markers", "-p", "no:gpuperf", "-p", "no:randomly")
    plain.assert_outcomes(passed=3)


def test_every_fixture_of_the_plugin_is_named_gpu_or_gpuperf(pytester):
    """`cast_audit` was the one fixture without the plugin's prefix: it is `gpu_cast_audit`
    now, the old name kept only as a deprecated alias (the test below)."""
    result = pytester.runpytest("--fixtures", "-v", "-p", "no:cacheprovider")
    ours = [line.split()[0] for line in result.stdout.lines if "pytest_gpuperf" in line and " -- " in line]
    assert "gpu_cast_audit" in ours and "gpu_benchmark" in ours
    assert [n for n in ours if not n.startswith(("gpu_", "gpuperf_")) and n != "cast_audit"] == []


CASTS = """
import torch

def test_old_name(cast_audit):
    with cast_audit() as audit:
        torch.ones(4, dtype=torch.bfloat16).float()
    assert audit.count == 1

def test_new_name(gpu_cast_audit):
    with gpu_cast_audit() as audit:
        torch.ones(4, dtype=torch.bfloat16).float()
    assert audit.count == 1
"""


@pytest.mark.slow
def test_the_old_cast_audit_name_still_works_and_warns_naming_the_new_one(pytester):
    pytester.makepyfile(test_casts=CASTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "always")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*test_casts.py::test_old_name*",
        "*GpuperfDeprecationWarning: gpuperf: the cast_audit fixture is deprecated: use gpu_cast_audit*",
    ])  # fmt: skip
    assert result.stdout.str().count("cast_audit fixture is deprecated") == 1  # the old name only
    # a PytestDeprecationWarning: a project that turns those into errors learns it at once
    # (in a subprocess: a second in-process run would import torch's operator library twice)
    strict = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error::pytest.PytestDeprecationWarning")
    strict.assert_outcomes(passed=1, errors=1)

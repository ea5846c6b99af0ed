"""Options declared once (options.OPTIONS and settings.SETTINGS): pytest's command line, the
ini file and the `gpuperf` command are built from them (issue #22)."""

import contextlib
import io
import re
from pathlib import Path

import pytest

from pytest_gpuperf.cli.main import main
from pytest_gpuperf.core.settings import BY_NAME, FALSE_ALARM
from pytest_gpuperf.plugin import options

PACKAGE = Path(options.__file__).parent.parent
SOURCE_POINTER = re.compile(r"\b[a-z_]+\.py\b|\bverdict\.[a-z_]+|\bsee [a-z_]+\.[a-z_]+\b")


def gpuperf_help(pytester: pytest.Pytester) -> str:
    out = pytester.runpytest("--help").stdout.str()
    start = out.index("GPU performance regression testing (pytest-gpuperf)")
    return out[start : out.index("\n\n", start)]


def cli_help(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*args, "--help"])
    return out.getvalue()


def test_one_prefix_and_gpu_profile_as_documented(pytester):
    text = gpuperf_help(pytester)
    flags = set(re.findall(r"(?m)^\s+(--[a-z0-9-]+)", text))
    assert "--gpu-profile" in flags
    assert {f for f in flags if not f.startswith("--gpuperf-")} == {"--gpu-profile"}
    for new in ("--gpuperf-info", "--gpuperf-profiles", "--gpuperf-emulate"):
        assert new in flags
    assert "--gpuperf-allow-mismatch" in flags
    assert "--gpu-info" not in text  # the old spellings are hidden


def test_help_shows_the_declared_defaults(pytester):
    text = " ".join(gpuperf_help(pytester).split())
    assert f"(default: {BY_NAME['tolerance'].cuda!r}; ini: gpuperf_tolerance)" in text
    assert f"(default: {FALSE_ALARM!r}; ini: gpuperf_false_alarm)" in text
    assert "(default: 'auto'; ini: gpuperf_baseline)" in text
    assert "(default: 10.0 on CUDA, 2.0 on the CPU; ini: gpuperf_max_time)" in text
    ab = " ".join(cli_help("ab").split())
    assert f"before a regression (default: {BY_NAME['tolerance'].cuda!r})" in ab
    assert f"at least 99% (default: {FALSE_ALARM!r})" in ab
    compare = " ".join(cli_help("compare").split())
    assert "before a regression (default: each benchmark's own)" in compare


@pytest.mark.parametrize("which", ["pytest", "gpuperf", "compare", "ab", "report"])
def test_no_help_text_points_at_a_source_file(pytester, which):
    text = (
        gpuperf_help(pytester)
        if which == "pytest"
        else cli_help(*([] if which == "gpuperf" else [which]))
    )
    assert not SOURCE_POINTER.findall(text), SOURCE_POINTER.findall(text)


@pytest.mark.parametrize(
    "name", ["cli/main.py", "cli/ab.py", "plugin/__init__.py", "run/session.py"]
)
def test_defaults_are_not_written_again(name):
    """The tolerance and false-alarm defaults live in core/settings.py, once."""
    code = (PACKAGE / name).read_text()
    assert not re.search(r"(?<![\d.])0\.0[13](?!\d)", code)


def test_the_cli_spellings_come_from_the_table():
    clis = {o.cli for o in options.OPTIONS if o.cli}
    clis |= {options.setting_option(n).cli for n in ("tolerance", "memory_tolerance")}
    assert clis == {"--warn-only", "--false-alarm", "--tolerance", "--memory-tolerance"}
    for text in (cli_help("ab"), cli_help("compare")):
        for flag in ("--tolerance", "--false-alarm", "--warn-only"):
            assert flag in text


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("--gpu-allow-mismatch", "--gpuperf-allow-mismatch"),
        ("--gpu-emulate", "--gpuperf-emulate"),
    ],
)
def test_an_old_spelling_works_and_warns_naming_the_new_one(pytester, old, new):
    pytester.makepyfile("def test_it(gpu_emulation):\n    pass\n")
    args = [old] if old.endswith("mismatch") else [f"{old}=no-such-profile"]
    result = pytester.runpytest(*args)
    text = result.stdout.str() + result.stderr.str()
    assert f"{old} is deprecated: use {new}" in text
    if old == "--gpu-emulate":  # reached the option: the profile name is checked
        assert "--gpuperf-emulate: unknown GPU profile 'no-such-profile'" in text
    else:
        result.assert_outcomes(passed=1, warnings=1)
        result.stdout.fnmatch_lines(["*GpuperfDeprecationWarning: gpuperf: --gpu-allow-mismatch*"])


def test_an_old_info_spelling_prints_its_deprecation_on_stderr(pytester):
    result = pytester.runpytest("--gpu-profiles")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["h200 *"])
    assert "--gpu-profiles is deprecated: use --gpuperf-profiles" in result.stderr.str()


def test_the_new_spelling_wins_over_the_old():
    class Config:
        def __init__(self) -> None:
            self.option = type("O", (), {})()
            self.option.gpuperf_emulate = "l4"
            self.option.gpuperf_emulate__deprecated0 = "t4"

        def getoption(self, name, default=None):
            return getattr(self.option, name, default)

    config = Config()
    assert options.resolve_aliases(config) == ["--gpu-emulate is deprecated: use --gpuperf-emulate"]  # type: ignore[arg-type]
    assert config.option.gpuperf_emulate == "l4"


@pytest.mark.parametrize(
    "ini", ["gpuperf_baseline = bogus", "gpuperf_tolerance = lots", "gpuperf_max_time = soon"]
)
def test_help_works_with_a_bad_ini_value_and_a_run_stops_on_it(pytester, ini):
    """`pytest --help` exited 4 on a bad gpuperf ini value: the help that says how to mend
    it could not be read (a break-it pass)."""
    pytester.makeini(f"[pytest]\n{ini}\n")
    shown = pytester.runpytest("--help")
    assert shown.ret == pytest.ExitCode.OK
    shown.stdout.fnmatch_lines(["*--gpuperf-baseline=*"])
    stopped = pytester.runpytest("-p", "no:cacheprovider")
    assert stopped.ret == pytest.ExitCode.USAGE_ERROR
    stopped.stderr.fnmatch_lines(["ERROR: gpuperf: *"])


def test_a_false_alarm_rate_below_the_floor_is_a_usage_error(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--gpuperf-false-alarm=1e-12")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*must be at least 1e-09*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpuperf-paired=sometimes"], "*--gpuperf-paired: invalid choice: 'sometimes'*"),
        (["-o", "gpuperf_paired=sometimes"], "*gpuperf_paired='sometimes': use one of auto, off*"),
        (
            ["--gpuperf-paired-rounds=1"],
            "*--gpuperf-paired-rounds='1': must be a whole number from 2 to 50*",
        ),
        (
            ["--gpuperf-paired-rounds=six"],
            "*--gpuperf-paired-rounds='six': must be a whole number from 2 to 50*",
        ),
        (
            ["-o", "gpuperf_paired_rounds=51"],
            "*gpuperf_paired_rounds='51': must be a whole number from 2 to 50*",
        ),
        (
            ["--gpuperf-paired-budget=5"],
            "*--gpuperf-paired-budget='5': must be a number of seconds from 10 to 999999*",
        ),
        (
            ["-o", "gpuperf_paired_budget=ten minutes"],
            "*gpuperf_paired_budget='ten minutes': must be a number of seconds from 10*",
        ),
        (
            ["--gpuperf-paired-budget=nan"],
            "*--gpuperf-paired-budget='nan': must be a number of seconds from 10*",
        ),
    ],
)
def test_a_bad_paired_stage_option_is_a_usage_error_naming_it(pytester, args, message):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_paired_budget_is_read_from_the_command_line_or_the_ini_file():
    from pytest_gpuperf.run.options import Options

    opts = Options()
    assert opts.set_paired((6, "r"), (None, "b")) is None and opts.paired_budget is None
    assert opts.set_paired(("8", "r"), ("240", "b")) is None
    assert (opts.paired_rounds, opts.paired_budget) == (8, 240.0)
    assert opts.set_paired(("8", "r"), ("", "b")) is None and opts.paired_budget is None

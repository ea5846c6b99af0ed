"""Where an output may go (outputs/paths.py): never onto an input, a baseline or another output."""

import json
import os

import pytest

from pytest_gpuperf.baseline.store import MAX_BYTES as SNIFF_BYTES
from pytest_gpuperf.cli.main import main
from pytest_gpuperf.outputs.paths import first_clash, is_baseline_file, onto_collected, unwritable

from .gateproject import FAST
from .reportdata import VALID_BASELINE, VALID_RESULTS

RECORD = """
def test_r(gpu_benchmark):
    gpu_benchmark.record("lat", 5.0, "ms")
"""


def write_json(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path.read_bytes()


# ------------------------------------------------------------------ the pure check


def test_two_outputs_on_one_file_through_a_relative_path_and_a_symlink(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "sub", tmp_path / "link")
    msg = first_clash([("--gpuperf-json", "sub/../x.json"), ("--gpuperf-html", tmp_path / "x.json")])
    assert msg == (
        "--gpuperf-json sub/../x.json and --gpuperf-html "
        f"{tmp_path / 'x.json'} are the same file: give each output its own path"
    )
    assert "are the same file" in first_clash([("a", "sub/r.json"), ("b", "link/r.json")])
    assert first_clash([("a", "sub/r.json"), ("b", "sub/s.json")]) is None


def test_an_output_on_an_input_names_both(tmp_path):
    results = tmp_path / "r.json"
    write_json(results, VALID_RESULTS)
    os.link(results, tmp_path / "hard.json")  # a hard link is the same file too
    for out in (results, tmp_path / "hard.json"):
        msg = first_clash([("-o", out)], [("results file", results)])
        assert msg == f"-o {out} is results file {results}, which this run reads: write the output elsewhere"
    assert first_clash([("-o", tmp_path / "r.html")], [("results file", results)]) is None


def test_the_baseline_directorys_profile_files_are_refused_before_they_exist(tmp_path):
    bl = tmp_path / "bl"
    dirs = [("--gpuperf-baseline-dir", bl, {"cpu", "h100"})]
    for name in ("cpu.json", "cpu@a100-40gb.json", "h100.json"):
        msg = first_clash([("--gpuperf-json", bl / name)], (), dirs)
        profile = name.split("@")[0].removesuffix(".json")
        assert msg == (
            f"--gpuperf-json {bl / name} is the baseline file of profile {profile!r} in "
            f"--gpuperf-baseline-dir {bl}: write the output elsewhere"
        )
    for name in ("results.json", "cpu.html", "sub/cpu.json"):
        assert first_clash([("--gpuperf-json", bl / name)], (), dirs) is None


def test_a_baseline_file_is_refused_in_any_directory(tmp_path):
    copy = tmp_path / "elsewhere" / "kept.json"
    before = write_json(copy, VALID_BASELINE)
    assert is_baseline_file(copy)
    msg = first_clash([("-o", copy)])
    assert msg == (
        f"-o {copy} is a pytest-gpuperf baseline file (pytest-gpuperf/baseline): an output "
        "never overwrites a baseline; write it elsewhere"
    )
    assert copy.read_bytes() == before
    write_json(copy, VALID_RESULTS)  # a results file may be overwritten by the next run
    assert not is_baseline_file(copy) and first_clash([("-o", copy)]) is None
    os.mkfifo(tmp_path / "fifo")  # never opened: nothing hangs
    assert not is_baseline_file(tmp_path / "fifo") and not is_baseline_file(tmp_path / "none")


@pytest.mark.parametrize("cut", [40, 300, -1])
def test_a_damaged_baseline_is_still_refused(tmp_path, cut):
    """A truncated baseline is the one a user wants to recover: `gpuperf report -o` onto it
    wrote HTML over it (a break-it pass). Damaged, or larger than a usable one, it is refused."""
    good = json.dumps(VALID_BASELINE, indent=1).encode()
    path = tmp_path / "cpu.json"
    path.write_bytes(good[:cut] if cut > 0 else good + b" " * (SNIFF_BYTES + 1))
    before = path.read_bytes()
    assert is_baseline_file(path)
    assert "is a pytest-gpuperf baseline file" in first_clash([("-o", path)])
    assert path.read_bytes() == before
    path.write_text('{"baseline": "/src/pytest-gpuperf/baselines/cpu.json", "x": [')  # a results file, cut
    assert not is_baseline_file(path)


@pytest.mark.parametrize(
    ("name", "what"),
    [("tests/test_b.py", "a Python source file"), ("conftest.py", "a conftest"),
     ("pytest.ini", "a project configuration file"), ("pyproject.toml", "a project configuration file"),
     ("tox.ini", "a project configuration file"), ("setup.cfg", "a project configuration file")],
)
def test_source_and_configuration_files_are_never_outputs(tmp_path, monkeypatch, name, what):
    monkeypatch.chdir(tmp_path)
    msg = first_clash([("--gpuperf-json", name)])  # whether the file exists yet or not
    assert msg == (
        f"--gpuperf-json {name} is {what}: an output never overwrites a test module, a conftest "
        "or a configuration file (did the option lose its value?); write it elsewhere"
    )
    os.symlink(tmp_path / name.split("/")[-1], tmp_path / "out.json")  # a link to one, too
    assert what in first_clash([("-o", "out.json")])
    assert first_clash([("-o", "test_b.json")]) is None


def test_an_output_onto_a_collected_file_is_named_by_path_or_inode(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text(">>> 1\n1\n")
    os.link(data, tmp_path / "hard.txt")
    for out in (data, tmp_path / "hard.txt"):
        assert onto_collected([("--gpuperf-json", out)], [str(data)]) == (
            f"--gpuperf-json {out} is the collected test file {data}: an output never overwrites "
            "a test; write it elsewhere"
        )
    assert onto_collected([("--gpuperf-json", tmp_path / "r.json")], [str(data)]) is None


def test_unwritable_outputs_are_named(tmp_path):
    (tmp_path / "file").write_text("x")
    assert unwritable("--json", tmp_path / "file" / "ab.json", create_dirs=True) == (
        f"--json {tmp_path / 'file' / 'ab.json'}: {tmp_path / 'file'} is not a directory"
    )
    assert unwritable("--json", tmp_path, create_dirs=True) == f"--json {tmp_path}: is a directory; give a file path"
    missing = tmp_path / "no" / "summary.md"
    assert unwritable("GITHUB_STEP_SUMMARY", missing, create_dirs=False) == (
        f"GITHUB_STEP_SUMMARY {missing}: its directory {missing.parent} does not exist"
    )
    assert unwritable("--json", missing, create_dirs=True) is None
    assert unwritable("--json", tmp_path / "file", create_dirs=False) is None


# ------------------------------------------------------------------ pytest, at configure time


@pytest.fixture
def recorder(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makepyfile(test_x=RECORD)
    (pytester.path / "bl").mkdir()
    return pytester


def test_a_results_json_onto_the_baseline_being_saved_is_refused_before_any_test(recorder):
    r = recorder.runpytest("--gpuperf-baseline=save", "--gpuperf-baseline-dir=bl", "--gpuperf-json=bl/cpu.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: gpuperf: --gpuperf-json bl/cpu.json is the baseline file of profile 'cpu' in --gpuperf-baseline-dir */bl: write the output elsewhere"])
    assert "test_x.py" not in r.stdout.str() and not (recorder.path / "bl" / "cpu.json").exists()
    # saved properly, the baseline is then protected by its content too, wherever it is
    assert recorder.runpytest("--gpuperf-baseline=save", "--gpuperf-baseline-dir=bl").ret == 0
    before = (recorder.path / "bl" / "cpu.json").read_bytes()
    r = recorder.runpytest("--gpuperf-baseline=off", "--gpuperf-html=bl/cpu.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--gpuperf-html bl/cpu.json is a pytest-gpuperf baseline file*"])
    assert (recorder.path / "bl" / "cpu.json").read_bytes() == before
    assert recorder.runpytest("--gpuperf-baseline-dir=bl").ret == 0  # still a usable baseline


@pytest.mark.parametrize("other", ["--gpuperf-html", "--benchmark-json"])
def test_two_outputs_on_one_path_are_refused(recorder, other):
    r = recorder.runpytest("--gpuperf-json=out.x", f"{other}={recorder.path / 'out.x'}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: gpuperf: --gpuperf-json out.x and {other} *out.x are the same file: give each output its own path"])
    assert not (recorder.path / "out.x").exists()


def test_an_output_onto_the_projects_configuration_is_refused(recorder):
    recorder.makepyprojecttoml("[tool.pytest.ini_options]\n")
    before = (recorder.path / "pyproject.toml").read_bytes()
    r = recorder.runpytest("--gpuperf-html=pyproject.toml")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: gpuperf: --gpuperf-html pyproject.toml is the ini file */pyproject.toml, which this run reads*"])
    assert (recorder.path / "pyproject.toml").read_bytes() == before


@pytest.mark.parametrize("flag", ["--gpuperf-json", "--gpuperf-html", "--gpuperf-markdown"])
def test_an_option_whose_value_was_forgotten_never_overwrites_the_test_module(recorder, flag):
    recorder.makeconftest("")
    kept = {p: p.read_bytes() for p in (recorder.path / "test_x.py", recorder.path / "conftest.py")}
    for target in ("test_x.py", "conftest.py"):  # `pytest --gpuperf-json test_x.py`
        r = recorder.runpytest(flag, target)
        assert r.ret == pytest.ExitCode.USAGE_ERROR
        r.stderr.fnmatch_lines([f"ERROR: gpuperf: {flag} {target} is a *: an output never overwrites a test module*"])
        assert "passed" not in r.stdout.str()
    assert {p: p.read_bytes() for p in kept} == kept


def test_an_output_onto_a_collected_non_python_test_file_is_refused(recorder):
    doc = recorder.path / "doc.txt"
    doc.write_text(">>> 1 + 1\n2\n")
    r = recorder.runpytest("--doctest-glob=*.txt", "--gpuperf-json", "doc.txt")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: gpuperf: --gpuperf-json doc.txt is the collected test file {doc}: *"])
    assert doc.read_text() == ">>> 1 + 1\n2\n"
    (recorder.path / "cases.json").write_text("{}")  # a path the command line names: refused at configure time
    r = recorder.runpytest("--gpuperf-json=cases.json", "cases.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: gpuperf: --gpuperf-json cases.json is the test path */cases.json, which this run reads*"])
    assert (recorder.path / "cases.json").read_text() == "{}"


@pytest.mark.slow
def test_under_xdist_the_controller_refuses_an_output_onto_a_collected_file(recorder):
    doc = recorder.path / "doc.txt"
    doc.write_text(">>> 1 + 1\n2\n")
    r = recorder.runpytest_subprocess("-n", "2", "--doctest-glob=*.txt", "--gpuperf-json", "doc.txt")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in r.stdout.str() + r.stderr.str()
    r.stdout.fnmatch_lines([f"*gpuperf: --gpuperf-json doc.txt is the collected test file {doc}: *"])
    assert doc.read_text() == ">>> 1 + 1\n2\n"


def test_distinct_outputs_are_written(recorder):
    r = recorder.runpytest("--gpuperf-json=bl/results.json", "--gpuperf-html=report.html")
    assert r.ret == 0
    assert (recorder.path / "bl" / "results.json").is_file() and (recorder.path / "report.html").is_file()


# ------------------------------------------------------------------ gpuperf report


@pytest.mark.parametrize("case", ["onto its input", "onto a baseline", "into the baseline dir"])
def test_report_never_overwrites_an_input_or_a_baseline(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "r.json"
    kept = {results: write_json(results, VALID_RESULTS)}
    bl = tmp_path / "bl"
    bl.mkdir()
    args = ["report", "r.json"]
    if case == "onto its input":
        args += ["-o", "r.json"]
        expected = "-o r.json is results file r.json, which this run reads"
    elif case == "onto a baseline":
        kept[bl / "cpu.json"] = write_json(bl / "cpu.json", VALID_BASELINE)
        args += ["-o", "bl/cpu.json"]
        expected = "-o bl/cpu.json is a pytest-gpuperf baseline file"
    else:
        args += ["-o", "bl/cpu.json", "--baseline-dir", "bl"]
        expected = f"-o bl/cpu.json is the baseline file of profile 'cpu' in --baseline-dir {bl}"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuperf report: {expected}") and err.endswith("; nothing written\n")
    assert len(err.splitlines()) == 1
    assert {p: p.read_bytes() for p in kept} == kept
    assert not (bl / "cpu.json").exists() or bl / "cpu.json" in kept
    assert main(["report", "r.json", "-o", "r.html", "--baseline-dir", "bl"]) == 0  # elsewhere: written


@pytest.mark.parametrize("target", ["tests/test_b.py", "pytest.ini"])
def test_report_never_overwrites_a_test_module_or_the_configuration(tmp_path, monkeypatch, capsys, target):
    monkeypatch.chdir(tmp_path)
    write_json(tmp_path / "r.json", VALID_RESULTS)
    (tmp_path / "tests").mkdir()
    (tmp_path / target).write_text("def test_b():\n    pass\n")
    assert main(["report", "r.json", "-o", target]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuperf report: -o {target} is a ") and len(err.splitlines()) == 1
    assert (tmp_path / target).read_text() == "def test_b():\n    pass\n"


def test_an_unwritable_json_path_is_a_usage_error(project):
    (project.path / "out").mkdir()
    result = project.runpytest(*FAST, "--gpuperf-json=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpuperf-json=out: is a directory; give a file path*"])


def test_a_step_summary_that_cannot_be_written_keeps_the_results(project, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "no" / "such" / "dir" / "s.md"))
    result = project.runpytest(*FAST)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    result.stdout.fnmatch_lines(
        ["*= gpuperf results =*", "test_b.py::test_spin *tokens/s*", "gpuperf: NOT WRITTEN: GITHUB_STEP_SUMMARY *s.md: No such file or directory"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED

"""GitHub Actions annotations (outputs/github.py): a regression shows as an ::error at the
failing test's file and line, escaped as workflow commands must be."""

import pytest

from pytest_gpuperf.outputs.github import error_annotations, warning_annotation

from .gateproject import FAST, saved


def test_each_gate_line_is_an_error_at_its_test():
    lines = [
        "PERFORMANCE REGRESSION t/x.py::test_a[b8]::tokens throughput: 10% worse, a:b, 5%",
        "PERFORMANCE REGRESSION class-wide: compute-bound benchmarks 8% slower",
    ]
    got = error_annotations(lines, {"t/x.py::test_a[b8]": ("t/x.py", 11)})
    assert got[0] == (
        "::error file=t/x.py,line=12,title=gpuperf%3A performance regression::"
        "PERFORMANCE REGRESSION t/x.py::test_a[b8]::tokens throughput: 10%25 worse, a:b, 5%25"
    )
    assert got[1].startswith("::error title=gpuperf%3A performance regression::PERFORMANCE")
    # a test this process did not collect (pytest-xdist's controller): its file, no line
    (far,) = error_annotations(lines[:1], {})
    assert far.startswith("::error file=t/x.py,title=")


def test_a_warning_is_escaped_as_an_error_is():
    got = warning_annotation("gpuperf: no baseline", "no baseline at /w/50%/b\n::error::x, y")
    assert got == "::warning title=gpuperf%3A no baseline::no baseline at /w/50%25/b%0A::error::x, y"
    assert len(got.splitlines()) == 1  # a newline in a path cannot start another command


def test_the_missing_baseline_warning_names_a_path_with_a_percent_sign_escaped(project, monkeypatch):
    monkeypatch.setenv("CI", "true")
    (project.path / "perf%0Abl").mkdir()
    r = project.runpytest(*FAST, "--gpuperf-baseline-dir=perf%0Abl", "--gpuperf-baseline=auto")
    r.stdout.fnmatch_lines([f"::warning title=gpuperf%3A no baseline::no baseline at {project.path}/perf%250Abl/cpu.json *"])


@pytest.mark.slow
def test_a_regression_is_annotated_on_github_actions_only(project, monkeypatch):
    saved(project, times=3)
    monkeypatch.setenv("SLOW", "1")
    r = project.runpytest(*FAST)
    assert r.ret == 1 and "::error" not in r.stdout.str()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    r = project.runpytest(*FAST)
    assert r.ret == 1
    r.stdout.fnmatch_lines(["::error file=test_b.py,line=*,title=gpuperf%3A performance "
                            "regression::PERFORMANCE REGRESSION test_b.py::test_spin *"])  # fmt: skip

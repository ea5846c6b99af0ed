"""GitHub Actions annotations (outputs/github.py): a regression shows as an ::error at the
failing test's file and line, escaped as workflow commands must be."""

import pytest

from pytest_gpuperf.outputs.github import error_annotations

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

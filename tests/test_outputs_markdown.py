"""The verdicts as markdown (outputs/markdown.py): the step summary, and the same text fitted
to a GitHub pull-request comment (`--gpuperf-markdown`, `gpuperf ab --markdown`)."""

import json
import textwrap

from pytest_gpuperf.cli.ab import markdown as ab_markdown
from pytest_gpuperf.outputs.markdown import COMMENT_LIMIT, fit_markdown
from pytest_gpuperf.outputs.text import VERDICT_HEADER

from . import vclock
from .gateproject import FAST, saved

TOP = ["## gpuperf: test GPU", "profile **h200**, baseline baselines/h200.json", ""]


def _row(i: int, status: str = "UNCHANGED") -> list[str]:
    return [status, f"tests/test_x.py::test_y[{i}]", "throughput", "1 TFLOP/s", "+0.1%", "-", ""]


def test_a_table_that_fits_is_left_whole_and_the_same_as_without_a_limit():
    rows = [_row(0, "REGRESSED"), _row(1)]
    whole = fit_markdown(TOP, VERDICT_HEADER, rows, ["pytest 'tests/test_x.py::test_y[0]'"])
    assert fit_markdown(TOP, VERDICT_HEADER, rows, ["pytest 'tests/test_x.py::test_y[0]'"],
                        COMMENT_LIMIT) == whole  # fmt: skip
    assert whole.startswith("## gpuperf: test GPU\n") and "not shown" not in whole
    assert "```sh\npytest 'tests/test_x.py::test_y[0]'\n```" in whole


def test_a_table_too_long_for_a_comment_keeps_the_heading_the_worst_rows_and_the_commands():
    rows = [_row(0, "REGRESSED"), *(_row(i) for i in range(1, 5000))]
    commands = ["pytest 'tests/test_x.py::test_y[0]' --gpu-profile=h200"]
    assert len(fit_markdown(TOP, VERDICT_HEADER, rows, commands)) > COMMENT_LIMIT
    text = fit_markdown(TOP, VERDICT_HEADER, rows, commands, COMMENT_LIMIT)
    assert len(text) <= COMMENT_LIMIT
    assert text.startswith("\n".join(TOP))
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[1].startswith("| REGRESSED | tests/test\\_x.py::test\\_y\\[0\\]")  # worst first
    shown = len(table) - 1
    assert 100 < shown < 5000
    assert f"**{5000 - shown} of 5000 rows not shown** (a comment holds at most 65,536 characters)" in text
    assert text.rstrip().endswith(f"{commands[0]}\n```")  # the reproduce block is kept
    assert COMMENT_LIMIT - len(text) < len(table[-1])  # one more row would not have fitted


def test_too_many_commands_for_a_comment_are_cut_with_a_note():
    commands = [f"pytest 'tests/test_x.py::test_y[{i}]' --gpu-profile=h200" for i in range(3000)]
    rows = [_row(i, "REGRESSED") for i in range(3000)]
    text = fit_markdown(TOP, VERDICT_HEADER, rows, commands, COMMENT_LIMIT)
    assert len(text) <= COMMENT_LIMIT and text.startswith("\n".join(TOP))
    assert "more command(s) not shown)" in text and text.count("```") == 2  # the block closed
    assert "rows not shown" in text


def test_a_heading_longer_than_the_limit_is_cut_saying_so():
    text = fit_markdown(["## " + "x" * 500], VERDICT_HEADER, [_row(0)], [], 200)
    assert len(text) <= 200 and text.endswith("(cut: a comment holds at most 200 characters)")


def test_the_ab_markdown_names_the_command_that_re_measures_a_regression():
    report = {
        "head": "HEAD (abc) + uncommitted changes", "base": "origin/main (0123456789ab)",
        "rounds": 5, "wall_s": 12.0,
        "rows": [_row(0, "REGRESSED"), *(_row(i) for i in range(1, 3000))],
        "reproduce": ["gpuperf ab --base 0123456789ab --rounds 5 -- 'tests/test_x.py::test_y[0]'"],
    }  # fmt: skip
    text = ab_markdown(report, COMMENT_LIMIT)
    assert text.startswith("## gpuperf A/B: HEAD \\(abc\\) + uncommitted changes against origin/main")
    assert len(text) <= COMMENT_LIMIT and "rows not shown" in text
    assert "```sh\ngpuperf ab --base 0123456789ab --rounds 5 -- 'tests/test_x.py::test_y[0]'\n```" in text
    assert "rows not shown" not in ab_markdown(report)  # the step summary: whole


# ------------------------------------------------------------------- --gpuperf-markdown


def test_gpuperf_markdown_writes_a_comment_ready_table_worst_first_with_the_reproduce_line(
    project, monkeypatch
):
    saved(project)
    monkeypatch.setenv("SLOW", "0.5")
    result = project.runpytest(*FAST, "--gpuperf-markdown=out/verdicts.md")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["gpuperf: wrote out/verdicts.md"])
    text = (project.path / "out" / "verdicts.md").read_text()
    assert text.startswith("## gpuperf: cpu:") and len(text) <= COMMENT_LIMIT
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| verdict | benchmark |")
    assert rows[1].startswith("| REGRESSED | test\\_b.py::test\\_spin | throughput |")
    assert (
        "```sh\npytest test_b.py::test_spin --gpu-profile=cpu --gpuperf-baseline=compare "
        "--gpuperf-baseline-dir=baselines\n```"
    ) in text
    assert "\x1b" not in text and "-v shows" not in text  # nothing meant for a terminal


def test_gpuperf_markdown_on_a_baseline_or_a_directory_is_a_usage_error(project):
    saved(project, times=1)
    on_base = project.runpytest(*FAST, "--gpuperf-markdown=baselines/cpu.json")
    assert on_base.ret == 4  # a usage error, before any test runs
    on_base.stderr.fnmatch_lines(["*--gpuperf-markdown baselines/cpu.json is the baseline file of profile 'cpu'*"])
    (project.path / "out").mkdir()
    on_dir = project.runpytest(*FAST, "--gpuperf-markdown=out")
    assert on_dir.ret == 4
    on_dir.stderr.fnmatch_lines(["*--gpuperf-markdown=out: is a directory; give a file path*"])


def test_the_confirmation_is_not_given_gpuperf_markdown(project, monkeypatch, tmp_path):
    """The fresh process that re-measures a suspected regression writes none of the run's
    outputs: it would write the comment of a run of one test, baselines off."""
    project.makeconftest(vclock.CONFTEST + textwrap.dedent("""
        import json, os

        def pytest_configure(config):
            if os.environ.get("PYTEST_GPUPERF_CONFIRMATION"):
                with open(os.environ["SEEN"], "w") as fh:
                    json.dump({"markdown": config.getoption("gpuperf_markdown")}, fh)
        """))  # fmt: skip
    saved(project)
    monkeypatch.setenv("SEEN", str(tmp_path / "seen.json"))
    monkeypatch.setenv("PYTEST_ADDOPTS", "--gpuperf-markdown=env.md")
    monkeypatch.setenv("SLOW", "0.5")
    result = project.runpytest(*FAST, "-k", "test_spin", "--gpuperf-markdown", "v.md")
    result.stdout.fnmatch_lines(["REGRESSED *test_b.py::test_spin *confirmed in a fresh process*"])
    assert json.loads((tmp_path / "seen.json").read_text()) == {"markdown": None}
    assert "REGRESSED" in (project.path / "v.md").read_text()

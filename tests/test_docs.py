"""The README is one screen that works, and the documentation's links lead somewhere."""

import re
from pathlib import Path

from .inputs import need

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_the_readme_is_one_screen_of_short_lines():
    lines = README.splitlines()
    assert len(lines) <= 100, f"README.md has {len(lines)} lines: the reference belongs in docs/"
    long = [(i + 1, len(line)) for i, line in enumerate(lines) if len(line) > 110]
    assert not long, f"README.md lines over 110 characters (line, length): {long}"


def test_the_readme_commands_are_what_ci_runs():
    """.ci/run runs exactly the README's install, main job and test commands."""
    need((ROOT / ".ci" / "run").is_file(), ".ci/run (a git checkout; the sdist has none)")
    commands = [line.split("#")[0].strip() for line in _blocks("bash")[0].splitlines()]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands == [
        'python -m pip install "torch==2.13.0" -e ".[dev]"',
        "pytest benchmarks",
        "pytest tests -n auto",
    ]
    assert 'python -m pip install "torch==2.13.0" -e ".[dev]"' in ci
    assert "run_pytest pytest benchmarks\n" in ci
    assert "run_pytest pytest tests -n auto\n" in ci


def test_the_readme_example_runs_and_reports_throughput(pytester):
    """The example benchmark as printed in the README, run as a user would (no baseline:
    its timing is the machine's, so only the flow is asserted, not a verdict)."""
    (example,) = [b for b in _blocks("python") if "def test_matmul" in b]
    pytester.makepyfile(test_example=example)
    result = pytester.runpytest(
        "test_example.py", "--gpuperf-baseline=off", "--gpuperf-max-time=0.2",
        "--gpuperf-min-time=0.02", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_example.py::test_matmul*TFLOP/s*"])


def _links(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    return [(path.name, m) for m in re.findall(r"\]\(([^)\s]+)\)", text)]


def test_every_relative_link_in_the_documentation_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for name, target in _links(page):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            file = target.split("#")[0]
            if not (page.parent / file).exists():
                broken.append(f"{name}: {target}")
    assert not broken, f"links to nothing: {broken}"


def _prose(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_shows_how_to_add_the_plugin_to_ones_own_project():
    """Issue #32: the README showed only a clone with `-e .`. Now a wheel, a local path and a
    git URL (a placeholder host: the project publishes none), and what the extras add, with
    the detail in docs/install.md."""
    (block,) = [b for b in _blocks("bash") if "git+" in b]
    assert ".whl" in block and "pip install -e ../pytest-gpuperf" in block
    assert "git+https://<your-git-host>/pytest-gpuperf.git" in block
    text = _prose(README)
    assert "`[report]` adds the HTML report (matplotlib, jinja2)" in text
    assert "`[suite]` also the workloads (transformers, peft, bitsandbytes)" in text
    install = _prose((ROOT / "docs" / "install.md").read_text())
    for way in ("a wheel", "a local path", "a git URL", "[project.optional-dependencies]"):
        assert way in install, way


def test_no_page_invents_a_git_host_for_the_project():
    """The project has no public repository URL: a git URL in the docs, the README or
    pyproject.toml uses the placeholder host (and pyproject has no [project.urls])."""
    pages = [ROOT / "README.md", ROOT / "pyproject.toml", *sorted((ROOT / "docs").glob("*.md"))]
    hosts = {m for p in pages for m in re.findall(r"git\+\w+://([^/\s\"'`]+)", p.read_text())}
    assert hosts == {"<your-git-host>"}
    assert "\n[project.urls]" not in (ROOT / "pyproject.toml").read_text()


def test_the_readme_says_why_cpu_timings_never_fail_this_repositorys_ci():
    """'CPU timings never fail a run there', then an example on the CPU that exits 1: the
    README says which is which, and the first half stays true (no CPU baseline committed)."""
    text = _prose(README)
    assert "This repository's CI commits no CPU baseline, so its CPU timings never fail it" in text
    assert "a CPU baseline you save yourself does gate" in text
    assert "CPU timings never fail a run there" not in text
    assert not sorted((ROOT / "baselines").glob("cpu*.json"))


def test_every_docs_page_the_package_names_is_there():
    """A docstring says why in a few lines and names the page of docs/ with the evidence
    (docs/evidence/paired-stage-notes.md for the paired stage's): each page it names exists."""
    named: set[str] = set()
    for path in (ROOT / "pytest_gpuperf").rglob("*.py"):
        named |= set(re.findall(r"\bdocs/[\w./-]*\w", path.read_text(encoding="utf-8")))
    assert "docs/evidence/paired-stage-notes.md" in named
    assert sorted(n for n in named if not (ROOT / n).exists()) == []


def test_gating_md_lists_every_rule_a_trail_can_name():
    """`-v` prints each verdict's rules by name: the docs list every one of them."""
    from pytest_gpuperf.core.verdict import Rule

    text = (Path(__file__).resolve().parent.parent / "docs" / "gating.md").read_text()
    assert [r.value for r in Rule if f"| {r.value} |" not in text] == []


def test_performance_md_stays_a_summary():
    """docs/performance.md is what a reader takes in at once (at most 250 lines); dated notes
    go under docs/evidence/."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "performance.md").read_text()
    assert len(text.splitlines()) <= 250


def test_the_docs_price_the_paired_stage_at_its_own_process_pairs():
    """baselines.md and gating.md say what a test's paired rounds cost and which tests the
    default budget never re-measures: from the stage's own pairs (paired/looks.PAIRS) and
    plan (plan.first_need), not a count of pairs the stage no longer uses."""
    from pytest_gpuperf.paired.looks import PAIRS
    from pytest_gpuperf.paired.plan import MIN_PER_PAIR, START_GUESS_S

    docs = ROOT / "docs"
    baselines, gating = (docs / "baselines.md").read_text(), (docs / "gating.md").read_text()
    said = f"({PAIRS} pairs x (a {START_GUESS_S:.0f} s start + {MIN_PER_PAIR} rounds"
    assert said in re.sub(r"\s+", " ", baselines)
    # a side's round fits a large budget B while PAIRS x MIN_PER_PAIR rounds x 2 builds fit
    share = {8: "an eighth", 10: "a tenth", 12: "a twelfth", 16: "a sixteenth"}[
        PAIRS * MIN_PER_PAIR * 2]  # fmt: skip
    for text in (baselines, gating):
        found = re.findall(r"round costs more than about (an? \w+) of it", text)
        assert found and set(found) == {share}, found

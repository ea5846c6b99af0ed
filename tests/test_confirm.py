"""The fresh process (confirm.py) measures the run's code in the run's state and writes
nothing of the run's: real confirmations of pytester projects on the virtual clock."""

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from . import vclock
from .gateproject import FAST, saved

INI = """
[pytest]
addopts = --benchmark-json=bj.json --benchmark-autosave --gpuperf-html=r.html --junitxml=j.xml
log_file = pytest.log
log_file_level = INFO
"""
# every output option pytest-benchmark and the plugin have, through PYTEST_ADDOPTS too
ENV_ADDOPTS = (
    "--gpuperf-json r.json --benchmark-save=named --benchmark-save-data "
    "--benchmark-histogram=hist/h --benchmark-cprofile=tottime --benchmark-cprofile-dump=prof/p"
)
LOGGING = """
import logging, os

import pytest


@pytest.fixture(autouse=True)
def says_where():
    where = "FRESH" if os.environ.get("PYTEST_GPUPERF_CONFIRMATION") else "RUN"
    logging.getLogger("where").info("measured in the %s process", where)
"""


def _files(root: Path) -> set[str]:
    """The project's files, a pytest-benchmark save by its directory alone (its name holds
    the date)."""
    out = set()
    for p in root.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts and p.name != vclock.COUNTER:
            rel = p.relative_to(root)
            out.add(str(rel.parent / "<save>") if rel.parts[0] == ".benchmarks" else str(rel))
    return out


@pytest.mark.slow
def test_a_confirmation_writes_none_of_the_runs_outputs(project, monkeypatch):
    """`addopts = --benchmark-json=bj.json` made the confirmation's fresh process write
    bj.json (1 benchmark, baselines off, no verdicts), and the run then skipped its own
    write: the run's results and verdicts were gone; `--benchmark-autosave` left a second
    run in .benchmarks/, `--gpuperf-html` was the fresh process's page until the run
    rewrote it, the ini file's log_file was written by both."""
    pytest.importorskip("pytest_benchmark")
    project.makeconftest(vclock.CONFTEST + LOGGING)
    saved(project)
    project.makeini(INI)
    before = _files(project.path)
    monkeypatch.setenv("PYTEST_ADDOPTS", ENV_ADDOPTS)
    monkeypatch.setenv("SLOW", "0.5")
    baseline = (project.path / "baselines" / "cpu.json").read_bytes()

    alone = project.runpytest(*FAST, "-o", "gpuperf_confirm=false")  # what the run alone writes
    alone.assert_outcomes(passed=2, failed=1)
    written_alone = _files(project.path) - before
    for path in written_alone:
        if not path.endswith("<save>"):
            (project.path / path).unlink()
    for save in (project.path / ".benchmarks").rglob("*.json"):
        save.unlink()

    result = project.runpytest(*FAST)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["REGRESSED *test_b.py::test_spin *confirmed in a fresh process*"])
    assert _files(project.path) - before == written_alone  # the same files, no other
    assert written_alone >= {"bj.json", "r.json", "r.html", "j.xml", "pytest.log"}
    saves = list((project.path / ".benchmarks").rglob("*.json"))
    assert len(saves) == 1  # one run saved in pytest-benchmark's storage, not two
    tests = {"test_b.py::test_spin", "test_b.py::test_other"}
    for data in (
        json.loads((project.path / "bj.json").read_text())["gpuperf"],
        json.loads((project.path / "r.json").read_text()),
        json.loads(saves[0].read_text())["gpuperf"],
    ):
        assert data["baseline_mode"] == "auto"  # the fresh process's are "off"
        assert {r["nodeid"] for r in data["results"]} == tests
        spin = next(r for r in data["results"] if r["nodeid"] == "test_b.py::test_spin")
        assert spin["verdicts"]["throughput"]["confirmed"] is True
    bench = json.loads((project.path / "bj.json").read_text())["benchmarks"]
    assert sorted(b["name"] for b in bench) == ["test_other", "test_spin"]
    html = (project.path / "r.html").read_text()
    assert "test_other" in html and "confirmed in a fresh process" in html
    junit = (project.path / "j.xml").read_text()
    assert 'name="test_other"' in junit and "PERFORMANCE REGRESSION" in junit
    log = (project.path / "pytest.log").read_text()
    assert "measured in the RUN process" in log and "FRESH" not in log
    assert (project.path / "baselines" / "cpu.json").read_bytes() == baseline


def test_the_fresh_process_is_given_no_addopts_of_its_own(project, monkeypatch, tmp_path):
    """What the fresh process reads of the ini file's addopts and PYTEST_ADDOPTS is what
    its command line passes on (a user's own options kept), never the outputs."""
    project.makeconftest(
        vclock.CONFTEST
        + textwrap.dedent(
            """
        import json, os

        def pytest_addoption(parser):
            parser.addoption("--label", default="default")
            parser.addoption("--size", default="default")

        def pytest_configure(config):
            if os.environ.get("PYTEST_GPUPERF_CONFIRMATION"):
                seen = {"label": config.getoption("label"), "size": config.getoption("size"),
                        "html": config.getoption("gpuperf_html"), "json": config.getoption("gpuperf_json"),
                        "addopts": os.environ.get("PYTEST_ADDOPTS")}
                with open(os.environ["SEEN"], "w") as fh:
                    json.dump(seen, fh)
        """
        )
    )
    saved(project)
    project.makeini("[pytest]\naddopts = --label big --gpuperf-html=r.html\n")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--size=70b --gpuperf-json=r.json")
    monkeypatch.setenv("SEEN", str(tmp_path / "seen.json"))
    monkeypatch.setenv("SLOW", "0.5")
    result = project.runpytest(*FAST, "-k", "test_spin")
    result.stdout.fnmatch_lines(["REGRESSED *test_b.py::test_spin *confirmed in a fresh process*"])
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["label"] == "big" and seen["size"] == "70b" and seen["addopts"] is None
    assert seen["html"] is None and seen["json"] != "r.json"
    assert os.path.dirname(seen["json"]) != str(project.path)


MEASURED = """
import os
from pathlib import Path

import mypkg
from vclock import spin


def test_m(gpu_benchmark):
    if os.environ.get("PYTEST_GPUPERF_CONFIRMATION"):
        Path(os.environ["WHERE"]).write_text(mypkg.WHERE)
    slow = float(os.environ.get("SLOW", "0"))
    gpu_benchmark(lambda: spin(0.002 * (1 + slow)), work=64, unit="tokens")
"""


LOADS_THE_LOCAL_COPY = """
import importlib.util, os, sys
if os.environ.get("PYTEST_GPUPERF_CONFIRMATION"):
    spec = importlib.util.spec_from_file_location(
        "mypkg", os.path.join(os.getcwd(), "mypkg", "__init__.py"))
    sys.modules["mypkg"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["mypkg"])
"""


def _installed_and_local(pytester, monkeypatch, conftest_extra="", name="mypkg"):
    """A project whose package `name` (`ns.mypkg`: in a namespace package) is in the
    working directory (a source tree) and in an installed copy on sys.path (as PYTHONPATH
    or site-packages put it), its tests in tests/ (no conftest at the root puts the root on
    sys.path)."""
    monkeypatch.delenv("SLOW", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    where = name.replace(".", "/")
    pytester.makepyfile(**{
        f"{where}/__init__": "WHERE = 'local source tree'\n",
        f"site/{where}/__init__": "WHERE = 'installed copy'\n",
        "tests/vclock": Path(vclock.__file__).read_text(),
        "tests/conftest": vclock.CONFTEST + conftest_extra,
        "tests/test_m": MEASURED.replace("import mypkg", f"import {name} as mypkg"),
    })  # fmt: skip
    monkeypatch.syspath_prepend(str(pytester.path / "site"))
    for _ in range(2):
        pytester.runpytest(*FAST, "tests", "--gpuperf-baseline=save").assert_outcomes(passed=1)
    monkeypatch.setenv("WHERE", str(pytester.path / "where.txt"))
    monkeypatch.setenv("SLOW", "0.5")


def test_the_fresh_process_imports_what_the_run_imported(pytester, monkeypatch):
    """The fresh process was started as `python -m pytest`, which puts the working
    directory first on sys.path: a run of an installed copy had its confirmation measure
    the local source tree."""
    _installed_and_local(pytester, monkeypatch)
    result = pytester.runpytest(*FAST, "tests")
    result.stdout.fnmatch_lines(["REGRESSED *tests/test_m.py::test_m *confirmed in a fresh process*"])
    assert (pytester.path / "where.txt").read_text() == "installed copy"


def test_a_fresh_process_that_imported_other_files_confirms_nothing(pytester, monkeypatch):
    """Whatever made the fresh process load another copy (here a conftest that loads the
    local tree's by hand: a path put first no longer can, the run's modules are pinned), its
    figures are of other code: the regression fails unconfirmed, naming the files."""
    _installed_and_local(pytester, monkeypatch, LOADS_THE_LOCAL_COPY)
    result = pytester.runpytest(*FAST, "tests")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (pytester.path / "where.txt").read_text() == "local source tree"
    result.stdout.fnmatch_lines([
        "gpuperf: re-measured 1 test(s) with a suspected regression in a fresh process: the "
        f"fresh process imported other files than this run: mypkg from {pytester.path}/mypkg/"
        f"__init__.py (this run: {pytester.path}/site/mypkg/__init__.py)",
        "FAILED gpuperf::performance-gate - PERFORMANCE REGRESSION*",
    ])  # fmt: skip


def test_differences_name_one_module_a_package():
    from pytest_gpuperf.fresh.provenance import differences

    ours = {"a": "/x/a/__init__.py", "a.b": "/x/a/b.py", "c": "/c.py", "d": "/d.py"}
    theirs = {"a": "/y/a/__init__.py", "a.b": "/y/a/b.py", "c": "/c.py", "e": "/e.py"}
    assert differences(theirs, ours) == "a from /y/a/__init__.py (this run: /x/a/__init__.py)"
    assert differences(ours, ours) == ""
    many = {f"m{i}": f"/y/m{i}.py" for i in range(5)}
    assert differences(many, {k: "/x.py" for k in many}).endswith("; m2 from /y/m2.py (this run: /x.py), and 2 more")


def test_modules_generated_into_a_compile_cache_are_no_difference(monkeypatch, tmp_path):
    """torch.compile's inductor modules keep one name and load from each process's own
    cache: every confirmation of a compiled benchmark was refused as "other files"."""
    import sys
    import types

    from pytest_gpuperf.fresh.provenance import imported_files

    cache = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    for name, file in (("ab_cdef", cache / "ab" / "cabc.py"),
                       ("ab_default", tmp_path / "torchinductor_root" / "x.py"),
                       ("mine", tmp_path / "src" / "mine.py")):  # fmt: skip
        mod = types.ModuleType(name)
        mod.__file__ = str(file)
        monkeypatch.setitem(sys.modules, name, mod)
    files = imported_files()
    assert "mine" in files and "ab_cdef" not in files and "ab_default" not in files


# pytest 9.2 deprecates pytest.console_main() (removed in 10); emulated for the pytest here
DEPRECATED_CONSOLE_MAIN = """
import warnings

import pytest

_console_main = pytest.console_main


def console_main():
    warnings.warn("console_main is deprecated, use pytest.main", DeprecationWarning, stacklevel=2)
    return _console_main()


pytest.console_main = console_main
"""


@pytest.mark.slow
def test_a_confirmation_runs_under_any_warnings_filter(project, monkeypatch, tmp_path):
    """Issue 57: every fresh process started through pytest.console_main(), deprecated in
    pytest 9.2: under PYTHONWARNINGS=error no confirmation ran and the regression failed
    the run unconfirmed."""
    saved(project)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(DEPRECATED_CONSOLE_MAIN)
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    monkeypatch.setenv("SLOW", "0.5")
    result = project.runpytest(*FAST, "-k", "test_spin")
    result.stdout.fnmatch_lines(["REGRESSED *test_b.py::test_spin *confirmed in a fresh process*"])


@pytest.mark.parametrize("name", ["mypkg", "ns.mypkg"])  # flat, and in a namespace package
def test_a_made_up_user_project_under_toxs_default_layout_gets_its_regression_confirmed(
    pytester, monkeypatch, name
):
    """Issue 57: tox's default layout installs the package non-editable into its env and
    runs the tests from the tree; the package is imported from the env (a plugin's entry
    point, an earlier session) before the tree lands ahead of it on sys.path (a rootdir
    conftest, `python -m pytest`). The fresh process started with that sys.path imported the
    tree's copy and refused: "the fresh process imported other files than this run"
    (`tox -e tests` failed 2 of 2 such tests of this repository). The same installed copy as
    the run is the right build: the confirmation now confirms, measuring it."""
    import importlib

    _installed_and_local(pytester, monkeypatch, name=name)  # site/: the env's copy, on sys.path
    for mod in ("mypkg", "ns", "ns.mypkg"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    assert importlib.import_module(name).WHERE == "installed copy"  # imported from the env
    monkeypatch.syspath_prepend(str(pytester.path))  # then the tree goes first
    result = pytester.runpytest(*FAST, "tests")
    result.stdout.fnmatch_lines(["REGRESSED *tests/test_m.py::test_m *confirmed in a fresh process*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (pytester.path / "where.txt").read_text() == "installed copy"

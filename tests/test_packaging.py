"""The package as a user installs it: the built wheel with its core dependencies only, in a
fresh virtual environment (no system site-packages, none of the extras).

Marked slow (it installs torch into a new environment, about a minute here), so plain
`pytest tests` deselects it; `.ci/run` runs it explicitly with `pytest tests -m slow -n 2`. It
needs the package index pip is configured with, as any install does; torch is pinned to the
CPU build of 2.13.0 kept on local disk (README, "Installing torch"). The sdist's build (under
a second, nothing installed) is not marked slow.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"

PLAIN_PB = """
def test_sum(benchmark):
    assert benchmark(sum, range(100)) == 4950
"""

PLUGIN_PROJECT = """
import pytest

@pytest.mark.gpu_requires_gpus(64)
def test_needs_many_gpus():
    pass

@pytest.mark.gpu_dtype("fp32", "bf16")
def test_dtypes(gpu_dtype):
    assert str(gpu_dtype).startswith("torch.")

def test_measured(gpu_benchmark):
    r = gpu_benchmark(lambda: sum(range(100)), work=100, unit="items", max_time=0.2, min_time=0.01, warmup_time=0)
    assert r.throughput.unit == "items/s"
"""


def _run(cmd, cwd, env=None):
    run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    assert run.returncode == 0, f"{cmd}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run


def _build_isolation():
    """pip's build isolation fetches setuptools>=77 (pyproject's build requirement); the one
    running here is used instead when it is recent enough."""
    try:
        from importlib.metadata import version

        return int(version("setuptools").split(".")[0]) < 77
    except Exception:
        return True


JUNK = (".git", ".venv", ".tox", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")


def _build_sdist(src, out):
    """setuptools' own sdist build, run in `src`: its output and the archive's names."""
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))"
    run = _run([sys.executable, "-c", code], src)
    (archive,) = out.glob("pytest_gpuperf-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    return run.stdout + run.stderr, names


def test_the_sdist_builds_without_warnings_and_ships_no_lock_or_temporary_file(tmp_path):
    """MANIFEST.in excluded the baselines' lock and temporary files by patterns that match
    nothing in a clean checkout: every build warned 'no previously-included files found
    matching'. Built from a clean copy, and from one with a stray lock and temporary file."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*JUNK))
    for stray in (src / "baselines").glob(".*"):
        stray.unlink()
    output, names = _build_sdist(src, tmp_path / "clean")
    assert "warning" not in output.lower(), output[-3000:]
    assert "baselines/h200.json" in names and "tests/test_packaging.py" in names
    assert "docs/examples/gpuperf-gate.yml" in names  # the workflow to copy, and its test's input
    # the tools its tests run are in it (tests/test_slim_wheel.py: 5 errors without them) ...
    tools = sorted(f"tools/{p.name}" for p in (ROOT / "tools").glob("*.py"))
    assert tools and [t for t in tools if t not in names] == []
    # ... the docs' evidence archive (raw GPU runs, most of the checkout) is not: no test reads it
    assert (ROOT / "docs" / "evidence").is_dir()
    assert [n for n in names if n.startswith("docs/evidence")] == []
    assert "docs/gating.md" in names and "tests/data/evidence" in {n.rsplit("/", 2)[0] for n in names}
    (src / "baselines" / ".h200.json.lock").write_text("")
    (src / "baselines" / ".h200.json.x1.tmp").write_text("{")
    _, names = _build_sdist(src, tmp_path / "stray")
    assert [n for n in names if n.startswith("baselines/")] == ["baselines/h200.json"]


def test_the_wheel_and_the_sdist_ship_the_json_schemas_and_the_package_data(tmp_path):
    """The package's data files (py.typed, the report's template, the JSON Schema files of
    the baseline and results formats) are in the wheel a user installs and in the sdist;
    the schemas were in neither before pyproject's package-data named them."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*JUNK))
    code = f"from setuptools import build_meta; print(build_meta.build_wheel({str(tmp_path)!r}))"
    _run([sys.executable, "-c", code], src)
    (wheel,) = tmp_path.glob("pytest_gpuperf-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        in_wheel = set(whl.namelist())
    _, in_sdist = _build_sdist(src, tmp_path / "sdist")
    data = ["py.typed", "outputs/report/templates/report.html.j2", "schemas/baseline.schema.json",
            "schemas/results.schema.json"]  # fmt: skip
    assert not [d for d in data if f"pytest_gpuperf/{d}" not in in_wheel], sorted(in_wheel)
    assert not [d for d in data if f"pytest_gpuperf/{d}" not in in_sdist], in_sdist


def _unpacked_sdist(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*JUNK))
    _build_sdist(src, tmp_path / "dist")
    (archive,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    return unpacked


@pytest.mark.slow
def test_the_sdists_tools_tests_pass_from_the_sdist(tmp_path):
    """tests/test_slim_wheel.py runs tools/slim_wheel.py: unpacked from the sdist, it passes
    (5 errors while MANIFEST.in left tools/ out)."""
    unpacked = _unpacked_sdist(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "CI", "GITHUB_ACTIONS")}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_slim_wheel.py"]
    run = subprocess.run(cmd, cwd=unpacked, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and " passed" in run.stdout and "error" not in run.stdout.lower(), run.stdout[-3000:]


SDIST_INPUTS = [
    "tests/test_docs.py::test_the_readme_commands_are_what_ci_runs",
    "tests/test_baseline_store.py::test_the_lock_and_temporary_files_are_ignored_by_git",
    "tests/test_outputs_html.py::test_the_report_as_a_person_sees_it",
]


@pytest.mark.slow
@pytest.mark.parametrize("ci", [False, True])
def test_the_sdists_tests_skip_where_their_inputs_are_absent_and_fail_under_ci(tmp_path, ci):
    """Unpacked from the sdist (no git checkout, no .ci/run) in an environment without
    selenium (the `[test]` extra): the tests that need them are skipped, naming what is
    absent; under CI, which has them all, they fail. They failed outside CI too."""
    unpacked = _unpacked_sdist(tmp_path)
    hide = tmp_path / "hide" / "selenium"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'selenium'\", name='selenium')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "CI", "GITHUB_ACTIONS")}
    env["PYTHONPATH"] = str(hide.parent)
    if ci:
        env["CI"] = "true"
    # -m "": the three named tests, slow or not (the ini's addopts deselects slow ones)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-m", "", *SDIST_INPUTS]
    run = subprocess.run(cmd, cwd=unpacked, env=env, capture_output=True, text=True, check=False)
    out = run.stdout
    assert run.returncode == (1 if ci else 0), out[-3000:]
    assert ("3 failed" if ci else "3 skipped") in out, out[-3000:]
    for what in (".ci/run", "a git checkout with its .gitignore", "selenium"):
        assert (f"CI must provide {what}" if ci else f"needs {what}") in out, out[-3000:]


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory):
    """A plain venv (no system site-packages, no pip of its own) holding the wheel built from
    this tree, its core dependencies and the local CPU torch; nothing else. This
    interpreter's pip installs into it (`pip --python`)."""
    tmp = tmp_path_factory.mktemp("packaging")
    # built from a copy: a build in the tree would leave build/ and a fresh
    # pytest_gpuperf.egg-info there (see tests/__init__.py)
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*JUNK))
    wheels = tmp / "dist"
    isolation = [] if _build_isolation() else ["--no-build-isolation"]
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "wheel", "--no-deps", "-q", *isolation, "-w", str(wheels), str(src)], tmp)
    (wheel,) = wheels.glob("pytest_gpuperf-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # --no-compile: byte-compiling torch's Python files would take longer than the install
    _run([*pip, "--python", str(python), "install", "-q", "--no-compile", str(wheel), TORCH], tmp)
    # the environment's own: nothing of this tree on the path; and bytecode is written, so
    # that only the first of the runs below compiles the torch modules it imports
    drop = ("PYTHONPATH", "PYTEST_ADDOPTS", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    # nor this run's pytest-xdist worker variables: under -n, a run there read them as its
    # own and pytest-benchmark disabled itself ("xdist plugin is active"), writing no JSON
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_XDIST")}
    return python, env


@pytest.mark.slow
def test_the_wheel_installs_the_core_alone(fresh_env):
    python, env = fresh_env
    listed = _run([sys.executable, "-m", "pip", "--python", str(python), "list", "--format=json"], ROOT, env).stdout
    installed = {p["name"].lower() for p in json.loads(listed)}
    assert {"pytest-gpuperf", "pytest", "pytest-benchmark", "torch"} <= installed
    assert not installed & {"transformers", "peft", "bitsandbytes", "matplotlib", "hypothesis", "selenium"}
    # the fresh environment sees nothing of ours: the plugin comes from the wheel
    where = _run([str(python), "-c", "import pytest_gpuperf; print(pytest_gpuperf.__file__)"], "/", env)
    assert str(python.parents[1]) in where.stdout


@pytest.mark.slow
def test_a_plain_pytest_benchmark_file_runs_unchanged(fresh_env, tmp_path):
    python, env = fresh_env
    (tmp_path / "test_pb.py").write_text(PLAIN_PB)
    runs = {}
    for name, extra in (("with", []), ("without", ["-p", "no:gpuperf"])):
        out = tmp_path / f"{name}.json"
        run = _run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "--benchmark-max-time=0.01",
                    f"--benchmark-json={out}", *extra], tmp_path, env)  # fmt: skip
        runs[name] = (run.stdout, json.loads(out.read_text()))
    (with_out, with_json), (without_out, without_json) = runs["with"], runs["without"]
    assert "gpuperf-0.1.0" in with_out and "gpuperf" not in without_out.split("plugins:")[1].splitlines()[0]
    assert "1 passed" in with_out and "1 passed" in without_out
    assert "gpuperf" not in with_json and sorted(with_json) == sorted(without_json)
    assert [b["options"]["timer"] for b in with_json["benchmarks"]] == ["perf_counter"]
    assert [b["options"] for b in with_json["benchmarks"]] == [b["options"] for b in without_json["benchmarks"]]


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["--gpuperf-info"], ["--gpuperf-profiles"]])
def test_markers_gpu_benchmark_and_the_info_options_need_only_the_core(fresh_env, tmp_path, args):
    python, env = fresh_env
    (tmp_path / "test_p.py").write_text(PLUGIN_PROJECT)
    run = _run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "--gpuperf-baseline=off", *args], tmp_path, env)
    if not args:
        assert "3 passed, 1 skipped" in run.stdout and "test_p.py::test_measured" in run.stdout
    elif args == ["--gpuperf-info"]:
        assert "profile: cpu" in run.stdout
    else:
        assert "h200" in run.stdout


@pytest.mark.slow
def test_a_workload_names_its_extra_in_the_core_install(fresh_env, tmp_path):
    python, env = fresh_env
    code = "from pytest_gpuperf.workloads.models import build_model\nbuild_model('tiny')\n"
    run = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert "MissingExtra: the shipped workloads (pytest_gpuperf.workloads) need transformers, peft and bitsandbytes, which are optional: pip install 'pytest-gpuperf[workloads]'" in run.stderr

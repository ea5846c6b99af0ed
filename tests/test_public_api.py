"""The declared public API (`pytest_gpuperf.__all__`), what the shipped benchmarks import,
and the cost of importing the package (issue #22)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_gpuperf

ROOT = Path(__file__).resolve().parents[1]
# the documented public subpackages, besides the names in pytest_gpuperf.__all__
PUBLIC_MODULES = ("pytest_gpuperf.workloads", "pytest_gpuperf.distributed")


def test_all_names_each_public_name_once():
    assert sorted(pytest_gpuperf.__all__) == sorted(["__version__", *pytest_gpuperf._PUBLIC])
    assert len(set(pytest_gpuperf.__all__)) == len(pytest_gpuperf.__all__)


@pytest.mark.parametrize("name", pytest_gpuperf.__all__)
def test_each_public_name_resolves(name):
    assert getattr(pytest_gpuperf, name) is not None
    assert name in dir(pytest_gpuperf)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'get_session'"):
        pytest_gpuperf.get_session  # noqa: B018


def test_importing_the_package_imports_nothing_else():
    code = (
        "import sys, pytest_gpuperf; print(sorted(m for m in sys.modules if "
        "m.startswith(('pytest_gpuperf.', 'torch', 'pynvml', 'numpy', 'scipy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


@pytest.mark.parametrize("path", sorted((ROOT / "benchmarks").glob("*.py")), ids=lambda p: p.name)
def test_the_shipped_benchmarks_import_only_the_public_api(path):
    for module, names in _imports(path):
        if module == "pytest_gpuperf":
            assert set(names) <= set(pytest_gpuperf.__all__), (path.name, names)
        elif module.startswith("pytest_gpuperf"):
            assert module.startswith(PUBLIC_MODULES), (path.name, module)

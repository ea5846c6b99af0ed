"""The import proof (fresh/provenance.py): a build's own modules in each install layout, where
a side must import them from, and the modules a fresh process pins to the run's files."""

import json
import subprocess
import sys
import types

from pytest_gpuperf.fresh.provenance import (
    own_modules,
    pin_bootstrap,
    pins,
    write_pins,
    wrong_build,
)


def _touch(root, *paths):
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def test_own_modules_in_every_layout(tmp_path):
    """Flat, src/, lib/ and namespace packages (no __init__.py): lib/ and namespace
    packages went unseen, so a base that imported the head's installed copy passed."""
    _touch(tmp_path, "flat/__init__.py", "tool.py", "conftest.py", "setup.py",
           "src/a/__init__.py", "src/ns/b/__init__.py", "src/ns/mod.py",
           "lib/c/__init__.py", "nsroot/d/__init__.py", "docs/conf.txt")  # fmt: skip
    assert own_modules(tmp_path) == ["a", "c", "flat", "ns.b", "ns.mod", "nsroot.d", "tool"]


def test_wrong_build_names_the_file(tmp_path):
    tree = tmp_path / "base"
    inside, installed = str(tree / "src" / "a" / "__init__.py"), "/venv/site-packages/a/__init__.py"
    assert wrong_build("base", [("a", inside), ("ns", None)], tree) is None
    why = wrong_build("base", [("a", installed)], tree)
    assert why is not None and f"imported a from {installed}, not from the baseline" in why
    assert wrong_build("head", [("a", installed)], tree) is None
    assert wrong_build("head", [("a", inside)], tree) == f"the head process imported a from the base worktree ({inside})"


def test_pins_are_top_level_modules_and_a_namespace_s_packages(monkeypatch, tmp_path):
    files = {"toplib": tmp_path / "toplib" / "__init__.py", "toplib.sub": tmp_path / "toplib" / "sub.py",
             "nspkg.inner": tmp_path / "nspkg" / "inner" / "__init__.py"}  # fmt: skip
    for name, file in files.items():
        mod = types.ModuleType(name)
        mod.__file__ = str(file)
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setitem(sys.modules, "nspkg", types.ModuleType("nspkg"))  # a namespace: no file
    got = pins()
    assert got["toplib"] == str(files["toplib"]) and got["nspkg.inner"] == str(files["nspkg.inner"])
    assert "toplib.sub" not in got and "nspkg" not in got  # found through their parent's path
    assert "json" not in got  # the standard library is nobody's build


def test_a_pinned_module_is_imported_from_the_pinned_file_whatever_sys_path_says(tmp_path):
    for where in ("first", "pinned"):
        _touch(tmp_path, f"{where}/pkgx/__init__.py", f"{where}/pkgx/sub.py")
        (tmp_path / where / "pkgx" / "sub.py").write_text(f"WHERE = {where!r}\n")
    pinfile = tmp_path / "pins.json"
    pinfile.write_text(json.dumps({"pkgx": str(tmp_path / "pinned" / "pkgx" / "__init__.py")}))
    code = (f"import sys; sys.path.insert(0, {str(tmp_path / 'first')!r})\n{pin_bootstrap(pinfile)}\n"
            "import pkgx.sub; print(pkgx.sub.WHERE)")  # fmt: skip
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "pinned"
    assert json.loads(write_pins(tmp_path / "w.json").read_text()) == pins()

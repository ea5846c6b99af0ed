"""The import proof (fresh/provenance.py): a build's own modules in each install layout, where
a side must import them from, and the modules a fresh process pins to the run's files."""

import json
import subprocess
import sys
import types

import pytest

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
    own = own_modules(tmp_path)
    assert {"a", "c", "flat", "ns.b", "ns.mod", "nsroot.d", "tool"} <= set(own)
    assert not {"conftest", "setup", "conf", "src", "ns", "nsroot"} & set(own)


# issue 57: layouts the walk of src/, lib/ and the root did not reach (a package folder
# starting with `_` was skipped too): each a copy of the head installed in site-packages
OTHER_LAYOUTS = {"python/mylib": "mylib", "packages/x/src/x": "x", "_private/mod": "mod",
                 "_mylib": "_mylib", "src/ns/deep/pkg": "ns.deep.pkg"}  # fmt: skip


@pytest.mark.parametrize("folder", sorted(OTHER_LAYOUTS))
def test_a_base_importing_an_installed_copy_is_refused_in_any_layout(tmp_path, folder):
    """What a base round reports (the own modules it imported, with their files) from the
    head's copy in site-packages: on 749eefc `own_modules` did not list these packages, the
    round reported nothing, and the base measured the head's code as its own."""
    name, tree, site = OTHER_LAYOUTS[folder], tmp_path / "base", tmp_path / "site-packages"
    _touch(tree, f"{folder}/__init__.py", f"{folder}/core.py", "tests/test_x.py")
    installed = {name: site / name.replace(".", "/") / "__init__.py",
                 f"{name}.core": site / name.replace(".", "/") / "core.py"}  # fmt: skip
    own = own_modules(tree)
    reported = [(n, str(f)) for n, f in sorted(installed.items()) if n in own]
    assert [n for n, _ in reported] == sorted(installed)
    why = wrong_build("base", reported, tree)
    assert why is not None and why.startswith(f"the base process imported {name} from {site}")
    inside = [(n, str(tree / folder / f)) for n, f in ((name, "__init__.py"), (f"{name}.core", "core.py"))]
    assert wrong_build("base", inside, tree) is None
    assert wrong_build("head", inside, tree) == f"the head process imported {name} from the base worktree ({inside[0][1]})"


def test_the_walk_skips_virtualenvs_builds_and_hidden_folders_and_is_bounded(tmp_path, monkeypatch):
    """Installed or generated copies in the tree are nobody's source; a package deeper than
    the walk goes is not listed (the walk is bounded); the standard library's names never."""
    import pytest_gpuperf.fresh.provenance as provenance

    _touch(tmp_path, "pkg/__init__.py", "pkg/sub/__init__.py", ".venv/lib/site-packages/hid/__init__.py",
           "venv/pyvenv.cfg", "venv/lib/venvpkg/__init__.py", "node_modules/n/x.py",
           "build/lib/stale/__init__.py", "dist/d.py", "x.egg-info/e.py", "examples/json.py",
           "a/b/c/d/deep/__init__.py")  # fmt: skip
    own = set(own_modules(tmp_path))
    assert {"pkg", "pkg.sub", "examples.json", "deep"} <= own
    assert not {"pkg.sub.x", "sub", "hid", "venvpkg", "x", "stale", "d", "e", "json"} & own
    monkeypatch.setattr(provenance, "TREE_DEPTH", 3)
    (tmp_path / "new").mkdir()  # a new stamp: the walk is done again
    assert "deep" not in own_modules(tmp_path) and "pkg.sub" in own_modules(tmp_path)


def test_a_script_does_not_claim_an_installed_package_of_its_name(tmp_path):
    """tools/evaluate.py is a module: an `evaluate` package in site-packages is another
    project's (a dependency), not an installed copy of this tree; an evaluate.py there is."""
    tree = tmp_path / "base"
    _touch(tree, "tools/evaluate.py")
    assert "evaluate" in own_modules(tree)
    assert wrong_build("base", [("evaluate", "/venv/site-packages/evaluate/__init__.py")], tree) is None
    why = wrong_build("base", [("evaluate", "/venv/site-packages/evaluate.py")], tree)
    assert why is not None and "imported evaluate from /venv/site-packages/evaluate.py" in why


def test_wrong_build_names_the_file(tmp_path):
    tree = tmp_path / "base"
    _touch(tree, "src/a/__init__.py")
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

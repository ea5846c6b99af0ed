"""The import graph of pytest_gpuperf, read from the source with `ast` (no module is
imported): the layers of docs/architecture.md, lowest first, each a subpackage with one job,

    core      the result model and pure maths (results, figures, stats, units, settings)
    hardware  devices, NVML, GPU profiles, emulation, markers and skip decisions
    measure   the gpu_benchmark object and the engine that times work
    workloads the shipped workloads (workloads/, and the public `distributed`)
    baseline  the baseline file: store, schema, history
    judging   pure judges: the verdict rule, noise, the run-wide gate, A/B rounds
    outputs   renderers and writers (outputs/, the report in outputs/report/), runfile
    fresh     fresh pytest processes: confirmation's, deferred tests', xdist workers
    paired    the paired stage: plan, rounds and their worker, looks, judge, verdicts
    run       one pytest run's state and its baseline (judge, confirm, save)
    plugin    the hooks, options, fixtures, hookspec
    cli       the `gpuperf` command, and the package's own lazy public API

An import never points to a higher layer, and the modules import each other without a
cycle. Which imports count:

- every import, at module level or inside a function (the lazy imports that keep
  `import pytest_gpuperf` free of torch are still dependencies: a lazy import up a layer
  or around a circle is the same knot, only tied later);
- imports under `if TYPE_CHECKING:` count for the layer rule (a type from a higher layer
  is knowledge of it) and for cycles too: an annotation naming a type of the module that
  imports you is a circle a reader must walk.

No module is longer than 500 lines, no function or method longer than 80 (its `def` line to
its last, decorators not counted; a nested function counts in its own right and in the one
around it), no module imports another's private name, no module of the package has a
`global` statement (a module's state swapped at run time is state a reader cannot follow:
pass it down, cache it with functools, or keep it in the run's stash), and no test swaps a
module's global by hand (monkeypatch does, and undoes it)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_gpuperf"
ROOT = "pytest_gpuperf"

LAYERS = (
    "core", "hardware", "measure", "workloads", "baseline", "judging", "outputs", "history",
    "fresh", "paired", "run", "plugin", "cli",
)  # fmt: skip
# the top-level names outside a layer's subpackage, and the layer each belongs to
TOP_LEVEL = {"": "cli", "__main__": "cli", "distributed": "workloads"}
MAX_LINES = 500
MAX_FUNCTION_LINES = 80
# Modules over MAX_LINES, each with the reason and the work that removes it from here.
TOO_LONG_FOR_NOW: dict[str, str] = {}
# Modules that render a run: they receive data and never read a file themselves.
RENDERERS = {
    f"{ROOT}.outputs.{name}"
    for name in ("summary", "terminal", "markdown", "text", "junit", "benchjson")
} | {f"{ROOT}.outputs.report.{name}" for name in ("html", "charts", "plot")}
FILE_READERS = {f"{ROOT}.baseline.store", f"{ROOT}.outputs.runfile"}


def layer(module: str) -> str:
    """A module's layer: its subpackage, or TOP_LEVEL's entry; a new top-level module or
    subpackage has none until the table names it (test_every_module_has_a_layer)."""
    parts = module.split(".")[1:]  # without "pytest_gpuperf"
    first = parts[0] if parts else ""
    if first in LAYERS:
        return first
    return TOP_LEVEL.get(first, "unplaced")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    typing_only: bool

    def __str__(self) -> str:
        kind = " (TYPE_CHECKING)" if self.typing_only else ""
        return f"{self.source} -> {self.target} at line {self.line}{kind}"


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str:
    """The module a dotted name refers to: the longest known prefix."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for child in node.body:
                    for sub in ast.walk(child):
                        if hasattr(sub, "lineno"):
                            lines.add(sub.lineno)
    return lines


def edges_of(module: str, path: Path, known: dict[str, Path]) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_lines = _type_checking_lines(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            if origin.split(".")[0] != ROOT:
                continue
            for alias in node.names:  # `from . import charts` names a module
                sub = f"{origin}.{alias.name}"
                targets.append(sub if sub in known else origin)
        for target in targets:
            resolved = _resolve(target, known)
            if resolved and resolved != module:
                out.append(Edge(module, resolved, node.lineno, node.lineno in typing_lines))
    return out


def graph() -> list[Edge]:
    known = modules()
    return [e for m, p in known.items() for e in edges_of(m, p, known)]


def private_imports() -> list[str]:
    known = modules()
    out = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or node.module == ROOT):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        out.append(f"{module} (line {node.lineno}): {alias.name} from {package}")
    return out


def function_lengths(source: str) -> dict[str, int]:
    """Each function's and method's length in lines, from its `def` to its last line
    (decorators excluded), by qualified name: `f`, `Class.method`, `outer.inner`."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                out[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def all_function_lengths() -> dict[str, int]:
    """`module/path.py::qualified.name` -> length, for every function of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for name, n in function_lengths(path.read_text(encoding="utf-8")).items():
            out[f"{rel}::{name}"] = n
    return out


def find_cycle(edges: list[Edge]) -> list[str] | None:
    """One cycle of the graph (as a list of modules, first repeated last), or None."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        succ.setdefault(e.source, set()).add(e.target)
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(succ.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(succ):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


# ---------------------------------------------------------------- the parser itself


def test_the_parser_sees_module_level_lazy_relative_and_typing_imports(tmp_path):
    pkg = tmp_path / ROOT
    (pkg / "outputs").mkdir(parents=True)
    for name in ("__init__.py", "results.py", "outputs/__init__.py", "outputs/text.py"):
        (pkg / name).write_text("")
    (pkg / "outputs" / "html.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..results import Result\n"
        "from . import text\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_gpuperf.session import Session\n"
        "def f():\n"
        "    import pytest_gpuperf.outputs.text as t\n"
        "    from .. import results\n"
    )
    (pkg / "session.py").write_text("")
    known = {
        f"{ROOT}.results": pkg / "results.py",
        f"{ROOT}.session": pkg / "session.py",
        f"{ROOT}.outputs": pkg / "outputs" / "__init__.py",
        f"{ROOT}.outputs.text": pkg / "outputs" / "text.py",
        f"{ROOT}.outputs.html": pkg / "outputs" / "html.py",
        ROOT: pkg / "__init__.py",
    }
    got = {
        (e.target, e.line, e.typing_only)
        for e in edges_of(f"{ROOT}.outputs.html", known[f"{ROOT}.outputs.html"], known)
    }
    assert got == {
        (f"{ROOT}.results", 2, False),
        (f"{ROOT}.outputs.text", 3, False),
        (f"{ROOT}.session", 5, True),
        (f"{ROOT}.outputs.text", 7, False),
        (f"{ROOT}.results", 8, False),
    }


def test_the_cycle_finder_finds_a_circle_and_only_one():
    def e(a: str, b: str) -> Edge:
        return Edge(a, b, 1, False)

    assert find_cycle([e("a", "b"), e("b", "c"), e("a", "c")]) is None
    assert find_cycle([e("a", "b"), e("b", "c"), e("c", "a")]) == ["a", "b", "c", "a"]


def test_function_lengths_count_def_to_last_line_without_decorators():
    source = (
        "import functools\n"  # 1
        "@functools.cache\n"  # 2: a decorator, not counted
        "def f():\n"  # 3
        "    def inner():\n"  # 4
        "        return 1\n"  # 5
        "    return inner\n"  # 6
        "class C:\n"  # 7
        "    @staticmethod\n"  # 8
        "    def m(\n"  # 9
        "        x,\n"  # 10
        "    ):\n"  # 11
        "        return x\n"  # 12
        "async def g(): pass\n"  # 13
    )
    assert function_lengths(source) == {"f": 4, "f.inner": 2, "C.m": 4, "g": 1}


def test_a_module_is_in_its_subpackages_layer_and_a_new_one_in_none():
    assert layer(f"{ROOT}.core.stats") == "core"
    assert layer(f"{ROOT}.workloads.models") == layer(f"{ROOT}.distributed") == "workloads"
    assert layer(f"{ROOT}.baseline.schema") == "baseline"
    assert layer(f"{ROOT}.outputs.runfile") == layer(f"{ROOT}.outputs.report.html") == "outputs"
    assert layer(f"{ROOT}.plugin.options") == "plugin"
    assert layer(ROOT) == layer(f"{ROOT}.__main__") == "cli"
    assert layer(f"{ROOT}.session") == layer(f"{ROOT}.newpackage.x") == "unplaced"


def test_every_module_has_a_layer():
    assert [m for m in modules() if layer(m) == "unplaced"] == []


# ---------------------------------------------------------------- the package


def test_the_graph_is_not_empty():
    edges = graph()
    assert len(edges) > 50
    assert any(e.source == f"{ROOT}.judging.judge" for e in edges)


def test_no_import_points_up_a_layer():
    up = [
        f"{e} ({layer(e.source)} imports {layer(e.target)})"
        for e in graph()
        if LAYERS.index(layer(e.target)) > LAYERS.index(layer(e.source))
    ]
    assert up == [], "imports up a layer (docs/architecture.md):\n" + "\n".join(up)


def test_the_modules_import_each_other_without_a_cycle():
    edges = graph()  # type-only imports included
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_renderers_never_read_files():
    bad = [str(e) for e in graph() if e.source in RENDERERS and e.target in FILE_READERS]
    assert bad == [], "a renderer imports a file reader:\n" + "\n".join(bad)


def test_no_module_imports_another_modules_private_name():
    assert private_imports() == []


def test_no_module_is_over_500_lines():
    long = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES and rel not in TOO_LONG_FOR_NOW:
            long[rel] = n
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


def test_no_function_is_over_80_lines():
    lengths = all_function_lengths()
    long = [
        f"{name}: {n} lines"
        for name, n in lengths.items()
        if n > MAX_FUNCTION_LINES
    ]
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


@pytest.mark.parametrize("name", ["SCHEMA", "VERSION"])
def test_the_baseline_format_is_spelled_in_one_module(name):
    """The baseline file's schema name and version are defined in baseline/schema.py only
    (the module a change of format touches); everything else imports them."""
    owners = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                value = (
                    ast.literal_eval(node.value) if isinstance(node.value, ast.Constant) else None
                )
                if name == "VERSION" or (isinstance(value, str) and "baseline" in value):
                    owners.append(path.relative_to(PACKAGE).as_posix())
    assert owners == ["baseline/schema.py"]


# ------------------------------------------------------- module state: read, never swapped

TESTS = Path(__file__).resolve().parent


def global_statements(source: str, where: str = "<source>") -> list[str]:
    """Each `global` statement of a module's source: a module global assigned at run time."""
    tree = ast.parse(source)
    return [
        f"{where} line {node.lineno}: global {', '.join(node.names)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Global)
    ]


def _module_aliases(tree: ast.Module, known: set[str]) -> set[str]:
    """The names a test binds to a module of the package (`import pytest_gpuperf.x as x`,
    `from pytest_gpuperf.measure import hostload`, `import pytest_gpuperf`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == ROOT:
                    names.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for a in node.names:
                if f"{node.module}.{a.name}" in known:
                    names.add(a.asname or a.name)
    return names


def _names_a_module(node: ast.expr, aliases: set[str], known: set[str]) -> bool:
    """`hostload` (an alias of a module) or `pytest_gpuperf.measure.hostload`."""
    if isinstance(node, ast.Name):
        return node.id in aliases
    dotted = []
    while isinstance(node, ast.Attribute):
        dotted.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == ROOT:
        return ".".join([ROOT, *reversed(dotted)]) in known
    return False


def module_swaps(source: str, known: set[str], where: str = "<source>") -> list[str]:
    """Each assignment (or deletion) of an attribute of a package module in a test's source,
    and each builtin setattr/delattr on one: a swap no fixture undoes."""
    tree = ast.parse(source)
    aliases = _module_aliases(tree, known)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and _names_a_module(node.args[0], aliases, known)
        ):
            out.append((node.lineno, f"{node.func.id}({ast.unparse(node.args[0])}, ...)"))
        while targets:  # a, mod.X = ... and (mod.X, b) = ... alike
            t = targets.pop(0)
            if isinstance(t, (ast.Tuple, ast.List)):
                targets[:0] = t.elts
            elif isinstance(t, ast.Starred):
                targets.insert(0, t.value)
            elif isinstance(t, ast.Attribute) and _names_a_module(t.value, aliases, known):
                out.append((node.lineno, f"{ast.unparse(t)} assigned"))
    return [f"{where} line {line}: {what}" for line, what in sorted(out)]


def test_the_state_checkers_find_a_planted_global_and_swap():
    known = set(modules())
    assert global_statements("x = None\ndef f():\n    global x\n    x = 1\n") == [
        "<source> line 3: global x"
    ]
    assert global_statements("import functools\n@functools.lru_cache\ndef f():\n    return 1\n") == []
    planted = """
import pytest_gpuperf
import pytest_gpuperf.measure.hostload as hostload
from pytest_gpuperf.hardware import nvml
from pytest_gpuperf.judging.verdict import Verdict

def test_x(monkeypatch):
    hostload.read_host = lambda: None
    pytest_gpuperf.outputs.report.html._environment = None
    setattr(nvml, "nvml", None)
    monkeypatch.setattr(hostload, "read_host", lambda: None)
    Verdict.x = 1
    obj = object()
    obj.attr = 2
    a, (b, nvml.NVML) = 1, (2, None)
"""
    assert module_swaps(planted, known) == [
        "<source> line 8: hostload.read_host assigned",
        "<source> line 9: pytest_gpuperf.outputs.report.html._environment assigned",
        "<source> line 10: setattr(nvml, ...)",
        "<source> line 15: nvml.NVML assigned",
    ]


def test_no_package_module_has_a_global_statement():
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in global_statements(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    ]
    assert found == [], "module globals assigned at run time:\n" + "\n".join(found)


def test_no_test_swaps_a_package_modules_attribute_by_hand():
    """The tests and their helpers (fakes.py, vclock.py, gateproject.py, conftest.py) replace
    a module's attribute through monkeypatch only, which undoes it after the test."""
    known = set(modules())
    found = [
        line
        for path in sorted(TESTS.rglob("*.py"))
        for line in module_swaps(path.read_text(encoding="utf-8"), known, str(path.relative_to(TESTS)))
    ]
    assert found == [], "a test swaps a module's attribute by hand:\n" + "\n".join(found)


# ------------------------------------------------------------------ names said in one place

WORKER_QUESTION = {"workerinput", "PYTEST_XDIST_WORKER"}  # how a process knows it is a worker


def string_constants(source: str) -> list[tuple[int, str, bool]]:
    """(line, value, whether it is a module-level `NAME = "value"`) of each whole string."""
    tree = ast.parse(source)
    defined = {
        id(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value, id(node) in defined)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def worker_questions(source: str, where: str = "<source>") -> list[str]:
    return [
        f"{where} line {line}: {value!r}"
        for line, value, _ in string_constants(source)
        if value in WORKER_QUESTION
    ]


def environment_names(sources: dict[str, str]) -> tuple[dict[str, list[str]], list[str]]:
    """The plugin's own environment variables (PYTEST_GPUPERF_*): where each is defined as a
    constant, and every other place one is spelled as a bare literal."""
    import re

    defined: dict[str, list[str]] = {}
    bare = []
    for where, source in sources.items():
        for line, value, is_definition in string_constants(source):
            if re.fullmatch(r"PYTEST_GPUPERF_[A-Z_]+", value):
                if is_definition:
                    defined.setdefault(value, []).append(where)
                else:
                    bare.append(f"{where} line {line}: {value!r}")
    return defined, bare


def _package_sources() -> dict[str, str]:
    return {
        path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_the_name_checkers_find_planted_names():
    planted = 'import os\nA = "PYTEST_GPUPERF_A"\nif os.environ.get("PYTEST_GPUPERF_A"):\n    pass\n'
    assert environment_names({"m.py": planted, "n.py": 'A = "PYTEST_GPUPERF_A"\n'}) == (
        {"PYTEST_GPUPERF_A": ["m.py", "n.py"]},
        ["m.py line 3: 'PYTEST_GPUPERF_A'"],
    )
    asked = 'def f(config):\n    return hasattr(config, "workerinput")\n'
    assert worker_questions(asked) == ["<source> line 2: 'workerinput'"]
    assert worker_questions('"""A docstring that says workerinput."""\n') == []


def test_whether_a_process_is_an_xdist_worker_is_asked_in_one_place():
    """fresh/workers.py's is_worker: everything else calls it."""
    found = [
        line
        for where, source in _package_sources().items()
        if where != "fresh/workers.py"
        for line in worker_questions(source, where)
    ]
    assert found == [], "asks itself whether it is an xdist worker:\n" + "\n".join(found)


def test_each_environment_variable_is_named_once():
    defined, bare = environment_names(_package_sources())
    twice = {name: where for name, where in defined.items() if len(where) > 1}
    assert twice == {} and bare == [], f"defined twice: {twice}; spelled bare: {bare}"


# ------------------------------------------------------------ the verdict record's owner

VERDICT_MODULE = "core/verdict.py"
VERDICT_KEYS = {"status", "trail"}  # the record's keys no other module spells


def verdict_handling(source: str, where: str = "<source>") -> list[str]:
    """What a module outside the verdict module must not do to a verdict: build one
    (`Verdict(...)`, `Step(...)`) or read or write its dict form by key
    (`d["status"]`, `d.get("status")`, a `{"status": ...}` literal)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("Verdict", "Step"):
                out.append(f"{where}:{node.lineno}: builds a {name}")
            if name in ("get", "pop", "setdefault") and node.args and _key(node.args[0]):
                out.append(f"{where}:{node.lineno}: .{name}({_key(node.args[0])!r})")
        elif isinstance(node, ast.Subscript) and _key(node.slice):
            out.append(f"{where}:{node.lineno}: [{_key(node.slice)!r}]")
        elif isinstance(node, ast.Dict) and any(_key(k) for k in node.keys if k is not None):
            out.append(f"{where}:{node.lineno}: a dict literal with a verdict's key")
    return out


def _key(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and node.value in VERDICT_KEYS:
        return str(node.value)
    return None


def test_the_verdict_checker_finds_planted_handling():
    planted = (
        "v = Verdict('regressed', None, None, None, 0.03, '')\n"
        "s = vd.get('status')\nvd['status'] = 'inconclusive'\nd = {'status': 'new'}\n"
        "ok = git(root, 'status')\nw = amend(v, 'rule', status='inconclusive')\n"
    )
    found = sorted(f.split(": ", 1)[1] for f in verdict_handling(planted))
    assert found == [".get('status')", "['status']", "a dict literal with a verdict's key",
                     "builds a Verdict"]  # fmt: skip


def test_only_the_verdict_module_builds_or_changes_a_verdict():
    """Every rule after the first decision returns a new record through core/verdict.py's
    `amend`, which appends its step to the trail; no other module builds a record or
    edits its dict form, so the trail holds every rule that touched a verdict."""
    found = [
        hit
        for module, source in _package_sources().items()
        if module != VERDICT_MODULE
        for hit in verdict_handling(source, module)
    ]
    assert found == [], "\n".join(found)


def test_a_record_cannot_be_built_or_replaced_outside_the_verdict_module():
    """The rule above, held at run time too: `dataclasses.replace` or the constructor
    called from anywhere else raises, so a rule cannot skip the trail."""
    import dataclasses

    from pytest_gpuperf.core.verdict import Rule, Status, Verdict, amend, make

    v = make("regressed", -0.1, 0.1, 0.01, 0.03, "slower", rule=Rule.LADDER)
    with pytest.raises(TypeError, match=r"built by pytest_gpuperf\.core\.verdict"):
        dataclasses.replace(v, status=Status.INCONCLUSIVE)
    with pytest.raises(TypeError, match=r"built by pytest_gpuperf\.core\.verdict"):
        Verdict(Status.NEW, None, None, None, 0.03, "no baseline")
    w = amend(v, Rule.BUSY, status="inconclusive", reason="busy")
    assert [s.rule for s in w.trail] == [Rule.LADDER, Rule.BUSY] and v.status == "regressed"
    with pytest.raises(ValueError, match="a change of status or trail names its rule"):
        amend(v, None, status="unchanged")  # an unrecorded change

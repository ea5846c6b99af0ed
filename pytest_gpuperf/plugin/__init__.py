"""pytest-gpuperf's pytest plugin, the module the `pytest11` entry point names: the hooks.
Wiring only: each hook hands its work to run/ (the run's state), fresh/ (fresh processes,
xdist) or measure/.

The rest of the plugin lives beside it: options (`options`: the one table of command-line
options and ini keys), fixtures (`fixtures`) and the hook specifications for users
(`hookspec`); the option hook and the fixtures are imported here so that pytest finds them.
Importing this module imports neither torch nor NVML.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..core.settings import SettingError, resolve
from ..measure import memory
from .fixtures import (
    BENCH_KEY,
    FIXTURE_MEMORY_KEY,
    FOREIGN_KEY,
    cast_audit,
    dtype_param,
    fixture_memory,
    gpu_benchmark,
    gpu_cast_audit,
    gpu_device,
    gpu_dtype,
    gpu_dtype_spec,
    gpu_emulation,
    gpu_profile,
    node_id,
)
from .markercheck import bad_markers
from .options import (
    SESSION_KEY,
    get_session,
    pytest_addoption,
    resolve_aliases,
    run_outputs,
    warn_deprecated,
)

if TYPE_CHECKING:
    from ..hardware import marks

# what pytest finds here: the option hook and the fixtures are defined in their own modules
__all__ = [
    "BENCH_KEY",
    "SESSION_KEY",
    "cast_audit",
    "get_session",
    "gpu_benchmark",
    "gpu_cast_audit",
    "gpu_device",
    "gpu_dtype",
    "gpu_dtype_spec",
    "gpu_emulation",
    "gpu_profile",
    "node_id",
    "pytest_addoption",
]

# The plugin's markers, by name: checked before marks.py is imported, so a run whose tests
# use none of them never loads it (tests/test_plugin_markers.py keeps this list in step).
REQUIREMENT_MARKERS = (
    "gpu_requires_vram",
    "gpu_requires_mig",
    "gpu_requires_gpus",
    "gpu_requires_capability",
    "gpu_cpu_only",
)


def _marked(node: Any, names: tuple[str, ...]) -> bool:
    return any(next(node.iter_markers(n), None) is not None for n in names)


MARKERS = {
    "gpu_requires_vram": "gpu_requires_vram(size): skip unless the GPU the test gets has at least "
    "this much memory; size is '40GiB', '48GB', '512MiB' or a byte count. Skips on the CPU.",
    "gpu_requires_mig": "gpu_requires_mig(profile=None): run only on a MIG instance, optionally of "
    "the given slice profile such as '1g.10gb'.",
    "gpu_requires_gpus": "gpu_requires_gpus(n): skip when fewer than n GPUs are visible.",
    "gpu_requires_capability": "gpu_requires_capability('8.0'): skip on GPUs below this compute "
    "capability, and on the CPU.",
    "gpu_cpu_only": "gpu_cpu_only: run only when no GPU is visible; for the small variants of a "
    "benchmark that the embedded CPU default runs in place of the GPU-sized ones.",
    "gpuperf": "gpuperf(**settings): measurement and verdict settings for this test's "
    "gpu_benchmark calls, e.g. gpuperf(max_time=30, target=0.02, flush_l2=True, "
    "cuda_graph=True, tolerance=0.05). The settings are listed by --help.",
    "gpu_dtype": "gpu_dtype('fp32', 'tf32', 'fp16', 'bf16', ...): parametrize the test over "
    "these dtypes (ids [fp32] ...), give it a `gpu_dtype` argument holding the torch dtype, "
    "and skip a dtype the device cannot run (bf16/tf32 before compute capability 8.0).",
}


DEPRECATED_KEY = pytest.StashKey[list[str]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspec

    pluginmanager.add_hookspecs(hookspec)


@pytest.hookimpl(trylast=True)
def pytest_gpuperf_incomparable(
    config: pytest.Config, baseline_env: dict[str, Any], current_env: dict[str, Any]
) -> str:
    """The built-in rule, when no implementation of the users' decided ("" = comparable)."""
    from ..baseline.history import incomparable_reason

    return incomparable_reason(baseline_env, current_env) or ""


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """The run's sys.path before its conftests and test modules change it: a fresh
    process (confirm.py) starts with it."""
    from ..fresh.confirm import SYS_PATH_KEY

    early_config.stash[SYS_PATH_KEY] = list(sys.path)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    deprecated = resolve_aliases(config)
    for line in deprecated:  # said first, also for a run that ends before pytest's warnings
        sys.stderr.write(f"gpuperf: {line}\n")
    config.stash[DEPRECATED_KEY] = deprecated  # and as a warning (-W error fails on it)
    if config.getoption("gpuperf_profiles"):
        sess = get_session(config)
        try:
            registry = sess.registry
        except pytest.UsageError as exc:
            sys.stderr.write(f"ERROR: {exc}\n")
            return pytest.ExitCode.USAGE_ERROR
        width = max(len(n) for n in registry.names())
        for p in registry.profiles.values():
            sys.stdout.write(f"{p.name:<{width}}  {p.summary()}\n")
        return 0
    if config.getoption("gpuperf_info"):
        sess = get_session(config)
        from ..hardware.device import detect

        snap = detect(use_torch=True)
        sess.set_snapshot(snap)
        for line in snap.lines():
            sys.stdout.write(line + "\n")
        try:
            prof = sess.detected_profile()
        except pytest.UsageError as exc:
            sys.stderr.write(f"ERROR: {exc}\n")
            return pytest.ExitCode.USAGE_ERROR
        sys.stdout.write(f"  profile: {prof.name if prof else 'no known profile matches'}\n")
        return 0
    return None


def pytest_configure(config: pytest.Config) -> None:
    warn_deprecated(config, config.stash.get(DEPRECATED_KEY, []))
    for doc in MARKERS.values():
        config.addinivalue_line("markers", doc)
    sess = get_session(config)
    if sess.layer_error and not getattr(config.option, "help", False):
        # `pytest --help` still shows the help that helps mend a bad ini value; a run stops
        raise pytest.UsageError(f"gpuperf: {sess.layer_error}")
    config.pluginmanager.register(sess, "gpuperf-session")
    from ..run.session import Outputs

    config.pluginmanager.register(Outputs(sess), "gpuperf-outputs")
    if getattr(config.option, "xmlpath", None):  # --junitxml: valid under its family
        from .junit import JunitProperties

        config.pluginmanager.register(JunitProperties(config), "gpuperf-junit")
    from ..run.benchflags import SaveHandover

    config.pluginmanager.register(SaveHandover(lambda: bool(sess.results)), "gpuperf-benchsave")
    from ..fresh.confirm import IMPORTS_ENV, SELECT_ENV
    from ..fresh.deferred import OUTCOMES_ENV

    if os.environ.get(SELECT_ENV) or os.environ.get(IMPORTS_ENV):
        from ..fresh.confirm import FreshSide  # a fresh process (confirm.py): the tests it runs

        fresh = FreshSide.from_environment()
        config.pluginmanager.register(fresh, "gpuperf-fresh")
    outcomes = os.environ.get(OUTCOMES_ENV)  # deferred.py's fresh process
    if outcomes:
        from pathlib import Path

        from ..fresh.deferred import OutcomeLog

        config.pluginmanager.register(OutcomeLog(Path(outcomes)), "gpuperf-outcomes")


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from ..run.benchflags import apply_selection

    apply_selection(config, items)  # --benchmark-only runs gpu_benchmark tests, -skip skips
    if get_session(config).host is not None:  # a pytest-xdist worker given one GPU
        keep: list[pytest.Item] = []
        later: list[pytest.Item] = []
        for item in items:
            (later if deferred_in_worker(item) else keep).append(item)
        if later:  # every worker defers the same tests; the controller runs them at the end
            items[:] = keep
            from ..fresh.deferred import DEFERRED_KEY

            output = config.workeroutput  # type: ignore[attr-defined]  # pytest-xdist's
            output[DEFERRED_KEY] = [node_id(i) for i in later]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist's controller, given a worker's test ids: no output onto a test file."""
    from ..outputs.paths import onto_collected

    config = node.config
    files = {str(config.rootpath / i.split("::", 1)[0]) for i in ids}
    if clash := onto_collected(run_outputs(config, get_session(config)), files):
        pytest.exit(f"gpuperf: {clash}", returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_collection_finish(session: pytest.Session) -> None:
    sess = get_session(session.config)
    from ..fresh.workers import is_worker

    outputs = [] if is_worker(session.config) else run_outputs(session.config, sess)
    if any(path for _, path in outputs[:4]):  # a worker's: the controller checks its ids
        from ..outputs.paths import onto_collected  # not imported where no output is asked

        files = {str(item.path) for item in session.items}  # not only .py: a plugin's tests
        if clash := onto_collected(outputs, files):
            raise pytest.UsageError(f"gpuperf: {clash}")
    ids = [node_id(item) for item in session.items]
    sess.collected = set(ids)
    sess.locations = {node_id(i): (str(i.location[0]), i.location[1]) for i in session.items}
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if session.config.getoption("gpuperf_plan"):
        sess.prepare_baseline()
        if tr is not None:
            # what this machine would skip (too few GPUs, too little memory, a dtype it
            # lacks, a CPU-only variant) costs nothing
            reasons = zip(ids, map(skip_reason, session.items), strict=True)
            skipped = {n: why for n, why in reasons if why}
            from ..outputs.text import plan_lines

            where = str(sess.base.path) if sess.base.file is not None else None
            for text in plan_lines(sess.base.entries, ids, where, skipped):
                tr.write_line(text)
        return
    from ..fresh.workers import is_worker

    if tr is None or is_worker(session.config):
        tr = None  # lines are written by the controller only
    if tr is not None and any(_marked(item, REQUIREMENT_MARKERS) for item in session.items):
        snap = sess.snapshot()
        if snap.primary is None:  # said once here; each skip reason says what it needs
            tr.write_line(
                f"gpuperf: no GPU visible: {snap.note or 'none found'}; tests that need one "
                "are skipped (-rs says what each needs)"
            )
    if any("gpu_benchmark" in getattr(item, "fixturenames", ()) for item in session.items):
        sess.prepare_baseline()
        line = sess.base.line()
        if line and tr is not None:
            tr.write_line(f"gpuperf: {line}")
        # a collection narrowed by node ids does not show which tests a file has
        whole = not any("::" in str(arg) for arg in session.config.args)
        orphans = sess.base.orphan_note(ids) if whole and tr is not None else None
        if orphans:
            sess.finish_notes.append(orphans)


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Tests -k, -m or --deselect left out: still tests their files have."""
    if items:
        get_session(items[0].config).base.deselected.update(node_id(i) for i in items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """--gpuperf-plan: the plan was shown after collection; run nothing, as --collect-only
    does, and end the session normally (exit code 0)."""
    return True if session.config.getoption("gpuperf_plan") else None


def pytest_sessionstart(session: pytest.Session) -> None:
    # after every plugin's and conftest's pytest_configure, so they can set up detection
    sess = get_session(session.config)
    from ..fresh.workers import is_worker

    controller = False  # of `pytest -n N`
    if is_worker(session.config):  # pytest-xdist worker: one GPU each, before CUDA starts
        workerinput = session.config.workerinput  # type: ignore[attr-defined]
        sess.assign_worker_gpu(workerinput["workerid"], int(workerinput["workercount"]))
    else:
        workers = getattr(session.config.option, "numprocesses", None)
        if isinstance(workers, int) and workers > 0:
            controller = True
            sess.check_workers(workers)
    sess.check_profile()
    sess.check_emulation()
    if controller:
        # the baseline file is checked before the workers start: a worker stopping on a
        # bad one is an INTERNALERROR in the controller that loses the message
        sess.prepare_baseline()
    if sess.ini_layer or sess.cli_layer:  # contradictions between them and the defaults
        backend = "cuda" if sess.snapshot().kind == "cuda" else "cpu"
        try:
            resolve(backend, sess.ini_layer, sess.cli_layer)
        except SettingError as exc:
            raise pytest.UsageError(f"gpuperf: {exc}") from None


# ------------------------------------------------------------------ markers at collection


MARKER_ERRORS: pytest.StashKey[dict[str, list[str]]] = pytest.StashKey()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Check a test's gpuperf markers and parametrize its gpu_dtype. Every bad marker of
    every test is kept (by the collector its test is in) and reported together, as that
    collector's one collection error (`pytest_make_collect_report`): a file's bad markers
    cost one run to see, not one run each."""
    if not _marked(metafunc.definition, (*REQUIREMENT_MARKERS, "gpuperf", "gpu_dtype")):
        return
    nodeid = metafunc.definition.nodeid
    bad = [f"{nodeid}: @pytest.mark.{name}: {why}" for name, why in bad_markers(metafunc)]
    if bad:
        where = metafunc.definition.parent.nodeid if metafunc.definition.parent else ""
        metafunc.config.stash.setdefault(MARKER_ERRORS, {}).setdefault(where, []).extend(bad)
        return
    from ..hardware import marks

    specs = [] if (m := metafunc.definition.get_closest_marker("gpu_dtype")) is None else \
        marks.parse_dtype_marker(m.args, dict(m.kwargs))  # fmt: skip
    if specs:
        metafunc.parametrize("gpu_dtype", specs, ids=[s.name for s in specs], indirect=True)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """A collector whose tests have bad gpuperf markers fails with all of them at once."""
    rep: Any = yield
    bad = collector.config.stash.get(MARKER_ERRORS, {}).pop(collector.nodeid, None)
    if bad and rep.outcome == "passed":
        rep.outcome, rep.result = "failed", []
        rep.longrepr = "\n".join(bad)
    return rep


# ------------------------------------------------------------------- decisions at setup


def _requirements(item: pytest.Item) -> Iterator[marks.Requirement]:
    from ..hardware import marks

    try:
        yield from marks.requirements(item)
    except marks.MarkerError as exc:  # markers added after collection
        pytest.fail(f"{item.nodeid}: {exc}", pytrace=False)


def skip_reason(item: pytest.Item) -> str | None:
    """The first requirement of this test the device does not meet, or None."""
    if not _marked(item, (*REQUIREMENT_MARKERS, "gpu_dtype")):
        return None
    from ..hardware import marks

    sess = get_session(item.config)
    reqs = list(_requirements(item))
    spec = dtype_param(item)
    if not reqs and spec is None:
        return None
    snap = sess.snapshot()
    cap = sess.vram_cap()
    for req in reqs:
        # a worker's GPU count is its host's: what it lacks runs after it (deferred.py)
        on = sess.host if sess.host is not None and isinstance(req, marks.GPUs) else snap
        reason = marks.evaluate(req, on, vram_cap=cap)
        if reason:
            return reason
    if spec is not None:
        return marks.evaluate_dtype(spec, snap)
    return None


def deferred_in_worker(item: pytest.Item) -> bool:
    """In a pytest-xdist worker given one GPU of a host: whether the test needs more GPUs
    than the worker has and no more than the host has (it runs after the workers)."""
    sess = get_session(item.config)
    if sess.host is None or not _marked(item, ("gpu_requires_gpus",)):
        return False
    from ..fresh.deferred import should_defer
    from ..hardware.marks import GPUs

    visible, host = sess.snapshot().gpu_count, sess.host.gpu_count
    return any(
        isinstance(req, GPUs) and should_defer(req.count, visible, host)
        for req in _requirements(item)
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    # Decided before any other setup hook, on the device this process actually has. The
    # decision becomes an ordinary skip marker, so pytest reports it at the test's location.
    reason = skip_reason(item)
    if reason:
        item.add_marker(pytest.mark.skip(reason=reason))
    names = getattr(item, "fixturenames", ())
    if "gpu_benchmark" in names:
        # GPU memory resident before this test's fixtures are set up, held by none of its
        # live ones: another test's, which flags an OOM point found beside it (memory.py)
        held = fixture_memory(item.config)
        item.stash[FOREIGN_KEY] = held.begin(names, memory.allocated_now())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    # the GPU memory a fixture's setup allocates is its tests' own (memory.FixtureMemory);
    # nothing is read until CUDA is in use in this process
    before = memory.allocated_now()
    try:
        return (yield)
    finally:
        after = memory.allocated_now()
        if after is not None:
            fixture_memory(request.config).setup(fixturedef, before, after)


def pytest_fixture_post_finalizer(fixturedef: Any, request: pytest.FixtureRequest) -> None:
    held = request.config.stash.get(FIXTURE_MEMORY_KEY, None)
    if held is not None:
        held.finished(fixturedef)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    plain_id = node_id(item)
    from ..fresh.workers import NODEID_ATTR, RESULTS_ATTR

    if plain_id != item.nodeid:  # renamed by --dist loadgroup: say which test it is
        setattr(report, NODEID_ATTR, plain_id)
    bench = item.stash.get(BENCH_KEY, None)
    if bench is not None and report.when == "call":
        # Plain data on the report travels to the controller under pytest-xdist too.
        setattr(report, RESULTS_ATTR, [r.to_dict() for r in bench.results])
        # item.user_properties reach the teardown report, which JUnit XML reads
        from ..outputs.junit import junit_properties

        item.user_properties.extend(junit_properties(bench.results))
    return report


def pytest_runtest_teardown(item: pytest.Item) -> None:
    # A failed benchmark leaves its traceback in sys.last_traceback, which keeps the test's
    # tensors alive; drop those frames so the next test starts with its memory free.
    if BENCH_KEY in item.stash and getattr(sys, "last_traceback", None) is not None:
        from ..measure.timing import release_memory

        release_memory(getattr(sys, "last_value", None))
        for name in ("last_traceback", "last_value", "last_type", "last_exc"):
            if hasattr(sys, name):
                delattr(sys, name)


# ------------------------------------------------------------------ pytest-benchmark
#
# A good citizen: pytest-benchmark's options, timer and JSON stay exactly as they are
# without this plugin, unless a gpu_benchmark result exists. Its default timer
# (time.perf_counter) times the launch of CUDA work, not the work; a user opts in to
# pytest_gpuperf.measure.clock.synchronized_perf_counter with its own --benchmark-timer option or
# @pytest.mark.benchmark(timer=...) (README, "What gpu_benchmark measures").


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict) -> None:
    sess = get_session(config)
    if not sess.results:  # no gpu_benchmark ran: pytest-benchmark's JSON as it would be
        return
    from ..outputs.benchjson import benchmark_entries
    from ..outputs.text import json_safe

    summary = sess.summary()
    output_json["gpuperf"] = json_safe(summary.payload())  # device and profile live here
    output_json.setdefault("benchmarks", []).extend(benchmark_entries(summary))

"""pytest-gpuperf: options, markers, fixtures and hooks. Wiring only.

The logic lives in pure modules (marks, profiles, stats, verdict) and the lazy per-run
state in session.GpuPerfSession. Importing this module imports neither torch nor NVML.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .session import AUTO, BASELINE_MODES, GpuPerfSession, Options, strip_group
from .settings import (
    SETTINGS,
    Layer,
    SettingError,
    check_order,
    fraction,
    parse_layer,
    resolve,
)

if TYPE_CHECKING:
    from . import marks

# The plugin's markers, by name: checked before marks.py is imported, so a run whose tests
# use none of them never loads it (tests/test_plugin_markers.py keeps this list in step).
REQUIREMENT_MARKERS = (
    "requires_vram",
    "requires_mig",
    "requires_gpus",
    "requires_capability",
    "cpu_only",
)


def _marked(node: Any, names: tuple[str, ...]) -> bool:
    return any(next(node.iter_markers(n), None) is not None for n in names)


SESSION_KEY = pytest.StashKey[GpuPerfSession]()

MARKERS = {
    "requires_vram": "requires_vram(size): skip unless the GPU the test gets has at least "
    "this much memory; size is '40GiB', '48GB', '512MiB' or a byte count. Skips on the CPU.",
    "requires_mig": "requires_mig(profile=None): run only on a MIG instance, optionally of "
    "the given slice profile such as '1g.10gb'.",
    "requires_gpus": "requires_gpus(n): skip when fewer than n GPUs are visible.",
    "requires_capability": "requires_capability('8.0'): skip on GPUs below this compute "
    "capability, and on the CPU.",
    "cpu_only": "cpu_only: run only when no GPU is visible; for the small variants of a "
    "benchmark that the embedded CPU default runs in place of the GPU-sized ones.",
    "gpuperf": "gpuperf(**settings): measurement and verdict settings for this test's "
    "gpu_benchmark calls, e.g. gpuperf(max_time=30, target=0.01, flush_l2=True, "
    "cuda_graph=True, tolerance=0.03). See --help for the settings.",
    "dtype": "dtype('fp32', 'tf32', 'fp16', 'bf16', ...): parametrize the test over these "
    "dtypes (ids [fp32] ...), give it a `dtype` argument holding the torch dtype, and skip "
    "a dtype the device cannot run (bf16/tf32 before compute capability 8.0).",
}


# ------------------------------------------------------------------------------ options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpuperf", "GPU performance regression testing (pytest-gpuperf)")
    group.addoption(
        "--gpu-profile",
        action="store",
        default=None,
        metavar="NAME|auto",
        help="GPU profile the results belong to (baselines/<profile>.json). 'auto' "
        "(default) picks the profile that matches the detected device. A named profile "
        "that does not match the device is a usage error unless --gpu-allow-mismatch.",
    )
    group.addoption(
        "--gpu-allow-mismatch",
        action="store_true",
        default=False,
        help="allow --gpu-profile to name a profile other than the detected device's.",
    )
    group.addoption(
        "--gpu-emulate",
        action="store",
        default=None,
        metavar="PROFILE",
        help="cap usable GPU memory to PROFILE's capacity (e.g. a100-40gb on an H200) to "
        "answer 'does it fit, and up to which batch'. Results are marked emulated and kept "
        "in their own baseline file; their speed is this GPU's, not the emulated card's.",
    )
    group.addoption(
        "--gpu-info",
        action="store_true",
        default=False,
        help="print the device snapshot (GPU, memory, MIG, driver, CUDA, versions) and exit.",
    )
    group.addoption(
        "--gpu-profiles",
        action="store_true",
        default=False,
        help="list the known GPU profiles (built-in and from pyproject.toml) and exit.",
    )
    group.addoption(
        "--gpuperf-baseline",
        action="store",
        default=None,
        choices=BASELINE_MODES,
        help="auto (default): compare with baselines/<profile>.json when it exists; compare: "
        "require it; save: record this run's results into it (sessions are appended to each "
        "benchmark's history, other entries kept); off: neither.",
    )
    group.addoption(
        "--gpuperf-baseline-dir",
        action="store",
        default=None,
        metavar="DIR",
        help="directory of the baseline files (default: baselines, under the rootdir)",
    )
    group.addoption(
        "--gpuperf-warn-only",
        action="store_true",
        default=None,
        help="report regressions without failing the tests",
    )
    group.addoption(
        "--gpuperf-json",
        action="store",
        default=None,
        metavar="PATH",
        help="write results and verdicts as JSON to PATH",
    )
    group.addoption(
        "--gpuperf-html",
        action="store",
        default=None,
        metavar="PATH",
        help="write a self-contained HTML report of the run (tables and charts) to PATH",
    )
    group.addoption(
        "--gpuperf-plan",
        action="store_true",
        default=False,
        help="list the selected benchmarks with their expected time (the test durations the "
        "baseline recorded; 'unknown' where none) and the total, then exit without running",
    )
    group.addoption(
        "--gpuperf-false-alarm",
        action="store",
        default=None,
        metavar="RATE",
        help="the whole run's false-alarm rate (default 0.01): each of the m judged baseline "
        "metrics is tested at confidence 1 - RATE/m (Bonferroni), at least 99%%",
    )
    group.addoption(
        "--gpuperf-no-confirm",
        action="store_true",
        default=None,
        help="fail on a suspected regression without re-measuring it in a fresh process "
        "first (default: re-measure the flagged tests; ini gpuperf_confirm)",
    )
    parser.addini(
        "gpuperf_confirm", "re-measure a suspected regression in a fresh process", type="bool",
        default=True,
    )
    parser.addini("gpuperf_false_alarm", "default for --gpuperf-false-alarm", default="0.01")
    parser.addini("gpuperf_profile", "default for --gpu-profile", default=AUTO)
    parser.addini("gpuperf_baseline", "default for --gpuperf-baseline", default="auto")
    parser.addini("gpuperf_baseline_dir", "default for --gpuperf-baseline-dir", default="baselines")
    parser.addini(
        "gpuperf_warn_only", "default for --gpuperf-warn-only", type="bool", default=False
    )
    for setting in SETTINGS:
        if not setting.cli:
            continue
        flag = "--gpuperf-" + setting.name.replace("_", "-")
        default = f"default {setting.cuda} on CUDA, {setting.cpu} on the CPU"
        group.addoption(
            flag,
            action="store",
            default=None,
            dest=f"gpuperf_{setting.name}",
            help=f"{setting.help} ({default}; ini gpuperf_{setting.name})",
        )
        parser.addini(f"gpuperf_{setting.name}", setting.help, default=None)


def _option(config: pytest.Config, dest: str, ini: str) -> tuple[Any, str]:
    """A value from the command line, else the ini file, and a name for where it came from."""
    value = config.getoption(dest)
    if value is not None:
        return value, f"--{dest.replace('_', '-')}"
    return config.getini(ini), f"{config.inipath or 'ini file'}: {ini}"


def _make_session(config: pytest.Config) -> GpuPerfSession:
    profile, profile_src = _option(config, "gpu_profile", "gpuperf_profile")
    mode = config.getoption("gpuperf_baseline") or config.getini("gpuperf_baseline") or "auto"
    explicit_dir = config.getoption("gpuperf_baseline_dir")
    directory = Path(explicit_dir or config.getini("gpuperf_baseline_dir"))
    json_path = config.getoption("gpuperf_json")
    opts = Options(
        profile=str(profile).strip(),
        allow_mismatch=bool(config.getoption("gpu_allow_mismatch")),
        baseline_mode=str(mode).strip(),
        baseline_dir=directory if directory.is_absolute() else config.rootpath / directory,
        json_path=Path(json_path) if json_path else None,
        html_path=Path(html) if (html := config.getoption("gpuperf_html")) else None,
        emulate=(config.getoption("gpu_emulate") or "").strip() or None,
    )
    opts.profile_source = profile_src
    opts.explicit_dir = bool(explicit_dir) or directory != Path("baselines")
    pyproject = Path(config.rootpath, "pyproject.toml")
    sess = GpuPerfSession(opts, pyproject if pyproject.is_file() else None)
    sess.layer_error = _option_problem(config, opts) or _output_clash(config, sess)
    if sess.layer_error:
        return sess
    ini_raw = {s.name: config.getini(f"gpuperf_{s.name}") for s in SETTINGS if s.cli}
    cli_raw = {s.name: config.getoption(f"gpuperf_{s.name}") for s in SETTINGS if s.cli}
    inifile = config.inipath or "ini file"
    try:
        sess.ini_layer = parse_layer({k: v for k, v in ini_raw.items() if v}, f"{inifile}")
        sess.cli_layer = parse_layer(
            {k: v for k, v in cli_raw.items() if v is not None}, "command line"
        )
    except SettingError as exc:
        sess.layer_error = str(exc)
    return sess


def _option_problem(config: pytest.Config, opts: Options) -> str | None:
    """What is wrong with the run-wide options, naming where each came from, or None."""
    if not opts.profile:
        return (
            f"{opts.profile_source} is empty: name a GPU profile (see --gpu-profiles) or "
            "'auto' for the detected one"
        )
    if opts.baseline_mode not in BASELINE_MODES:
        return (
            f"{config.inipath}: gpuperf_baseline={opts.baseline_mode!r}: use one of "
            f"{', '.join(BASELINE_MODES)}"
        )
    warn = config.getoption("gpuperf_warn_only")
    if warn is None:
        try:
            warn = config.getini("gpuperf_warn_only")
        except (ValueError, pytest.UsageError) as exc:
            return f"{config.inipath}: gpuperf_warn_only: {exc}; use true or false"
    opts.warn_only = bool(warn)
    if config.getoption("gpuperf_no_confirm"):
        opts.confirm = False
    else:
        try:
            opts.confirm = bool(config.getini("gpuperf_confirm"))
        except (ValueError, pytest.UsageError) as exc:
            return f"{config.inipath}: gpuperf_confirm: {exc}; use true or false"
    named = opts.explicit_dir and opts.baseline_mode in ("auto", "compare")
    if named and not opts.baseline_dir.is_dir():  # a typo must not pass as "no baseline yet"
        return (
            f"--gpuperf-baseline-dir: {opts.baseline_dir} is not a directory (relative paths "
            f"are resolved against the rootdir {config.rootpath}); create it, or save a "
            "baseline there with --gpuperf-baseline=save"
        )
    rate, rate_src = _option(config, "gpuperf_false_alarm", "gpuperf_false_alarm")
    try:
        opts.false_alarm = fraction(rate)
    except ValueError as exc:
        return f"{rate_src}={rate!r}: {exc}"
    for flag, path in (("--gpuperf-json", opts.json_path), ("--gpuperf-html", opts.html_path)):
        if path is not None and path.is_dir():
            return f"{flag}={path}: is a directory; give a file path"
    return None


def _output_clash(config: pytest.Config, sess: GpuPerfSession) -> str | None:
    """An output of this run that would land on its baseline file (the directory's file of
    any known profile, existing or not), on any baseline file, or on another output."""
    opts = sess.options
    bench = None
    if config.pluginmanager.hasplugin("benchmark"):
        bench = config.getoption("benchmark_json", None)
        bench = getattr(bench, "name", bench)  # pytest-benchmark < 5.3: an open file
    if opts.json_path is None and opts.html_path is None and not bench:
        return None
    import contextlib
    import os

    from .outputs.paths import first_clash

    names = {opts.profile}
    with contextlib.suppress(pytest.UsageError):  # reported at session start, naming it
        names.update(sess.registry.names())
    outputs = [
        ("--gpuperf-json", opts.json_path),
        ("--gpuperf-html", opts.html_path),
        ("--benchmark-json", bench if isinstance(bench, str | os.PathLike) else None),
        ("--junitxml", getattr(config.option, "xmlpath", None)),
        ("GITHUB_STEP_SUMMARY", os.environ.get("GITHUB_STEP_SUMMARY")),
    ]
    inputs = [("the ini file", config.inipath), ("the profiles file", sess.pyproject)]
    return first_clash(outputs, inputs, [("--gpuperf-baseline-dir", opts.baseline_dir, names)])


def get_session(config: pytest.Config) -> GpuPerfSession:
    if SESSION_KEY not in config.stash:
        config.stash[SESSION_KEY] = _make_session(config)
    return config.stash[SESSION_KEY]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.getoption("gpu_profiles"):
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
    if config.getoption("gpu_info"):
        sess = get_session(config)
        from .device import detect

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
    for doc in MARKERS.values():
        config.addinivalue_line("markers", doc)
    sess = get_session(config)
    if sess.layer_error:
        raise pytest.UsageError(f"gpuperf: {sess.layer_error}")
    config.pluginmanager.register(sess, "gpuperf-session")
    from .session import Outputs

    config.pluginmanager.register(Outputs(sess), "gpuperf-outputs")
    from .benchflags import SaveHandover

    config.pluginmanager.register(SaveHandover(lambda: bool(sess.results)), "gpuperf-benchsave")


def node_id(item: pytest.Item) -> str:
    """The test's id as baselines know it: without the '@group' that pytest-xdist's
    --dist loadgroup appends to tests marked xdist_group."""
    marked = item.get_closest_marker("xdist_group") is not None
    return strip_group(item.nodeid) if marked else item.nodeid


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's own
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from .benchflags import apply_selection

    apply_selection(config, items)  # --benchmark-only runs gpu_benchmark tests, -skip skips


def pytest_collection_finish(session: pytest.Session) -> None:
    sess = get_session(session.config)
    ids = [node_id(item) for item in session.items]
    sess.collected = set(ids)
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if session.config.getoption("gpuperf_plan"):
        sess.prepare_baseline()
        if tr is not None:
            # what this machine would skip (too few GPUs, too little memory, a dtype it
            # lacks, a CPU-only variant) costs nothing
            reasons = zip(ids, map(skip_reason, session.items), strict=True)
            skipped = {n: why for n, why in reasons if why}
            from .outputs.text import plan_lines

            where = str(sess.base.path) if sess.base.file is not None else None
            for text in plan_lines(sess.base.entries, ids, where, skipped):
                tr.write_line(text)
        pytest.exit("gpuperf: plan shown, nothing run (--gpuperf-plan)", returncode=0)
    if any("gpu_benchmark" in getattr(item, "fixturenames", ()) for item in session.items):
        sess.prepare_baseline()
        line = sess.base.line()
        if line and tr is not None and not hasattr(session.config, "workerinput"):
            tr.write_line(f"gpuperf: {line}")


def pytest_sessionstart(session: pytest.Session) -> None:
    # after every plugin's and conftest's pytest_configure, so they can set up detection
    sess = get_session(session.config)
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:  # pytest-xdist worker: one GPU each, before CUDA starts
        sess.assign_worker_gpu(workerinput["workerid"], int(workerinput["workercount"]))
    else:
        workers = getattr(session.config.option, "numprocesses", None)
        if isinstance(workers, int) and workers > 0:  # the controller of `pytest -n N`
            sess.check_workers(workers)
    sess.check_profile()
    sess.check_emulation()
    if sess.ini_layer or sess.cli_layer:  # contradictions between them and the defaults
        backend = "cuda" if sess.snapshot().kind == "cuda" else "cpu"
        try:
            resolve(backend, sess.ini_layer, sess.cli_layer)
        except SettingError as exc:
            raise pytest.UsageError(f"gpuperf: {exc}") from None


# ------------------------------------------------------------------ markers at collection


def _marker_error(nodeid: str, marker: str, exc: Exception) -> pytest.Collector.CollectError:
    return pytest.Collector.CollectError(f"{nodeid}: @pytest.mark.{marker}: {exc}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not _marked(metafunc.definition, (*REQUIREMENT_MARKERS, "gpuperf", "dtype")):
        return
    from . import marks

    nodeid = metafunc.definition.nodeid
    for name, parse in marks.PARSERS.items():
        for m in metafunc.definition.iter_markers(name):
            try:
                parse(m.args, dict(m.kwargs))
            except marks.MarkerError as exc:
                raise _marker_error(nodeid, name, exc) from None
    for m in metafunc.definition.iter_markers("gpuperf"):
        try:
            if m.args:
                raise SettingError(f"takes keyword settings only, got {m.args!r}")
            check_order(parse_layer(dict(m.kwargs), "marker"))
        except SettingError as exc:
            raise _marker_error(nodeid, "gpuperf", exc) from None
    dtype_marks = list(metafunc.definition.iter_markers("dtype"))
    if not dtype_marks:
        return
    try:
        specs = marks.parse_dtype_marker(dtype_marks[0].args, dict(dtype_marks[0].kwargs))
    except marks.MarkerError as exc:
        raise _marker_error(nodeid, "dtype", exc) from None
    if "dtype" not in metafunc.fixturenames:
        raise _marker_error(
            nodeid, "dtype", marks.MarkerError("the test must take a `dtype` argument")
        )
    metafunc.parametrize("dtype", specs, ids=[s.name for s in specs], indirect=True)


# ------------------------------------------------------------------- decisions at setup


def _requirements(item: pytest.Item) -> Iterator[marks.Requirement]:
    from . import marks

    for name, parse in marks.PARSERS.items():
        for m in item.iter_markers(name):
            try:
                yield parse(m.args, dict(m.kwargs))
            except marks.MarkerError as exc:  # markers added after collection
                pytest.fail(f"{item.nodeid}: @pytest.mark.{name}: {exc}", pytrace=False)


def skip_reason(item: pytest.Item) -> str | None:
    """The first requirement of this test the device does not meet, or None."""
    if not _marked(item, (*REQUIREMENT_MARKERS, "dtype")):
        return None
    from . import marks

    sess = get_session(item.config)
    reqs = list(_requirements(item))
    spec = _dtype_param(item)
    if not reqs and spec is None:
        return None
    snap = sess.snapshot()
    cap = sess.vram_cap()
    for req in reqs:
        reason = marks.evaluate(req, snap, vram_cap=cap)
        if reason:
            return reason
    if spec is not None:
        return marks.evaluate_dtype(spec, snap)
    return None


def _dtype_param(item: pytest.Item) -> marks.DTypeSpec | None:
    from . import marks

    callspec = getattr(item, "callspec", None)
    value = callspec.params.get("dtype") if callspec is not None else None
    return value if isinstance(value, marks.DTypeSpec) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    # Decided before any other setup hook, on the device this process actually has. The
    # decision becomes an ordinary skip marker, so pytest reports it at the test's location.
    reason = skip_reason(item)
    if reason:
        item.add_marker(pytest.mark.skip(reason=reason))
    return (yield)


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def gpu_device(pytestconfig: pytest.Config) -> Any:
    """The DeviceSnapshot of this machine (GPUs visible to this process, or the CPU)."""
    return get_session(pytestconfig).snapshot()


@pytest.fixture(scope="session")
def gpu_emulation(pytestconfig: pytest.Config) -> Any:
    """The Profile whose memory is emulated (--gpu-emulate), or None. On a GPU the cap is in
    force once this fixture (or gpu_benchmark) has been set up."""
    sess = get_session(pytestconfig)
    if sess.snapshot().kind == "cuda":
        sess.apply_emulation()
    return sess.emulated_profile()


@pytest.fixture(scope="session")
def gpu_profile(pytestconfig: pytest.Config) -> Any:
    """The Profile results belong to (asked for, or detected), or None if unknown."""
    return get_session(pytestconfig).profile()


def _spec_for(request: pytest.FixtureRequest) -> marks.DTypeSpec:
    node = request.node
    spec = _dtype_param(node) if isinstance(node, pytest.Item) else None
    if spec is None:
        raise pytest.UsageError(
            f"{node.nodeid}: the dtype/dtype_spec fixtures need "
            "@pytest.mark.dtype('fp16', 'bf16', ...) on the test"
        )
    return spec


@pytest.fixture
def dtype_spec(request: pytest.FixtureRequest) -> marks.DTypeSpec:
    """The DTypeSpec (name, torch dtype, bytes per element) of a @pytest.mark.dtype test."""
    return _spec_for(request)


@pytest.fixture
def dtype(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The torch dtype of a test parametrized by @pytest.mark.dtype.

    'tf32' gives torch.float32 with TF32 matmuls allowed for the test; 'fp32' gives
    torch.float32 with them forbidden (full-precision float32), whatever the global setting.
    """
    spec = _spec_for(request)
    import torch

    previous = torch.get_float32_matmul_precision()
    if spec.name == "tf32":
        torch.set_float32_matmul_precision("high")
    elif spec.name == "fp32":
        torch.set_float32_matmul_precision("highest")
    try:
        yield spec.torch_dtype()
    finally:
        torch.set_float32_matmul_precision(previous)


# --------------------------------------------------------------------------- measurement

BENCH_KEY = pytest.StashKey[Any]()


def _marker_layer(item: pytest.Item) -> Layer:
    source = f"{item.nodeid}: @pytest.mark.gpuperf"
    merged = Layer()
    merged.source = source
    for m in reversed(list(item.iter_markers("gpuperf"))):  # closest marker wins
        merged.update(parse_layer(dict(m.kwargs), source))
    return merged


def _telemetry_factory(sess: GpuPerfSession) -> Any:
    snap = sess.snapshot()
    gpu = snap.primary
    if gpu is None or gpu.uuid is None:
        return None
    from .nvml import nvml
    from .telemetry import Sampler

    lib = nvml()
    handle = lib.query("nvmlDeviceGetHandleByUUID", gpu.uuid)
    if handle is not None and gpu.is_mig_instance:  # clocks and power live on the parent
        handle = lib.query("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle)
    if handle is None:
        return None
    return lambda interval: Sampler(lib, handle, interval=interval)


def _gpus_used(item: Any) -> int:
    """The GPUs a test uses, from its requires_gpus marker (one without it)."""
    marker = item.get_closest_marker("requires_gpus") if isinstance(item, pytest.Item) else None
    if marker is None:
        return 1
    from . import marks

    try:
        return int(marks.parse_requires_gpus(marker.args, dict(marker.kwargs)).count)
    except marks.MarkerError:  # reported by the marker checks at collection
        return 1


@pytest.fixture
def gpu_benchmark(request: pytest.FixtureRequest) -> Any:
    """Measure work with correct GPU timing: `gpu_benchmark(fn, work=n, unit="tokens")`.

    Returns a Result: throughput in the unit's per-second form with its 95% interval, time
    statistics, raw samples, peak memory, NVML telemetry (clocks, throttling, energy per
    unit), GPU busy fraction and a launch-bound flag. On the CPU the same code times with
    time.perf_counter.
    """
    from .bench import GpuBenchmark
    from .benchflags import disabled as benchmarks_disabled

    item = request.node
    sess = get_session(request.config)
    snap = sess.snapshot()
    problem = None
    try:
        layers = [sess.ini_layer, sess.cli_layer, _marker_layer(item)]
        resolve("cuda" if snap.kind == "cuda" else "cpu", *layers)
    except SettingError as exc:
        problem = f"{item.nodeid}: {exc}"
    if problem:
        pytest.fail(problem, pytrace=False)
    telemetry = _telemetry_factory(sess) if snap.kind == "cuda" else None
    sess.prepare_baseline()
    if snap.kind == "cuda":
        sess.apply_emulation()
    bench = GpuBenchmark(
        node_id(item),
        snap,
        layers,
        telemetry,
        emulated=sess.options.emulate,
        progress=_progress_writer(request.config),
        gpus_used=_gpus_used(item),
        params=_params(item),
        disabled=benchmarks_disabled(request.config),
    )
    item.stash[BENCH_KEY] = bench
    return bench


def _params(item: pytest.Item) -> dict[str, Any]:
    """The test's parameters as plain JSON (results.plain_params), for its results."""
    from .results import plain_params

    callspec = getattr(item, "callspec", None)
    return plain_params(callspec.params, callspec.indices) if callspec is not None else {}


def _progress_writer(config: pytest.Config) -> Any:
    """Write a progress line to the terminal while a test runs (output capture suspended),
    unless -q; lines meant for -v only wait for -v. None under pytest-xdist workers."""
    verbosity = config.get_verbosity()
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if verbosity < 0 or tr is None or hasattr(config, "workerinput"):
        return None

    def write(line: str, verbose_only: bool) -> None:
        if verbose_only and verbosity < 1:
            return
        from .outputs.text import plain

        if capman is not None:
            with capman.global_and_fixture_disabled():
                tr.write_line(f"  gpuperf: {plain(line)}")
        else:
            tr.write_line(f"  gpuperf: {plain(line)}")

    return write


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    plain_id = node_id(item)
    if plain_id != item.nodeid:  # renamed by --dist loadgroup: say which test it is
        report.gpuperf_nodeid = plain_id
    bench = item.stash.get(BENCH_KEY, None)
    if bench is not None and report.when == "call":
        # Plain data on the report travels to the controller under pytest-xdist too.
        report.gpuperf = [r.to_dict() for r in bench.results]
        # item.user_properties reach the teardown report, which JUnit XML reads
        from .outputs.junit import junit_properties

        item.user_properties.extend(junit_properties(bench.results))
    return report


def pytest_runtest_teardown(item: pytest.Item) -> None:
    # A failed benchmark leaves its traceback in sys.last_traceback, which keeps the test's
    # tensors alive; drop those frames so the next test starts with its memory free.
    if BENCH_KEY in item.stash and getattr(sys, "last_traceback", None) is not None:
        from .timing import release_memory

        release_memory(getattr(sys, "last_value", None))
        for name in ("last_traceback", "last_value", "last_type", "last_exc"):
            if hasattr(sys, name):
                delattr(sys, name)


# ------------------------------------------------------------------ pytest-benchmark
#
# A good citizen: pytest-benchmark's options, timer and JSON stay exactly as they are
# without this plugin, unless a gpu_benchmark result exists. Its default timer
# (time.perf_counter) times the launch of CUDA work, not the work; a user opts in to
# pytest_gpuperf.clock.synchronized_perf_counter with its own --benchmark-timer option or
# @pytest.mark.benchmark(timer=...) (README, "What gpu_benchmark measures").


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any, output_json: dict) -> None:
    sess = get_session(config)
    if not sess.results:  # no gpu_benchmark ran: pytest-benchmark's JSON as it would be
        return
    from .outputs.benchjson import benchmark_entries
    from .outputs.text import json_safe

    summary = sess.summary()
    output_json["gpuperf"] = json_safe(summary.payload())  # device and profile live here
    output_json.setdefault("benchmarks", []).extend(benchmark_entries(summary))


@pytest.fixture
def cast_audit() -> Any:
    """A factory of CastAudit context managers that count the dtype conversions (and the
    bytes they move) inside the work they wrap: `with cast_audit() as audit: step()`."""
    from .casts import CastAudit

    return CastAudit

"""The plugin's fixtures: the device, the profile, dtypes, and `gpu_benchmark`, the measuring
fixture. Registered through plugin.py; importing this module imports neither torch nor NVML.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..core.ids import node_id
from ..core.settings import Layer, SettingError, parse_layer, resolve
from ..run.session import GpuPerfSession
from .options import GpuperfDeprecationWarning, get_session

if TYPE_CHECKING:
    from ..hardware import marks


def dtype_param(item: pytest.Item) -> marks.DTypeSpec | None:
    from ..hardware import marks

    callspec = getattr(item, "callspec", None)
    value = callspec.params.get("gpu_dtype") if callspec is not None else None
    return value if isinstance(value, marks.DTypeSpec) else None


@pytest.fixture(scope="session")
def gpu_device(pytestconfig: pytest.Config) -> Any:
    """The DeviceSnapshot of this machine (GPUs visible to this process, or the CPU)."""
    return get_session(pytestconfig).snapshot()


@pytest.fixture(scope="session")
def gpu_emulation(pytestconfig: pytest.Config) -> Any:
    """The Profile whose memory is emulated (--gpuperf-emulate), or None. On a GPU the cap is in
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
    spec = dtype_param(node) if isinstance(node, pytest.Item) else None
    if spec is None:
        raise pytest.UsageError(
            f"{node.nodeid}: the gpu_dtype/gpu_dtype_spec fixtures need "
            "@pytest.mark.gpu_dtype('fp16', 'bf16', ...) on the test"
        )
    return spec


@pytest.fixture
def gpu_dtype_spec(request: pytest.FixtureRequest) -> marks.DTypeSpec:
    """The DTypeSpec (name, torch dtype, bytes per element) of a @pytest.mark.gpu_dtype test."""
    return _spec_for(request)


@pytest.fixture
def gpu_dtype(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The torch dtype of a test parametrized by @pytest.mark.gpu_dtype.

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
# the GPU memory each live fixture's setup allocated (memory.FixtureMemory), per run
FIXTURE_MEMORY_KEY = pytest.StashKey[Any]()
# another test's memory when this test's setup began (memory.FixtureMemory.begin)
FOREIGN_KEY = pytest.StashKey["int | None"]()


def fixture_memory(config: pytest.Config) -> Any:
    """The run's memory.FixtureMemory, made on first use."""
    held = config.stash.get(FIXTURE_MEMORY_KEY, None)
    if held is None:
        from ..measure.memory import FixtureMemory

        held = config.stash[FIXTURE_MEMORY_KEY] = FixtureMemory()
    return held


def _foreign_reader(item: pytest.Item) -> Any:
    """A callable: bytes of another test's GPU memory resident now, at most (None without
    CUDA): what was foreign when the test's setup began and is not its fixtures' now."""
    from ..measure.memory import allocated_now, foreign_now

    held = fixture_memory(item.config)
    names = tuple(getattr(item, "fixturenames", ()))

    def read() -> int | None:
        at_setup = item.stash.get(FOREIGN_KEY, None)
        return foreign_now(at_setup, held.own(names), allocated_now())

    return read


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
    from ..hardware.nvml import nvml
    from ..measure.telemetry import Sampler

    lib = nvml()
    handle = lib.query("nvmlDeviceGetHandleByUUID", gpu.uuid)
    if handle is not None and gpu.is_mig_instance:  # clocks and power live on the parent
        handle = lib.query("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle)
    if handle is None:
        return None
    return lambda interval: Sampler(lib, handle, interval=interval)


# the run's gpushare.ProcessWatch (None: no GPU NVML can name), made on first use
PROCESS_WATCH_KEY = pytest.StashKey[Any]()


def _process_watch(config: pytest.Config, sess: GpuPerfSession) -> Any:
    """The run's watch of the other processes on the benchmark's device: its MIG
    instance's own handle on a MIG slice (a neighbour slice has SMs of its own)."""
    if PROCESS_WATCH_KEY in config.stash:
        return config.stash[PROCESS_WATCH_KEY]
    gpu, watch = sess.snapshot().primary, None
    if gpu is not None and gpu.uuid is not None:
        from ..hardware.nvml import nvml
        from ..measure.gpushare import ProcessWatch

        lib = nvml()
        handle = lib.query("nvmlDeviceGetHandleByUUID", gpu.uuid)
        watch = ProcessWatch(lib, handle) if handle is not None else None
    config.stash[PROCESS_WATCH_KEY] = watch
    return watch


def _gpus_used(item: Any) -> int:
    """The GPUs a test uses, from its gpu_requires_gpus marker (one without it)."""
    marker = item.get_closest_marker("gpu_requires_gpus") if isinstance(item, pytest.Item) else None
    if marker is None:
        return 1
    from ..hardware import marks

    try:
        return int(marks.parse_requires_gpus(marker.args, dict(marker.kwargs)).count)
    except marks.MarkerError:  # reported by the marker checks at collection
        return 1


def _vram_asked(item: Any) -> int | None:
    """The GPU memory a test asks (its gpu_requires_vram markers' most), None without one."""
    if not isinstance(item, pytest.Item):
        return None
    from ..hardware import marks

    return marks.vram_asked(item)


@pytest.fixture
def gpu_benchmark(request: pytest.FixtureRequest) -> Any:
    """Measure work with correct GPU timing: `gpu_benchmark(fn, work=n, unit="tokens")`.

    Returns a Result: throughput in the unit's per-second form with its 95% interval, time
    statistics, raw samples, peak memory, NVML telemetry (clocks, throttling, energy per
    unit), GPU busy fraction and a launch-bound flag. On the CPU the same code times with
    time.perf_counter.
    """
    from ..measure.bench import GpuBenchmark
    from ..run.benchflags import disabled as benchmarks_disabled

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
        foreign=_foreign_reader(item) if isinstance(item, pytest.Item) else None,
        processes=_process_watch(request.config, sess) if snap.kind == "cuda" else None,
        test_settings=layers[-1],  # the marker's
        vram_asked=_vram_asked(item),
    )
    item.stash[BENCH_KEY] = bench
    return bench


def _params(item: pytest.Item) -> dict[str, Any]:
    """The test's parameters as plain JSON (results.plain_params), for its results."""
    from ..core.results import plain_params

    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return {}
    params = plain_params(callspec.params, callspec.indices)
    if "gpu_dtype" in params and "dtype" not in params:
        # the gpu_dtype marker's parameter, recorded as "dtype" as before the marker was
        # prefixed, so results and reports of older runs chart with newer ones
        params = {("dtype" if k == "gpu_dtype" else k): v for k, v in params.items()}
    return params


def _progress_writer(config: pytest.Config) -> Any:
    """Write a progress line to the terminal while a test runs (output capture suspended),
    unless -q; lines meant for -v only wait for -v. None under pytest-xdist workers."""
    verbosity = config.get_verbosity()
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    from ..fresh.workers import is_worker

    if verbosity < 0 or tr is None or is_worker(config):
        return None

    def write(line: str, verbose_only: bool) -> None:
        if verbose_only and verbosity < 1:
            return
        from ..outputs.text import plain

        if capman is not None:
            with capman.global_and_fixture_disabled():
                tr.write_line(f"  gpuperf: {plain(line)}")
        else:
            tr.write_line(f"  gpuperf: {plain(line)}")

    return write


@pytest.fixture
def gpu_cast_audit() -> Any:
    """A factory of CastAudit context managers that count the dtype conversions (and the
    bytes they move) inside the work they wrap: `with gpu_cast_audit() as audit: step()`."""
    from ..measure.casts import CastAudit

    return CastAudit


@pytest.fixture
def cast_audit(gpu_cast_audit: Any) -> Any:
    """Deprecated: the old name of gpu_cast_audit (the plugin's fixtures are named gpu_*,
    so that a project's own names stay its own); warns, naming the new one."""
    import warnings

    warnings.warn(
        GpuperfDeprecationWarning(
            "gpuperf: the cast_audit fixture is deprecated: use gpu_cast_audit (the same "
            "factory)"
        ),
        stacklevel=2,
    )
    return gpu_cast_audit

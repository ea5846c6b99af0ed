"""Test doubles for hardware. Used only by unit tests; the real NVML and CUDA paths run on
a GPU (see docs/performance.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pytest_gpuperf.hardware.device import DeviceSnapshot, GPUInfo

MIB = 1024**2

# (name NVML reports, memory NVML reports in MiB, compute capability, expected profile).
# The H200 row is what our H200 reported (docs/performance.md); the others are the names
# and totals these cards report through nvidia-smi / NVML.
RECORDED = [
    ("NVIDIA H200", 143771, (9, 0), "h200"),
    ("NVIDIA A100-SXM4-40GB", 40960, (8, 0), "a100-40gb"),
    ("NVIDIA A100-PCIE-40GB", 40960, (8, 0), "a100-40gb"),
    ("NVIDIA A100-SXM4-80GB", 81920, (8, 0), "a100-80gb"),
    ("NVIDIA A100 80GB PCIe", 81920, (8, 0), "a100-80gb"),
    ("NVIDIA H100 80GB HBM3", 81559, (9, 0), "h100"),
    ("NVIDIA H100 PCIe", 81559, (9, 0), "h100"),
    ("NVIDIA H100 NVL", 95830, (9, 0), "h100"),
    ("NVIDIA L40S", 46068, (8, 9), "l40s"),
    ("NVIDIA L4", 23034, (8, 9), "l4"),
    ("NVIDIA A10G", 23028, (8, 6), "a10g"),
    ("NVIDIA RTX 6000 Ada Generation", 49140, (8, 9), "rtx-6000-ada"),
    ("NVIDIA RTX A6000", 49140, (8, 6), "rtx-a6000"),
    ("Tesla T4", 15360, (7, 5), "t4"),
]


def gpu(
    name: str = "NVIDIA H200", mib: int = 143771, cc: tuple[int, int] = (9, 0), **kw: Any
) -> GPUInfo:
    kw.setdefault("uuid", "GPU-fake")
    return GPUInfo(
        index=0,
        name=name,
        memory_total=mib * MIB,
        compute_capability=cc,
        mig_mode=False,
        **kw,
    )


def snapshot(*gpus: GPUInfo) -> DeviceSnapshot:
    if not gpus:
        return DeviceSnapshot(
            kind="cpu",
            cpu_model="Fake CPU",
            cpu_cores=2,
            host_memory=8 * 1024 * MIB,
            note="test double: no GPU",
        )
    return DeviceSnapshot(
        kind="cuda",
        gpus=tuple(gpus),
        driver_version="580.00",
        cuda_driver_version="13.0",
        source="nvml",
    )


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


@dataclass
class FakeDev:
    name: str
    mib: int
    cc: tuple[int, int]
    uuid: str
    mig: bool = False
    instances: list[FakeDev] = field(default_factory=list)
    nvlinks: int = 0  # active NVLinks; two GPUs that both have some reach each other by NVLink
    pcie: tuple[int, int] = (5, 16)  # PCIe generation and width


class FakePynvml:
    """Just enough of pynvml's surface for device detection."""

    NVML_CLOCK_SM = 1

    def __init__(self, devices: list[FakeDev], fail_init: bool = False) -> None:
        self.devices = devices
        self.fail_init = fail_init
        self.calls: list[str] = []

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise NVMLError("Driver Not Loaded")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeDev:
        return self.devices[i]

    def nvmlDeviceGetName(self, h: FakeDev) -> bytes:
        return h.name.encode()

    def nvmlDeviceGetUUID(self, h: FakeDev) -> str:
        return h.uuid

    def nvmlDeviceGetMemoryInfo(self, h: FakeDev) -> SimpleNamespace:
        return SimpleNamespace(total=h.mib * MIB, free=h.mib * MIB, used=0)

    def nvmlDeviceGetCudaComputeCapability(self, h: FakeDev) -> tuple[int, int]:
        return h.cc

    def nvmlDeviceGetMigMode(self, h: FakeDev) -> tuple[int, int]:
        if h.uuid.startswith("MIG-"):
            raise NVMLError_NotSupported()
        return (int(h.mig), int(h.mig))

    def nvmlDeviceGetMaxMigDeviceCount(self, h: FakeDev) -> int:
        return 7 if h.mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: FakeDev, i: int) -> FakeDev:
        if i >= len(h.instances):
            raise NVMLError("not found")
        return h.instances[i]

    def nvmlDeviceGetPowerManagementLimit(self, h: FakeDev) -> int:
        raise NVMLError_NotSupported()

    def nvmlDeviceGetMaxClockInfo(self, h: FakeDev, clock: int) -> int:
        return 1980

    def nvmlDeviceGetPciInfo(self, h: FakeDev) -> SimpleNamespace:
        return SimpleNamespace(busId=b"00000000:01:00.0")

    NVML_P2P_CAPS_INDEX_NVLINK = 2
    NVML_P2P_STATUS_OK = 0
    NVML_FEATURE_ENABLED = 1
    NVML_NVLINK_MAX_LINKS = 18
    topology_level = 30  # PHB: the two GPUs meet at the CPU's host bridge

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> FakeDev:
        for d in self.devices:
            if d.uuid == uuid:
                return d
        raise NVMLError("Not Found")

    def nvmlDeviceGetP2PStatus(self, a: FakeDev, b: FakeDev, index: int) -> int:
        assert index == self.NVML_P2P_CAPS_INDEX_NVLINK
        return 0 if a.nvlinks and b.nvlinks else 4  # 4: NVML_P2P_STATUS_NOT_SUPPORTED

    def nvmlDeviceGetNvLinkState(self, h: FakeDev, link: int) -> int:
        if link >= self.NVML_NVLINK_MAX_LINKS:
            raise NVMLError("Invalid Argument")
        return 1 if link < h.nvlinks else 0

    def nvmlDeviceGetTopologyCommonAncestor(self, a: FakeDev, b: FakeDev) -> int:
        return self.topology_level

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: FakeDev) -> int:
        return h.pcie[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: FakeDev) -> int:
        return h.pcie[1]

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.159.04"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 13000

    def nvmlShutdown(self) -> None:
        pass


# A conftest for pytester sessions: a 2-GPU H200 host with NVLink, set through the plugin's
# session API (tests of multi-GPU baselines and of pytest-xdist deferral).
TWO_GPU_HOST = """
import dataclasses

from pytest_gpuperf.plugin import get_session
from tests.fakes import gpu, snapshot

HOST = dataclasses.replace(
    snapshot(gpu(uuid="GPU-a"), dataclasses.replace(gpu(uuid="GPU-b"), index=1)),
    interconnect="NVLink (18 links)",
)

def pytest_configure(config):
    get_session(config).set_snapshot(HOST)
"""


class FakeCudaMemory:
    """torch.cuda's memory API over a caching allocator reduced to its arithmetic: a freed
    block stays reserved (cached) until empty_cache(); an allocation takes cached bytes
    first, then reserves new ones; the peaks follow both counters until reset. Also enough
    of torch.cuda for the measuring engine's CUDA path: events on a clock that moves by
    `tick` seconds per read, synchronize(), is_initialized()."""

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, tick: float = 1e-3) -> None:
        self.allocated = self.cached = 0
        self.max_allocated = self.max_reserved = 0
        self.calls: list[str] = []
        self.now, self.tick = 0.0, tick
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                fake.now += fake.tick
                self.t = fake.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Any) -> float:
                return (end.t - self.t) * 1e3

        self.Event = Event

    @property
    def reserved(self) -> int:
        return self.allocated + self.cached

    def alloc(self, n: int) -> None:
        self.cached = max(0, self.cached - n)
        self.allocated += n
        self.max_allocated = max(self.max_allocated, self.allocated)
        self.max_reserved = max(self.max_reserved, self.reserved)

    def free(self, n: int) -> None:
        self.allocated -= n
        self.cached += n

    # torch.cuda's names
    def is_initialized(self) -> bool:
        return True

    def synchronize(self) -> None:
        self.calls.append("synchronize")

    def empty_cache(self) -> None:
        self.calls.append("empty_cache")
        self.cached = 0

    def reset_peak_memory_stats(self) -> None:
        self.calls.append("reset_peak_memory_stats")
        self.max_allocated, self.max_reserved = self.allocated, self.reserved

    def memory_allocated(self) -> int:
        return self.allocated

    def memory_reserved(self) -> int:
        return self.reserved

    def max_memory_allocated(self) -> int:
        return self.max_allocated

    def max_memory_reserved(self) -> int:
        return self.max_reserved


def fake_torch(cuda: FakeCudaMemory) -> SimpleNamespace:
    """A stand-in for the torch module whose `cuda` is `cuda` (sys.modules["torch"] in a
    test, so the engine's lazy `import torch` finds it)."""
    return SimpleNamespace(cuda=cuda)


class FakeProcessNvml:
    """Just enough of pynvml for the list of compute processes on a device (gpushare.py):
    `procs` is {pid: used bytes or None}; `refuse` raises that error for every list (a
    MIG slice without permission, NotSupported); names in `missing` are absent, as in an
    older binding without the _v3 call."""

    def __init__(self, procs: dict[int, int | None], refuse: Exception | None = None,
                 missing: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.procs, self.refuse, self.missing = procs, refuse, missing
        self.calls: list[str] = []

    def nvmlInit(self) -> None:
        pass

    def _list(self, name: str) -> list[SimpleNamespace]:
        self.calls.append(name)
        if self.refuse is not None:
            raise self.refuse
        if "MPS" in name:
            return []
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in self.procs.items()]

    def __getattr__(self, name: str) -> Any:
        if "RunningProcesses" in name and name not in self.missing:
            return lambda handle: self._list(name)
        raise AttributeError(name)


# A conftest for pytester sessions: one H200 whose NVML lists this process and, with
# FOREIGN=<pid> in the environment, that one too; the engine times on the CPU (vclock)
# and stamps the results as CUDA ones, so the run judges and saves as on a GPU.
SHARED_GPU_HOST = """
import os

import pytest

import vclock
from pytest_gpuperf.hardware.nvml import NVML
from pytest_gpuperf.measure import bench, timing
from pytest_gpuperf.measure.gpushare import ProcessWatch
from pytest_gpuperf.plugin import get_session
from pytest_gpuperf.plugin.fixtures import PROCESS_WATCH_KEY
from tests.fakes import FakeProcessNvml, gpu, snapshot

SEED = vclock.next_seed(__import__("pathlib").Path.cwd())
MP = pytest.MonkeyPatch()


@pytest.fixture(autouse=True)
def virtual_clock(monkeypatch):
    return vclock.install(monkeypatch, SEED)


def measure_as_cuda(fn, **kw):
    r = timing.measure(fn, **{**kw, "backend": "cpu", "telemetry": None})
    r.backend = "cuda"
    return r


def pytest_configure(config):
    get_session(config).set_snapshot(snapshot(gpu()))
    MP.setattr(bench, "measure", measure_as_cuda)
    procs = {os.getpid(): 1 << 30}
    if os.environ.get("FOREIGN"):
        procs[int(os.environ["FOREIGN"])] = 3 << 30
    lib = NVML(loader=lambda: FakeProcessNvml(procs))
    config.stash[PROCESS_WATCH_KEY] = ProcessWatch(lib, "handle", parent=lambda pid: None)


def pytest_unconfigure(config):
    MP.undo()
"""

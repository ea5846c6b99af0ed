"""What hardware this is: one snapshot of the GPUs this process can use, or of the CPU.

NVML answers what it can (name, UUID, memory, compute capability, MIG, power limit, clocks,
driver and CUDA driver versions); torch answers only when NVML cannot, and only when torch
is already imported or `use_torch=True` is asked for. Library versions come from package
metadata, so taking a snapshot never imports torch, transformers, peft or bitsandbytes.
The snapshot is plain frozen data, safe to print, compare, store in baselines and rebuild
from JSON.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from ..core.units import format_size
from .nvml import NVML, nvml

TRACKED_PACKAGES = (
    "torch",
    "transformers",
    "peft",
    "bitsandbytes",
    "pytest",
    "pytest-benchmark",
    "nvidia-ml-py",
    "pytest-gpuperf",
    "nvidia-nccl-cu13",  # NCCL as torch's CUDA wheels ship it
    "nvidia-nccl-cu12",
)


@dataclass(frozen=True)
class GPUInfo:
    """One visible GPU, or one MIG instance of a GPU."""

    index: int
    name: str
    uuid: str | None = None
    memory_total: int | None = None  # bytes usable by this process (the slice's, on MIG)
    compute_capability: tuple[int, int] | None = None
    mig_mode: bool | None = None  # MIG enabled on the physical GPU
    mig_profile: str | None = None  # e.g. "1g.18gb" when this is a MIG instance
    parent_name: str | None = None  # the physical GPU's name when this is a MIG instance
    parent_memory_total: int | None = None
    power_limit_w: float | None = None
    max_sm_clock_mhz: int | None = None
    pci_bus_id: str | None = None

    @property
    def is_mig_instance(self) -> bool:
        return self.mig_profile is not None

    @property
    def bf16(self) -> bool | None:
        cc = self.compute_capability
        return None if cc is None else cc >= (8, 0)

    @property
    def capability_str(self) -> str:
        cc = self.compute_capability
        return "?" if cc is None else f"{cc[0]}.{cc[1]}"


@dataclass(frozen=True)
class DeviceSnapshot:
    """Everything a result depends on that is not the code under test."""

    kind: str  # "cuda" or "cpu"
    gpus: tuple[GPUInfo, ...] = ()
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # highest CUDA version the driver supports
    cpu_model: str | None = None
    cpu_cores: int | None = None
    host_memory: int | None = None
    hostname: str | None = None
    python: str = field(default_factory=lambda: platform.python_version())
    packages: dict[str, str] = field(default_factory=dict)
    source: str = "cpu"  # "nvml", "torch" or "cpu": who answered
    note: str | None = None  # why there is no GPU, when there is none
    # how the first two visible GPUs are connected: "NVLink (18 links)", "PCIe (PHB)", ...;
    # None with fewer than two GPUs or when NVML cannot say
    interconnect: str | None = None

    @property
    def gpu_count(self) -> int:
        return len(self.gpus)

    @property
    def primary(self) -> GPUInfo | None:
        """The GPU a test gets by default: the first visible one."""
        return self.gpus[0] if self.gpus else None

    def describe(self, short: bool = False) -> str:
        """One line for headers and reports (`short`: without why no GPU is visible)."""
        gpu = self.primary
        if gpu is None:
            why = "" if short else f" (no GPU: {self.note or 'none visible'})"
            return (
                f"cpu: {self.cpu_model or 'unknown CPU'}, {self.cpu_cores or '?'} cores, "
                f"{format_size(self.host_memory)} RAM{why}"
            )
        mig = f" MIG {gpu.mig_profile} of {gpu.parent_name}" if gpu.is_mig_instance else ""
        count = f"{self.gpu_count}x " if self.gpu_count > 1 else ""
        return (
            f"{count}{gpu.name}{mig}, {format_size(gpu.memory_total)}, "
            f"sm_{gpu.capability_str.replace('.', '')}, driver {self.driver_version or '?'}, "
            f"CUDA {self.cuda_driver_version or '?'}, torch {self.packages.get('torch', '-')}"
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceSnapshot:
        gpus = []
        for g in data.get("gpus", ()):
            g = dict(g)
            if g.get("compute_capability") is not None:
                g["compute_capability"] = tuple(g["compute_capability"])
            gpus.append(GPUInfo(**g))
        fields = {f.name for f in dataclasses.fields(cls)}
        rest = {k: v for k, v in data.items() if k in fields and k != "gpus"}
        return cls(gpus=tuple(gpus), **rest)

    def lines(self) -> list[str]:
        """A multi-line description for `pytest --gpuperf-info`."""
        by = f" (detected by {self.source})" if self.source != self.kind else ""
        out = [f"device: {self.kind}{by}"]
        for g in self.gpus:
            out.append(f"  gpu {g.index}: {g.name}")
            if g.is_mig_instance:
                out.append(f"    MIG instance {g.mig_profile} of {g.parent_name}")
            out += [
                f"    uuid: {g.uuid or 'n/a'}",
                f"    memory: {format_size(g.memory_total)}",
                f"    compute capability: {g.capability_str} (bf16: {_yn(g.bf16)})",
                f"    MIG mode: {_yn(g.mig_mode)}",
                f"    power limit: {_num(g.power_limit_w, 'W')}",
                f"    max SM clock: {_num(g.max_sm_clock_mhz, 'MHz')}",
            ]
        if self.kind == "cuda":
            out.append(f"  visible GPUs: {self.gpu_count}")
            if self.gpu_count > 1:
                out.append(f"  interconnect (GPU 0-1): {self.interconnect or 'n/a'}")
            out.append(f"  driver: {self.driver_version or 'n/a'}")
            out.append(f"  CUDA (driver): {self.cuda_driver_version or 'n/a'}")
        else:
            out.append(f"  no GPU: {self.note or 'none visible'}")
        out.append(f"  cpu: {self.cpu_model or 'n/a'}, {self.cpu_cores or '?'} cores")
        out.append(f"  host memory: {format_size(self.host_memory)}")
        out.append(f"  python: {self.python}")
        for name in TRACKED_PACKAGES:
            out.append(f"  {name}: {self.packages.get(name, 'not installed')}")
        return out


def _yn(v: bool | None) -> str:
    return "n/a" if v is None else ("yes" if v else "no")


def _num(v: float | None, unit: str) -> str:
    return "n/a" if v is None else f"{v:g} {unit}"


# --------------------------------------------------------------------------------------
# detection


def nccl_version(packages: dict[str, str]) -> str | None:
    """NCCL's version, from the wheel torch's CUDA builds install (no torch import)."""
    return packages.get("nvidia-nccl-cu13") or packages.get("nvidia-nccl-cu12")


def package_versions() -> dict[str, str]:
    out = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _host_memory() -> int | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        return int(pages * size)
    except (ValueError, OSError, AttributeError):
        return None


def _cpu_cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count()


def visible_device_filter(env: str | None) -> list[str] | None:
    """Parse CUDA_VISIBLE_DEVICES: None = all visible, [] = none, else indices or UUIDs."""
    if env is None:
        return None
    items = [s.strip() for s in env.split(",")]
    out: list[str] = []
    for item in items:
        if not item:
            break
        if item.lstrip("-").isdigit() and int(item) < 0:
            break  # CUDA stops at the first invalid entry
        out.append(item)
    return out


def _nvml_gpu(lib: NVML, handle: Any, index: int) -> GPUInfo:
    mem = lib.query("nvmlDeviceGetMemoryInfo", handle)
    cc = lib.query("nvmlDeviceGetCudaComputeCapability", handle)
    mig = lib.query("nvmlDeviceGetMigMode", handle)
    power = lib.query("nvmlDeviceGetPowerManagementLimit", handle)
    pci = lib.query("nvmlDeviceGetPciInfo", handle)
    bus = getattr(pci, "busId", None) if pci is not None else None
    if isinstance(bus, bytes):
        bus = bus.decode(errors="replace")
    return GPUInfo(
        index=index,
        name=lib.query("nvmlDeviceGetName", handle, default="unknown GPU"),
        uuid=lib.query("nvmlDeviceGetUUID", handle),
        memory_total=int(mem.total) if mem is not None else None,
        compute_capability=(int(cc[0]), int(cc[1])) if cc is not None else None,
        mig_mode=bool(mig[0]) if mig is not None else None,
        power_limit_w=power / 1000.0 if power is not None else None,
        max_sm_clock_mhz=lib.query(
            "nvmlDeviceGetMaxClockInfo", handle, lib.constant("NVML_CLOCK_SM", 1)
        ),
        pci_bus_id=bus,
    )


def _nvml_mig_instances(lib: NVML, handle: Any, parent: GPUInfo) -> list[GPUInfo]:
    count = lib.query("nvmlDeviceGetMaxMigDeviceCount", handle, default=0) or 0
    out = []
    for i in range(count):
        mh = lib.query("nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
        if mh is None:
            continue
        name = lib.query("nvmlDeviceGetName", mh, default="") or ""
        mem = lib.query("nvmlDeviceGetMemoryInfo", mh)
        out.append(
            dataclasses.replace(
                parent,
                name=name or parent.name,
                uuid=lib.query("nvmlDeviceGetUUID", mh),
                memory_total=int(mem.total) if mem is not None else None,
                mig_profile=mig_profile_from_name(name),
                parent_name=parent.name,
                parent_memory_total=parent.memory_total,
            )
        )
    return out


def mig_profile_from_name(name: str) -> str | None:
    """'NVIDIA A100-SXM4-40GB MIG 1g.5gb' -> '1g.5gb'."""
    parts = name.split(" MIG ")
    if len(parts) == 2 and parts[1].strip():
        return parts[1].strip().split()[0]
    return None


def _detect_nvml(lib: NVML, visible: list[str] | None) -> list[GPUInfo] | None:
    count = lib.query("nvmlDeviceGetCount")
    if count is None:
        return None
    physical: list[tuple[GPUInfo, list[GPUInfo]]] = []
    for i in range(count):
        handle = lib.query("nvmlDeviceGetHandleByIndex", i)
        if handle is None:
            continue
        gpu = _nvml_gpu(lib, handle, i)
        instances = _nvml_mig_instances(lib, handle, gpu) if gpu.mig_mode else []
        physical.append((gpu, instances))
    if visible is None:
        return [g for g, _ in physical]
    chosen: list[GPUInfo] = []
    for item in visible:
        found = None
        for gpu, instances in physical:
            by_index = item.isdigit() and gpu.index == int(item)
            if by_index or _uuid_matches(gpu.uuid, item):
                found = gpu
            for inst in instances:
                if _uuid_matches(inst.uuid, item):
                    found = inst
            if found:
                break
        if found is None:
            break  # CUDA stops at the first entry it cannot resolve
        chosen.append(found)
    return [dataclasses.replace(g, index=i) for i, g in enumerate(chosen)]


# nvidia-smi topo's names for NVML's common-ancestor levels between two GPUs
TOPOLOGY = {0: "same board", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def interconnect(lib: NVML, gpus: list[GPUInfo]) -> str | None:
    """How the first two visible GPUs talk: NVLink when NVML reports NVLink peer-to-peer
    between them (directly or through NVSwitch), with the first GPU's active link count;
    else PCIe with the topology level between them (PIX/PXB: a PCIe switch; PHB, NODE,
    SYS: through the CPU), as `nvidia-smi topo -m` names it."""
    whole = [g for g in gpus if not g.is_mig_instance and g.uuid]
    if len(whole) < 2:
        return None
    h0 = lib.query("nvmlDeviceGetHandleByUUID", whole[0].uuid)
    h1 = lib.query("nvmlDeviceGetHandleByUUID", whole[1].uuid)
    if h0 is None or h1 is None:
        return None
    status = lib.query(
        "nvmlDeviceGetP2PStatus", h0, h1, lib.constant("NVML_P2P_CAPS_INDEX_NVLINK", 2)
    )
    if status is not None and status == lib.constant("NVML_P2P_STATUS_OK", 0):
        enabled = lib.constant("NVML_FEATURE_ENABLED", 1)
        links = sum(
            1
            for link in range(lib.constant("NVML_NVLINK_MAX_LINKS", 18))
            if lib.query("nvmlDeviceGetNvLinkState", h0, link) == enabled
        )
        return f"NVLink ({links} links)" if links else "NVLink"
    level = lib.query("nvmlDeviceGetTopologyCommonAncestor", h0, h1)
    gen = lib.query("nvmlDeviceGetCurrPcieLinkGeneration", h0)
    width = lib.query("nvmlDeviceGetCurrPcieLinkWidth", h0)
    link = f"gen{gen} x{width}, " if gen and width else ""
    if level is None:
        return f"PCIe ({link.rstrip(', ')})" if link else None
    return f"PCIe ({link}{TOPOLOGY.get(int(level), f'level {level}')})"


def _uuid_matches(uuid: str | None, item: str) -> bool:
    return uuid is not None and (uuid == item or uuid.startswith(item))  # CUDA takes prefixes


def _detect_torch() -> list[GPUInfo] | None:
    try:
        import torch
    except ImportError:
        return None
    try:
        if not torch.cuda.is_available():
            return []
        out = []
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            uuid = getattr(p, "uuid", None)
            out.append(
                GPUInfo(
                    index=i,
                    name=p.name,
                    uuid=f"GPU-{uuid}" if uuid is not None else None,
                    memory_total=int(p.total_memory),
                    compute_capability=(int(p.major), int(p.minor)),
                    mig_profile=mig_profile_from_name(p.name),
                )
            )
        return out
    except Exception:
        return None


def detect(lib: NVML | None = None, use_torch: bool | None = None) -> DeviceSnapshot:
    """Take a snapshot of this machine.

    `use_torch`: None asks torch only if NVML cannot answer and torch is already imported;
    True asks torch whenever NVML cannot answer; False never.
    """
    lib = lib or nvml()
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    visible = visible_device_filter(env)
    host: dict[str, Any] = dict(
        cpu_model=_cpu_model(),
        cpu_cores=_cpu_cores(),
        host_memory=_host_memory(),
        hostname=platform.node() or None,
        packages=package_versions(),
    )
    if visible == []:
        return DeviceSnapshot(kind="cpu", note=f"CUDA_VISIBLE_DEVICES={env!r}", **host)
    gpus = _detect_nvml(lib, visible)
    source = "nvml"
    if gpus is None and (use_torch or (use_torch is None and "torch" in sys.modules)):
        gpus = _detect_torch()
        source = "torch"
    if not gpus:
        note = "no GPU found"
        if lib.error:
            note = (
                "NVML library not found (no NVIDIA driver)"
                if "LibraryNotFound" in lib.error
                else f"NVML unavailable: {lib.error.splitlines()[0][:80]}"
            )
        return DeviceSnapshot(kind="cpu", note=note, **host)
    driver = lib.query("nvmlSystemGetDriverVersion")
    cuda = lib.query("nvmlSystemGetCudaDriverVersion_v2") or lib.query(
        "nvmlSystemGetCudaDriverVersion"
    )
    cuda_str = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None
    return DeviceSnapshot(
        kind="cuda",
        gpus=tuple(gpus),
        driver_version=driver,
        cuda_driver_version=cuda_str,
        source=source,
        interconnect=interconnect(lib, gpus) if source == "nvml" else None,
        **host,
    )

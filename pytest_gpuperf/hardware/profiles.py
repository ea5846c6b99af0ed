"""GPU profiles: the kinds of GPU a baseline can belong to.

A profile says how to recognise a device (a regular expression on the name NVML reports,
and a memory range to tell the 40 GB A100 from the 80 GB one) and what the card offers.
Values come from NVIDIA's data sheets and MIG user guide; a value we could not source is
left as None rather than invented. Prices per hour are dated defaults for the cost figures
of the HTML report (PRICE_SOURCE says where from); users set their own in pyproject.toml.

Users add or override profiles in pyproject.toml:

    [tool.gpuperf.profiles.my-a100]
    match = "A100.*40GB"          # regular expression on the device name
    memory_gib = 40
    compute_capability = "8.0"
    price_per_hour = 1.29
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .device import DeviceSnapshot, GPUInfo

GIB = 1024**3

# The built-in prices: on-demand cloud rates of May 2026, the middle of the range listed for
# "specialty" GPU clouds (A100 80GB $1.10-1.50, H100 SXM5 $2.50-3.50, H200 SXM5 $3.50-4.50 per
# GPU-hour) by https://www.mercatus-ai.com/blog/cloud-gpu-pricing. Prices differ 2-3x between
# providers: override them with your own (price_per_hour in pyproject.toml).
PRICE_SOURCE = "cloud on-demand rate, May 2026 (mercatus-ai.com, specialty-cloud midpoint)"


@dataclass(frozen=True)
class MigSlice:
    profile: str  # "1g.5gb"
    count: int  # how many fit on one GPU at once
    memory_gib: float  # memory each slice exposes


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    match: str | None  # regex on the device name; None = matched by kind (cpu)
    memory_gib: float | None = None  # nominal memory as marketed
    min_memory_gib: float | None = None  # memory range reported by the device, to match
    max_memory_gib: float | None = None
    compute_capability: str | None = None
    bf16: bool | None = None
    tf32: bool | None = None
    fp8: bool | None = None
    nvlink: bool | None = None
    # nominal NVLink bandwidth per direction between two GPUs of this kind, GB/s (data
    # sheets: NVLink 3 on A100 SXM 600 GB/s both ways, NVLink 4 on H100/H200 900 GB/s)
    nvlink_gbps: float | None = None
    mig: tuple[MigSlice, ...] = ()
    price_per_hour: float | None = None
    source: str = "built-in"

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig)

    def mig_total_gib(self, slice_profile: str) -> float | None:
        """Memory exposed by filling the GPU with one slice type (e.g. 7 x 1g.5gb = 35)."""
        for s in self.mig:
            if s.profile == slice_profile:
                return s.count * s.memory_gib
        return None

    def matches_gpu(self, gpu: GPUInfo) -> bool:
        if self.match is None:
            return False
        name = gpu.parent_name if gpu.is_mig_instance and gpu.parent_name else gpu.name
        if not re.search(self.match, name, flags=re.IGNORECASE):
            return False
        mem = gpu.parent_memory_total if gpu.is_mig_instance else gpu.memory_total
        if mem is not None:
            gib = mem / GIB
            if self.min_memory_gib is not None and gib < self.min_memory_gib:
                return False
            if self.max_memory_gib is not None and gib > self.max_memory_gib:
                return False
        return True

    def summary(self) -> str:
        bits = [self.description]
        if self.memory_gib:
            bits.append(f"{self.memory_gib:g} GB")
        if self.compute_capability:
            bits.append(f"sm {self.compute_capability}")
        feats = [n for n, v in (("bf16", self.bf16), ("tf32", self.tf32), ("fp8", self.fp8)) if v]
        if feats:
            bits.append("/".join(feats))
        if self.mig:
            bits.append("MIG " + " ".join(f"{s.count}x{s.profile}" for s in self.mig))
        if self.nvlink:
            bits.append("NVLink")
        if self.price_per_hour is not None:
            bits.append(f"${self.price_per_hour:g}/h")
        if self.source != "built-in":
            bits.append(f"[{self.source}]")
        return ", ".join(bits)


def _mig(*slices: tuple[str, int, float]) -> tuple[MigSlice, ...]:
    return tuple(MigSlice(p, c, m) for p, c, m in slices)


# Sources: NVIDIA data sheets for each product; NVIDIA Multi-Instance GPU User Guide,
# "Supported MIG Profiles" (A100 40/80 GB, H100 80 GB, H200 141 GB tables); CUDA
# programming guide, compute capability table. Memory ranges are what NVML reports
# (e.g. the H200 reports 143771 MiB = 140.4 GiB; an A100 40 GB reports 40960 MiB).
BUILTIN: tuple[Profile, ...] = (
    Profile(
        "a100-40gb",
        "NVIDIA A100 40 GB",
        r"\bA100\b",
        40,
        30,
        45,
        "8.0",
        bf16=True,
        tf32=True,
        fp8=False,
        nvlink=None,
        nvlink_gbps=300,
        mig=_mig(
            ("1g.5gb", 7, 5),
            ("2g.10gb", 3, 10),
            ("3g.20gb", 2, 20),
            ("4g.20gb", 1, 20),
            ("7g.40gb", 1, 40),
        ),
    ),
    Profile(
        "a100-80gb",
        "NVIDIA A100 80 GB",
        r"\bA100\b",
        80,
        70,
        90,
        "8.0",
        bf16=True,
        tf32=True,
        fp8=False,
        nvlink=None,
        price_per_hour=1.3,
        nvlink_gbps=300,
        mig=_mig(
            ("1g.10gb", 7, 10),
            ("1g.20gb", 4, 20),
            ("2g.20gb", 3, 20),
            ("3g.40gb", 2, 40),
            ("4g.40gb", 1, 40),
            ("7g.80gb", 1, 80),
        ),
    ),
    Profile(
        "h100",
        "NVIDIA H100 (80/94 GB)",
        r"\bH100\b",
        80,
        70,
        100,
        "9.0",
        bf16=True,
        tf32=True,
        fp8=True,
        nvlink=None,
        price_per_hour=3.0,
        nvlink_gbps=450,
        mig=_mig(
            ("1g.10gb", 7, 10),
            ("1g.20gb", 4, 20),
            ("2g.20gb", 3, 20),
            ("3g.40gb", 2, 40),
            ("4g.40gb", 1, 40),
            ("7g.80gb", 1, 80),
        ),
    ),
    Profile(
        "h200",
        "NVIDIA H200 141 GB",
        r"\bH200\b",
        141,
        130,
        150,
        "9.0",
        bf16=True,
        tf32=True,
        fp8=True,
        nvlink=None,
        price_per_hour=4.0,
        nvlink_gbps=450,
        mig=_mig(
            ("1g.18gb", 7, 18),
            ("1g.35gb", 4, 35),
            ("2g.35gb", 3, 35),
            ("3g.71gb", 2, 71),
            ("4g.71gb", 1, 71),
            ("7g.141gb", 1, 141),
        ),
    ),
    Profile(
        "l40s",
        "NVIDIA L40S",
        r"\bL40S\b",
        48,
        40,
        50,
        "8.9",
        bf16=True,
        tf32=True,
        fp8=True,
        nvlink=False,
    ),
    Profile(
        "l4",
        "NVIDIA L4",
        r"\bL4\b",
        24,
        20,
        25,
        "8.9",
        bf16=True,
        tf32=True,
        fp8=True,
        nvlink=False,
    ),
    Profile(
        "a10g",
        "NVIDIA A10G",
        r"\bA10G\b",
        24,
        20,
        25,
        "8.6",
        bf16=True,
        tf32=True,
        fp8=False,
        nvlink=False,
    ),
    Profile(
        "rtx-6000-ada",
        'NVIDIA RTX 6000 Ada Generation ("A6000 Ada")',
        r"RTX 6000 Ada",
        48,
        40,
        50,
        "8.9",
        bf16=True,
        tf32=True,
        fp8=True,
        nvlink=False,
    ),
    Profile(
        "rtx-a6000",
        "NVIDIA RTX A6000",
        r"RTX A6000",
        48,
        40,
        50,
        "8.6",
        bf16=True,
        tf32=True,
        fp8=False,
        nvlink=True,
        nvlink_gbps=56.25,
    ),
    Profile(
        "t4",
        "NVIDIA T4",
        r"\bT4\b",
        16,
        14,
        17,
        "7.5",
        bf16=False,
        tf32=False,
        fp8=False,
        nvlink=False,
    ),
    Profile("cpu", "CPU only (the embedded default: no GPU)", None),
)

_PROFILE_FIELDS = {f.name for f in dataclasses.fields(Profile)}


class ProfileError(ValueError):
    pass


@dataclass
class Registry:
    profiles: dict[str, Profile] = field(default_factory=dict)

    @classmethod
    def builtin(cls) -> Registry:
        return cls({p.name: p for p in BUILTIN})

    def names(self) -> list[str]:
        return list(self.profiles)

    def get(self, name: str, snapshot: Callable[[], DeviceSnapshot] | None = None) -> Profile:
        """The profile `name` names, case-insensitive. A family name (`a100`, `h100`) names
        its one variant, or, where there are several (`a100-40gb`, `a100-80gb`), the one
        the detected GPU matches; `snapshot` detects it, only when needed."""
        if name in self.profiles:
            return self.profiles[name]
        lowered = {n.lower(): p for n, p in self.profiles.items()}
        key = name.strip().lower()
        if key in lowered:
            return lowered[key]
        family = [p for n, p in lowered.items() if n.startswith(key + "-")]
        if len(family) == 1:
            return family[0]
        if family:
            variants = ", ".join(p.name for p in family)
            snap = snapshot() if snapshot is not None else None
            gpu = snap.primary if snap is not None else None
            chosen = [p for p in family if gpu is not None and p.matches_gpu(gpu)]
            if len(chosen) == 1:
                return chosen[0]
            if snap is not None and gpu is None:
                cpu = self.match(snap)
                raise ProfileError(
                    f"{name!r} is a family of GPU profiles ({variants}), but this is a CPU "
                    f"machine ({snap.describe()}): use --gpu-profile="
                    f"{cpu.name if cpu else 'cpu'} (its profile) or --gpu-profile=auto; to "
                    f"judge against a GPU's baselines here anyway, name the variant, e.g. "
                    f"{family[0].name}, and pass --gpuperf-allow-mismatch"
                )
            seen = (
                f" and this machine ({snap.describe()}) matches none of them"
                if snap is not None
                else ""
            )
            raise ProfileError(
                f"{name!r} is a family of GPU profiles ({variants}){seen}: name the "
                f"variant, e.g. {family[0].name}"
            )
        import difflib

        close = difflib.get_close_matches(key, list(lowered), n=3, cutoff=0.5)
        names = " or ".join(repr(lowered[c].name) for c in close)
        hint = f"; did you mean {names}?" if close else ""
        raise ProfileError(
            f"unknown GPU profile {name!r}{hint} (known profiles: {', '.join(self.names())}); "
            f"a profile of your own can be added in pyproject.toml under "
            f"[tool.gpuperf.profiles.{key}] (match = a regex on the device name, memory_gib, "
            f"compute_capability)"
        )

    def add_user_profiles(self, table: Mapping[str, Any], source: str) -> None:
        for name, raw in table.items():
            self.profiles[name] = parse_user_profile(name, raw, source, self.profiles.get(name))

    def match(self, snapshot: DeviceSnapshot) -> Profile | None:
        """The profile of the device a test gets, or None if no profile knows it.

        User profiles are tried first, so a user can override a built-in one.
        """
        gpu = snapshot.primary
        if gpu is None:
            return self.profiles.get("cpu")
        ordered = sorted(self.profiles.values(), key=lambda p: p.source == "built-in")
        for p in ordered:
            if p.matches_gpu(gpu):
                return p
        return None


def parse_user_profile(name: str, raw: Any, source: str, base: Profile | None) -> Profile:
    where = f"{source}: [tool.gpuperf.profiles.{name}]"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise ProfileError(f"{where}: profile name must be letters, digits, '.', '_' or '-'")
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{where}: expected a table, got {type(raw).__name__}")
    unknown = set(raw) - _PROFILE_FIELDS - {"mig"}
    if unknown:
        raise ProfileError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_PROFILE_FIELDS - {'name', 'source'}))}"
        )
    values: dict[str, Any] = dataclasses.asdict(base) if base else {}
    values.pop("mig", None)
    mig = base.mig if base else ()
    values.update({k: v for k, v in raw.items() if k != "mig"})
    values["name"] = name
    values["source"] = source
    values.setdefault("description", name)
    if base is None and "match" not in raw:
        raise ProfileError(f"{where}: a new profile needs 'match' (a regex on the GPU name)")
    if values.get("match") is not None:
        try:
            re.compile(values["match"])
        except re.error as exc:
            raise ProfileError(f"{where}: bad 'match' regex {values['match']!r}: {exc}") from None
    for key in ("memory_gib", "min_memory_gib", "max_memory_gib", "price_per_hour", "nvlink_gbps"):
        v = values.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
            raise ProfileError(f"{where}: {key} must be a non-negative number, got {v!r}")
    cc = values.get("compute_capability")
    if cc is not None and (not isinstance(cc, str) or not re.fullmatch(r"\d+\.\d+", cc)):
        raise ProfileError(f'{where}: compute_capability must be like "8.0", got {cc!r}')
    for key in ("bf16", "tf32", "fp8", "nvlink"):
        v = values.get(key)
        if v is not None and not isinstance(v, bool):
            raise ProfileError(f"{where}: {key} must be true or false, got {v!r}")
    if "mig" in raw:
        mig = _parse_mig(raw["mig"], where)
    values["mig"] = mig
    return Profile(**values)


def _parse_mig(raw: Any, where: str) -> tuple[MigSlice, ...]:
    if not isinstance(raw, Mapping):
        raise ProfileError(f'{where}: mig must be a table like {{"1g.5gb" = 7}}')
    out = []
    for prof, count in raw.items():
        m = re.fullmatch(r"\d+g\.(\d+)gb", prof)
        if m is None or isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ProfileError(
                f"{where}: mig entry {prof!r} = {count!r}: expected '<n>g.<mem>gb' = count"
            )
        out.append(MigSlice(prof, count, float(m.group(1))))
    return tuple(out)


def load_registry(pyproject: Path | None, extra: Iterable[Profile] = ()) -> Registry:
    """Built-in profiles plus `[tool.gpuperf.profiles.*]` from pyproject.toml."""
    reg = Registry.builtin()
    for p in extra:
        reg.profiles[p.name] = p
    if pyproject is not None and pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ProfileError(f"{pyproject}: cannot read: {exc}") from None
        table = data.get("tool", {}).get("gpuperf", {}).get("profiles", {})
        if not isinstance(table, Mapping):
            raise ProfileError(f"{pyproject}: [tool.gpuperf.profiles] must be a table")
        reg.add_user_profiles(table, str(pyproject))
    return reg

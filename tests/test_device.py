"""Device detection against a stand-in for pynvml. The real path runs on the H200."""

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from pytest_gpuperf.hardware.device import (
    DeviceSnapshot,
    detect,
    mig_profile_from_name,
    visible_device_filter,
)
from pytest_gpuperf.hardware.nvml import NVML
from tests.fakes import FakeDev, FakePynvml

H200 = FakeDev("NVIDIA H200", 143771, (9, 0), "GPU-aaaa")
A100_MIG = FakeDev(
    "NVIDIA A100-SXM4-40GB",
    40960,
    (8, 0),
    "GPU-bbbb",
    mig=True,
    instances=[
        FakeDev("NVIDIA A100-SXM4-40GB MIG 1g.5gb", 4864, (8, 0), "MIG-cccc"),
        FakeDev("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 19968, (8, 0), "MIG-dddd"),
    ],
)


def nvml_of(*devs, fail_init=False):
    return NVML(loader=lambda: FakePynvml(list(devs), fail_init=fail_init))


def test_detects_gpu_through_nvml(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    snap = detect(nvml_of(H200), use_torch=False)
    assert snap.kind == "cuda" and snap.source == "nvml"
    g = snap.primary
    assert (g.name, g.uuid, g.memory_total) == ("NVIDIA H200", "GPU-aaaa", 143771 * 1024**2)
    assert g.compute_capability == (9, 0) and g.bf16 is True
    assert g.mig_mode is False and g.power_limit_w is None  # "not supported" -> missing
    assert g.max_sm_clock_mhz == 1980 and g.pci_bus_id == "00000000:01:00.0"
    assert (snap.driver_version, snap.cuda_driver_version) == ("580.159.04", "13.0")
    assert "NVIDIA H200" in snap.describe()


def test_cuda_visible_devices_selects_and_renumbers(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    snap = detect(nvml_of(H200, A100_MIG), use_torch=False)
    assert [g.name for g in snap.gpus] == ["NVIDIA A100-SXM4-40GB"]
    assert snap.primary.index == 0


def test_mig_instance_by_uuid(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-dddd")
    snap = detect(nvml_of(H200, A100_MIG), use_torch=False)
    g = snap.primary
    assert g.is_mig_instance and g.mig_profile == "3g.20gb"
    assert g.memory_total == 19968 * 1024**2
    assert g.parent_name == "NVIDIA A100-SXM4-40GB" and g.parent_memory_total == 40960 * 1024**2


def test_empty_visible_devices_is_a_cpu_run(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    snap = detect(nvml_of(H200), use_torch=False)
    assert snap.kind == "cpu" and snap.gpus == ()
    assert "CUDA_VISIBLE_DEVICES" in snap.note


def test_no_driver_is_a_cpu_snapshot_not_an_error(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    snap = detect(nvml_of(fail_init=True), use_torch=False)
    assert snap.kind == "cpu"
    assert "Driver Not Loaded" in snap.note
    assert snap.cpu_cores and snap.cpu_cores >= 1 and snap.host_memory > 0
    assert "cpu:" in snap.describe()


def test_nvml_turns_errors_into_defaults():
    lib = nvml_of(H200)
    h = lib.query("nvmlDeviceGetHandleByIndex", 0)
    assert lib.query("nvmlDeviceGetPowerManagementLimit", h, default=-1) == -1
    assert lib.query("nvmlNoSuchFunction", default="x") == "x"
    assert nvml_of(fail_init=True).query("nvmlDeviceGetCount", default=0) == 0


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, None),
        ("", []),
        ("0,1", ["0", "1"]),
        ("1,-1,2", ["1"]),
        ("GPU-ab, MIG-cd", ["GPU-ab", "MIG-cd"]),
    ],
)
def test_visible_device_filter(env, expected):
    assert visible_device_filter(env) == expected


def test_mig_profile_from_name():
    assert mig_profile_from_name("NVIDIA H200 MIG 1g.18gb") == "1g.18gb"
    assert mig_profile_from_name("NVIDIA H200") is None


def test_snapshot_round_trips_through_json(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-cccc")
    snap = detect(nvml_of(A100_MIG), use_torch=False)
    again = DeviceSnapshot.from_dict(json.loads(json.dumps(snap.to_dict())))
    assert again == snap


def test_real_detection_on_this_machine_never_raises():
    snap = detect()
    assert snap.kind in ("cpu", "cuda")
    assert snap.lines()[0].startswith("device: ")


def test_importing_the_plugin_imports_no_torch_nor_nvml():
    code = (
        "import sys, pytest_gpuperf.plugin, pytest_gpuperf.hardware.device, pytest_gpuperf.hardware.profiles;"
        "print(sorted(m for m in ('torch','pynvml','transformers','peft','bitsandbytes','numpy')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------- multi-GPU topology


def test_two_gpus_over_nvlink(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    a = FakeDev("NVIDIA H200", 143771, (9, 0), "GPU-a", nvlinks=18)
    b = FakeDev("NVIDIA H200", 143771, (9, 0), "GPU-b", nvlinks=18)
    snap = detect(nvml_of(a, b), use_torch=False)
    assert snap.interconnect == "NVLink (18 links)"
    assert "interconnect (GPU 0-1): NVLink (18 links)" in "\n".join(snap.lines())
    assert DeviceSnapshot.from_dict(snap.to_dict()) == snap


def test_two_gpus_over_pcie_say_the_link_and_where_they_meet(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    a = FakeDev("NVIDIA L4", 23034, (8, 9), "GPU-a", pcie=(4, 16))
    b = FakeDev("NVIDIA L4", 23034, (8, 9), "GPU-b", pcie=(4, 16))
    assert detect(nvml_of(a, b), use_torch=False).interconnect == "PCIe (gen4 x16, PHB)"


def test_one_gpu_or_a_mig_slice_has_no_interconnect(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert detect(nvml_of(H200), use_torch=False).interconnect is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-cccc")
    assert detect(nvml_of(A100_MIG, H200), use_torch=False).interconnect is None


def test_nvlink_and_pcie_baselines_are_not_compared():
    from pytest_gpuperf.baseline.history import environment, incomparable_reason

    a = FakeDev("NVIDIA H200", 143771, (9, 0), "GPU-a", nvlinks=18)
    b = FakeDev("NVIDIA H200", 143771, (9, 0), "GPU-b", nvlinks=18)
    nv = detect(nvml_of(a, b), use_torch=False).to_dict()
    pcie = detect(nvml_of(replace(a, nvlinks=0), replace(b, nvlinks=0)), use_torch=False)
    base, now = environment(nv, None), environment(pcie.to_dict(), None)
    assert base["interconnect"] == "NVLink (18 links)" and base["gpus"] == 2
    assert incomparable_reason(base, now) == (
        "interconnect differs: baseline NVLink (18 links), now PCIe (gen5 x16, PHB)"
    )
    fewer = dict(base, interconnect="NVLink (12 links)")  # the same kind of link: comparable
    assert incomparable_reason(base, fewer) is None
    one = environment(detect(nvml_of(a), use_torch=False).to_dict(), None)
    assert incomparable_reason(base, one) == "GPU count differs: baseline 2, now 1"


def test_gpu_info_does_not_repeat_the_device_kind():
    from tests.fakes import snapshot

    assert snapshot().lines()[0] == "device: cpu"

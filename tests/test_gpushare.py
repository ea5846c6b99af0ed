"""Another process on the GPU (measure/gpushare.py, issue #33 point 2): NVML's compute
processes read before and after each measurement; a result measured beside another
process is flagged gpu-shared with what was seen, judged inconclusive rather than
regressed, and left out of a save unless --gpuperf-save-gpu-shared. All on the CPU, with
a fake NVML (tests/fakes.py); tests/gpu/gpu_shared.sh is the same on a real GPU."""

import json

import pytest

from pytest_gpuperf.core.results import Result
from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.hardware.nvml import NVML
from pytest_gpuperf.judging.busy import busy_verdicts
from pytest_gpuperf.measure import bench as bench_module
from pytest_gpuperf.measure import hostload
from pytest_gpuperf.measure.gpushare import ProcessWatch, lineage, read_processes
from pytest_gpuperf.run.baseline import save_run

from . import vclock
from .fakes import SHARED_GPU_HOST, FakeProcessNvml, NVMLError_NotSupported, gpu, snapshot
from .gateproject import BENCH, FAST

GIB = 1 << 30
ME = 1000


def _lib(procs, **kw):
    fake = FakeProcessNvml(procs, **kw)
    return NVML(loader=lambda: fake), fake


def test_the_process_list_falls_back_to_older_bindings_and_says_why_it_cannot_be_had():
    lib, fake = _lib({ME: GIB, 77: 2**64 - 1},
                     missing=("nvmlDeviceGetComputeRunningProcesses",
                              "nvmlDeviceGetComputeRunningProcesses_v3"))  # fmt: skip
    procs, why = read_processes(lib, "h")
    assert procs == {ME: GIB, 77: None} and why is None  # NVML_VALUE_NOT_AVAILABLE: unknown
    assert fake.calls[0] == "nvmlDeviceGetComputeRunningProcesses_v2"
    refused, _ = _lib({}, refuse=NVMLError_NotSupported("Not Supported"))
    procs, why = read_processes(refused, "h")
    assert procs is None and "NVMLError_NotSupported" in why


def test_this_process_its_ancestors_and_its_children_are_not_foreign():
    parents = {ME: 10, 10: 1, 501: ME, 502: 501, 900: 1}  # 10 started us; 501, 502 are ours
    watch = ProcessWatch(_lib({})[0], "h", pid=ME, parent=parents.get)
    assert lineage(502, parents.get) == [502, 501, ME, 10, 1]
    seen = {ME: GIB, 10: GIB, 501: GIB, 502: None}
    assert watch.foreign(seen, {**seen, 900: 3 * GIB}) == {900: 3 * GIB}
    assert watch.foreign(seen, seen) == {}


def _bench(watch, monkeypatch):
    def measure(fn, **kw):
        r = Result(nodeid=kw["nodeid"], metric=kw["metric"], unit=kw["unit"], work_per_call=1)
        r.backend = "cuda"
        return r

    monkeypatch.setattr(bench_module, "measure", measure)
    monkeypatch.setattr(hostload, "read_host", lambda: None)  # this machine's load is not ours
    return bench_module.GpuBenchmark("t.py::t", snapshot(gpu()), [], None, processes=watch)


def test_a_measurement_beside_another_process_is_flagged_with_its_pid_and_memory(monkeypatch):
    watch = ProcessWatch(_lib({ME: GIB, 4242: 3 * GIB})[0], "h", pid=ME, parent=lambda p: None)
    r = _bench(watch, monkeypatch)(lambda: None)
    assert r.gpu_shared == {"processes": [{"pid": 4242, "used_memory": 3 * GIB}]}
    assert "gpu-shared" in r.flags() and "gpu-shared" in r.session_flags
    assert any("PID 4242 (3.0 GiB)" in n for n in r.notes), r.notes
    alone = ProcessWatch(_lib({ME: GIB})[0], "h", pid=ME, parent=lambda p: None)
    r = _bench(alone, monkeypatch)(lambda: None)
    assert r.gpu_shared is None and r.flags() == [] and r.notes == []


@pytest.mark.parametrize(
    "procs, kw, why",
    [
        ({}, {"refuse": NVMLError_NotSupported("Not Supported")}, "NVMLError_NotSupported"),
        ({4242: GIB}, {}, "does not include this process"),  # another PID namespace
    ],
)
def test_a_list_nvml_cannot_give_flags_nothing_and_is_noted_once(procs, kw, why, monkeypatch):
    watch = ProcessWatch(_lib(procs, **kw)[0], "h", pid=ME, parent=lambda p: None)
    b = _bench(watch, monkeypatch)
    first, second = b(lambda: None, metric="a"), b(lambda: None, metric="b")
    assert first.gpu_shared is None and second.gpu_shared is None
    assert [n for n in first.notes if why in n] and "cannot be detected" in first.notes[0]
    assert second.notes == []


def test_a_regression_measured_on_a_shared_gpu_is_inconclusive():
    r = Result(nodeid="t.py::t", metric=None, unit="calls", work_per_call=1, backend="cuda")
    r.gpu_shared = {"processes": [{"pid": 4242, "used_memory": None}]}
    r.verdicts = {"throughput": from_json({"status": "regressed", "reason": "slower by 9%"})}
    busy_verdicts([r])
    vd = r.verdicts["throughput"]
    assert vd.status == "inconclusive"
    assert "measured on a shared GPU" in vd.reason and "PID 4242" in vd.reason
    assert vd.advice.startswith("run it again on a GPU no other process uses")


def test_a_shared_result_is_not_saved_unless_asked(tmp_path):
    from .reportdata import measured

    shared, clean = measured("t.py::shared", 100.0, {}), measured("t.py::clean", 100.0, {})
    shared.gpu_shared = {"processes": [{"pid": 4242, "used_memory": GIB}]}
    path = tmp_path / "cpu.json"
    line, failed = save_run(path, "cpu", [shared, clean], {}, {}, {})
    assert failed and "NOT SAVED: 1 test(s) measured while another process used the GPU" in line
    assert list(json.loads(path.read_text())["entries"]) == ["t.py::clean"]
    line, failed = save_run(path, "cpu", [shared, clean], {}, {}, {}, save_shared=True)
    assert not failed and "saved though measured on a shared GPU" in line
    assert sorted(json.loads(path.read_text())["entries"]) == ["t.py::clean", "t.py::shared"]


def _shared_project(pytester, monkeypatch):
    monkeypatch.delenv("SLOW", raising=False)
    monkeypatch.delenv("FOREIGN", raising=False)
    pytester.makepyfile(vclock=vclock.Path(vclock.__file__).read_text(), test_b=BENCH)
    pytester.makeconftest(SHARED_GPU_HOST)
    return pytester


def test_a_run_beside_another_process_is_inconclusive_and_not_saved(pytester, monkeypatch):
    """The whole run, as on a GPU: saved twice alone; a slower run beside another process
    passes, its regression inconclusive; a save beside it is refused (and fails the run),
    and goes through with --gpuperf-save-gpu-shared."""
    p = _shared_project(pytester, monkeypatch)
    for _ in range(2):
        p.runpytest(*FAST, "--gpuperf-baseline=save").assert_outcomes(passed=2)
    monkeypatch.setenv("SLOW", "0.5")
    alone = p.runpytest(*FAST, "--gpuperf-no-confirm")
    alone.assert_outcomes(passed=2, failed=1)  # the gate sees the regression
    monkeypatch.setenv("FOREIGN", "4242")
    shared = p.runpytest(*FAST, "--gpuperf-no-confirm")
    shared.assert_outcomes(passed=2)
    shared.stdout.fnmatch_lines(["INCONCLUSIVE *test_b.py::test_spin *throughput*gpu-shared*"])
    monkeypatch.delenv("SLOW")
    before = (p.path / "baselines" / "h200.json").read_text()
    refused = p.runpytest(*FAST, "--gpuperf-baseline=save")
    refused.assert_outcomes(passed=2, failed=1)  # the refused save: gpuperf::baseline-save
    assert refused.ret != 0
    refused.stdout.fnmatch_lines(
        [
            "*NOT SAVED: 2 test(s) measured while another process used the GPU (gpu-shared): test_b.py::test_other, test_b.py::test_spin*"
        ]
    )
    assert (p.path / "baselines" / "h200.json").read_text() == before
    forced = p.runpytest(*FAST, "--gpuperf-baseline=save", "--gpuperf-save-gpu-shared")
    assert forced.ret == 0
    forced.stdout.fnmatch_lines(["*saved 2 benchmark(s)*saved though measured on a shared GPU*"])
    history = json.loads((p.path / "baselines" / "h200.json").read_text())["entries"]
    assert len(history["test_b.py::test_spin"]["metrics"]["throughput"]["history"]) == 3

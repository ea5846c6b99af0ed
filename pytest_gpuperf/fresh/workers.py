"""pytest-xdist: one GPU per worker, never two benchmarks on one GPU; whether this process
is a worker (`is_worker`, the one place that asks); the names of what a test's report
carries to the process that judges it (a worker's reports travel to the controller, the
deferred tests' fresh process hands its reports back through a file)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: is_worker is asked at every session start
    import pytest

    from ..hardware.device import DeviceSnapshot, GPUInfo

# TestReport attributes (plain data, so pytest-xdist serialises them to the controller)
RESULTS_ATTR = "gpuperf"  # the call report's results: a list of Result.to_dict()
NODEID_ATTR = "gpuperf_nodeid"  # the test's id without --dist loadgroup's "@group"


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (xdist gives a worker's config its
    `workerinput`): the controller judges, saves and reports; a worker only measures."""
    return hasattr(config, "workerinput")


class WorkerError(ValueError):
    """The workers cannot each have a GPU of their own; the message says why."""


def check_count(snap: DeviceSnapshot, workers: int) -> None:
    """On the controller: `pytest -n N` needs N GPUs, one per worker."""
    if snap.kind == "cuda" and workers > snap.gpu_count:
        raise WorkerError(
            f"gpuperf: pytest -n {workers} on {snap.gpu_count} visible GPU(s): each worker "
            f"needs a GPU of its own (two benchmarks on one GPU measure each other); use "
            f"-n {snap.gpu_count}"
        )


def gpu_for(snap: DeviceSnapshot, workerid: str, workers: int, cuda_started: bool) -> GPUInfo:
    """The GPU worker `gwN` gets: the N-th visible one. It must be given before anything in
    the worker starts CUDA (CUDA_VISIBLE_DEVICES is read once, when CUDA starts)."""
    check_count(snap, workers)
    if cuda_started:
        raise WorkerError(
            f"gpuperf: worker {workerid}: CUDA was initialised before the plugin could give "
            "this worker its own GPU (a conftest or plugin touched CUDA at import)"
        )
    return snap.gpus[int(workerid.removeprefix("gw"))]


def worker_count(node: object) -> int:
    """On the controller, from a worker's node (pytest-xdist's WorkerController): how many
    workers the run started (`-n`, `--tx`, less what `--maxprocesses` cut)."""
    return int((getattr(node, "workerinput", None) or {}).get("workercount", 0))

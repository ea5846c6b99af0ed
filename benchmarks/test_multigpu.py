"""Collectives between GPUs on one host: NCCL all-reduce and all-gather bandwidth, with
nccl-tests' bus-bandwidth formulas. On the CPU the same code runs with gloo between 2
processes at small sizes, so the flow (launch, gather, result) is proven without GPUs."""

from functools import partial

import pytest

from pytest_gpuperf.distributed import bus_factor, run_ranks, time_collective

CPU = pytest.mark.cpu_only
TWO_GPUS = pytest.mark.requires_gpus(2)
MIB = 1 << 20

SIZES = [
    pytest.param(64 << 10, marks=CPU, id="64KiB"),
    pytest.param(MIB, marks=CPU, id="1MiB-cpu"),
    *[
        pytest.param(n, marks=TWO_GPUS, id=label)
        for n, label in ((MIB, "1MiB"), (16 * MIB, "16MiB"), (256 * MIB, "256MiB"), (1024 * MIB, "1GiB"))
    ],
]


@pytest.mark.parametrize("op", ["all_reduce", "all_gather"])
@pytest.mark.parametrize("nbytes", SIZES)
def test_collective_bandwidth(gpu_benchmark, gpu, op, nbytes):
    world = 2
    calls = 20 if gpu else 5
    body = partial(time_collective, op=op, nbytes=nbytes, samples=20, calls=calls)
    samples = run_ranks(body, world, backend="nccl" if gpu else "gloo", timeout_s=120)
    # algorithm bandwidth: the data size over the time of one collective (nccl-tests)
    r = gpu_benchmark.from_samples(samples, work=nbytes, unit="bytes")
    gpu_benchmark.record(
        "bus_bandwidth", r.throughput.median * bus_factor(op, world), "GB/s",
        note=f"{op} busbw = algbw x {bus_factor(op, world):g} ({world} ranks)",
    )  # fmt: skip
    assert r.throughput.median > 0

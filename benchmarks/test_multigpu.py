"""Several GPUs on one host, through torch.distributed: NCCL all-reduce and all-gather
bandwidth (nccl-tests' bus-bandwidth formulas), peer-to-peer transfer bandwidth in both
directions, and data-parallel (DDP) LoRA training with its scaling efficiency. Each test
starts its ranks itself (pytest_gpuperf.distributed.run_ranks) and hands rank 0's timings to
gpu_benchmark. On the CPU the same code runs with gloo between 2 processes at small sizes,
so the flow (launch, gather, result) is proven without GPUs."""

from functools import partial
from statistics import median

import pytest

from pytest_gpuperf.distributed import (
    bus_factor,
    ddp_lora_step,
    link_peak,
    run_ranks,
    time_collective,
    time_p2p,
)

CPU = pytest.mark.gpu_cpu_only
TWO_GPUS = pytest.mark.gpu_requires_gpus(2)
MIB = 1 << 20
WORLD = 2

SIZES = [
    pytest.param(64 << 10, marks=CPU, id="64KiB"),
    pytest.param(MIB, marks=CPU, id="1MiB-cpu"),
    *[
        pytest.param(n, marks=TWO_GPUS, id=label)
        for n, label in ((MIB, "1MiB"), (16 * MIB, "16MiB"), (256 * MIB, "256MiB"), (1024 * MIB, "1GiB"))
    ],
]


def _backend(gpu):
    return "nccl" if gpu else "gloo"


def _of_peak(gbps, gpu_device, gpu_profile):
    """' (41% of NVLink, 450 GB/s per direction (profile))', or '' when the peak is unknown."""
    peak = link_peak(gpu_device.interconnect, getattr(gpu_profile, "nvlink_gbps", None))
    return f" ({gbps / peak[0]:.0%} of {peak[1]})" if peak else ""


@pytest.mark.parametrize("op", ["all_reduce", "all_gather"])
@pytest.mark.parametrize("nbytes", SIZES)
def test_collective_bandwidth(gpu_benchmark, gpu, gpu_device, gpu_profile, op, nbytes):
    # a sample of at least ~20 ms on the H200, so the host's synchronisation does not
    # dominate small messages (1 MiB: 1000 calls; 256 MiB and more: 20)
    calls = min(1000, 20 * max(1, (256 * MIB) // nbytes)) if gpu else 5
    body = partial(time_collective, op=op, nbytes=nbytes, samples=20, calls=calls)
    samples = run_ranks(body, WORLD, backend=_backend(gpu), timeout_s=120)
    # algorithm bandwidth: the data size over the time of one collective (nccl-tests)
    r = gpu_benchmark.from_samples(samples, work=nbytes, unit="bytes")
    busbw = r.throughput.median * bus_factor(op, WORLD)
    gpu_benchmark.record(
        "bus_bandwidth", busbw, "GB/s",
        note=f"{op} busbw = algbw x {bus_factor(op, WORLD):g} ({WORLD} ranks)"
        + _of_peak(busbw, gpu_device, gpu_profile),
        derived_from="",
    )  # fmt: skip
    assert r.throughput.median > 0


P2P_SIZES = [
    pytest.param(MIB, marks=CPU, id="1MiB-cpu"),
    pytest.param(256 * MIB, marks=TWO_GPUS, id="256MiB"),
    pytest.param(1024 * MIB, marks=TWO_GPUS, id="1GiB"),
]


@pytest.mark.parametrize("direction", ["0to1", "1to0"])
@pytest.mark.parametrize("nbytes", P2P_SIZES)
def test_p2p_bandwidth(gpu_benchmark, gpu, gpu_device, gpu_profile, direction, nbytes):
    src, dst = (0, 1) if direction == "0to1" else (1, 0)
    body = partial(time_p2p, src=src, dst=dst, nbytes=nbytes, samples=20, calls=10 if gpu else 5)
    samples = run_ranks(body, WORLD, backend=_backend(gpu), timeout_s=120)
    gbps = nbytes / median(samples) / 1e9  # the throughput's median, for the note
    what = f"GPU {src} -> GPU {dst}" if gpu else f"rank {src} -> rank {dst} (gloo)"
    note = what + _of_peak(gbps, gpu_device, gpu_profile)
    r = gpu_benchmark.from_samples(samples, work=nbytes, unit="bytes", note=note)
    assert r.throughput.median > 0


# (preset, per-rank batch, seq_len): the same per-GPU batch on 1 and on 2 GPUs
DDP = [
    pytest.param("tiny", 4, 64, marks=CPU, id="tiny-b4"),
    pytest.param(
        "llama-1b", 32, 512, marks=[TWO_GPUS, pytest.mark.gpu_requires_vram("32GiB")],
        id="llama-1b-b32",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("preset", "batch", "seq_len"), DDP)
def test_ddp_lora_scaling(gpu_benchmark, gpu, preset, batch, seq_len):
    """Data-parallel LoRA: tokens/s on 2 GPUs and the scaling efficiency against the same
    per-GPU batch on one GPU, both measured in this test (fresh processes each)."""
    samples = 20 if gpu else 5
    body = partial(ddp_lora_step, preset=preset, batch=batch, seq_len=seq_len, samples=samples)
    one = run_ranks(body, 1, backend=_backend(gpu), timeout_s=300)
    two = run_ranks(body, WORLD, backend=_backend(gpu), timeout_s=300)
    tokens = batch * seq_len
    # one GPU per rank (on the CPU: processes)
    r1 = gpu_benchmark.from_samples(one, work=tokens, unit="tokens", metric="1rank")
    r2 = gpu_benchmark.from_samples(two, work=WORLD * tokens, unit="tokens", metric=f"{WORLD}ranks")
    efficiency = r2.throughput.median / (WORLD * r1.throughput.median)
    # on the CPU the ranks are processes sharing its cores: the ratio means nothing about
    # scaling (it read 16.4), so there it is informational, never judged
    gpu_benchmark.record(
        "scaling_efficiency", efficiency, "fraction",
        note=f"{WORLD}-GPU tokens/s over {WORLD} x 1-GPU tokens/s, {batch} x {seq_len} tokens "
        "per GPU" + ("" if gpu else " (CPU processes sharing cores: proves the flow only; "
                     "informational, not judged)"),
        gate=bool(gpu),
        derived_from=f"{WORLD}ranks" if gpu else None,
    )  # fmt: skip
    assert efficiency > 0

"""The rank launcher on the CPU (gloo, 2 processes): launch, gather, a failing rank, a hung
rank, and no process left behind."""

import multiprocessing
import threading
from functools import partial

import pytest

from pytest_gpuperf.distributed import (
    RankError,
    RankTimeout,
    bus_factor,
    link_peak,
    run_ranks,
    time_collective,
    time_p2p,
)


def rank_sum(ctx):
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(ctx.rank + 1)])
    dist.all_reduce(t)
    return {"world": ctx.world_size, "sum": float(t), "backend": ctx.backend}


def fail_on_rank_1(ctx):
    if ctx.rank == 1:
        raise ValueError("rank one broke on purpose")
    ctx.barrier()


def hang_on_rank_1(ctx):
    if ctx.rank == 1:
        threading.Event().wait()  # forever: only the timeout ends it


def no_children_left():
    return [p for p in multiprocessing.active_children() if p.is_alive()] == []


def test_ranks_start_gather_and_return_rank_0s_value():
    assert run_ranks(rank_sum, 2, backend="gloo", timeout_s=300) == {"world": 2, "sum": 3.0, "backend": "gloo"}
    assert no_children_left()


def test_a_failing_rank_fails_with_its_traceback():
    with pytest.raises(RankError, match=r"rank 1 of 2 failed \(gloo\):[\s\S]*ValueError: rank one broke on purpose"):
        run_ranks(fail_on_rank_1, 2, backend="gloo", timeout_s=300)
    assert no_children_left()


@pytest.mark.slow
def test_a_hung_rank_is_stopped_at_the_timeout():
    # Rank 1 never finishes, so only the timeout can end the call: no wall-time assertion is
    # needed to prove it. The timeout also covers starting the ranks (spawn, import torch),
    # which on a loaded machine can take rank 0 past 8 s too: then both ranks are named.
    with pytest.raises(RankTimeout, match=r"rank\(s\) \[(0, )?1\] of 2 did not finish within 8 s \(gloo\)"):
        run_ranks(hang_on_rank_1, 2, backend="gloo", timeout_s=8)
    assert no_children_left()


def test_collective_timing_gathers_the_slowest_rank():
    samples = run_ranks(partial(time_collective, op="all_gather", nbytes=4096, samples=4, calls=2), 2, backend="gloo", timeout_s=300)
    assert len(samples) == 4 and all(s > 0 for s in samples)


def test_bus_factors_follow_nccl_tests():
    assert bus_factor("all_reduce", 2) == 1.0 and bus_factor("all_reduce", 8) == 1.75
    assert bus_factor("all_gather", 2) == 0.5 and bus_factor("all_gather", 8) == 0.875
    with pytest.raises(ValueError):
        bus_factor("broadcast", 2)


def test_externally_timed_samples_become_a_result(pytester):
    pytester.makepyfile(
        test_x="""
        import pytest

        def test_x(gpu_benchmark):
            r = gpu_benchmark.from_samples([0.01, 0.011, 0.0105, 0.0102, 0.0101, 0.0103], work=1e9, unit="bytes", note="rank 0 -> rank 1")
            assert r.notes == ["rank 0 -> rank 1"]
            assert r.kind == "measured" and r.timer == "external" and r.throughput.unit == "GB/s"
            assert 90 < r.throughput.median < 100
            with pytest.raises(ValueError, match="samples must be positive finite seconds per call"):
                gpu_benchmark.from_samples([0.01, -1.0], work=1, unit="bytes", metric="bad")
            with pytest.raises(ValueError, match="samples must be positive finite seconds per call"):
                gpu_benchmark.from_samples([], work=1, unit="bytes", metric="empty")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--gpuperf-baseline=save")
    result.assert_outcomes(passed=1)
    import json

    data = json.loads((pytester.path / "baselines" / "cpu.json").read_text())
    assert data["entries"]["test_x.py::test_x"]["metrics"]["throughput"]["unit"] == "GB/s"


def test_p2p_transfers_between_two_gloo_ranks():
    body = partial(time_p2p, src=1, dst=0, nbytes=64 << 10, samples=3, calls=2)
    samples = run_ranks(body, 2, backend="gloo", timeout_s=300)
    assert len(samples) == 3 and all(s > 0 for s in samples)


@pytest.mark.parametrize(
    ("interconnect", "nvlink_gbps", "expected"),
    [
        ("NVLink (18 links)", 450, (450, "NVLink, 450 GB/s per direction (profile)")),
        ("NVLink (18 links)", None, None),  # no data-sheet figure for this card
        ("PCIe (gen4 x16, PHB)", None, (31.504, "PCIe gen4 x16, 31.5 GB/s per direction (nominal)")),
        ("PCIe (gen5 x8, SYS)", 450, (31.504, "PCIe gen5 x8, 31.5 GB/s per direction (nominal)")),
        ("PCIe (PHB)", None, None),  # NVML did not say the generation
        (None, 450, None),  # one GPU
    ],
)
def test_link_peak(interconnect, nvlink_gbps, expected):
    got = link_peak(interconnect, nvlink_gbps)
    if expected is None:
        assert got is None
    else:
        assert got[0] == pytest.approx(expected[0]) and got[1] == expected[1]

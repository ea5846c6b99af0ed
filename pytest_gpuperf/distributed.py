"""Multi-process benchmarks on one host through torch.distributed: NCCL with one GPU per
rank, or gloo on the CPU (the same code paths with 2 CPU processes, so CI proves the flow).

`run_ranks(fn, world_size)` starts the ranks with torch.multiprocessing (spawn), each in a
process group on a free local port, runs `fn(ctx)` in every rank and returns rank 0's
value (rank 0 gathers the others' timings itself, with the collectives). A rank that raises
fails the call with that rank's traceback; ranks that do not finish within the timeout are
a RankTimeout; either way every rank process is terminated and joined, none is left behind.

NCCL's NVLink multicast (NCCL_NVLS_ENABLE and related variables) is left exactly as the
environment sets it: GPU runners set it off where NVLS is unreliable, and a benchmark that
overrode it would measure a transport the runner does not use (and, on some hosts, hang).
"""

from __future__ import annotations

import os
import re
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class RankError(RuntimeError):
    """A rank failed or hung; the message names the rank and carries its traceback."""


class RankTimeout(RankError):
    pass


@dataclass(frozen=True)
class RankContext:
    rank: int
    world_size: int
    backend: str  # "nccl" or "gloo"
    device: Any  # torch.device of this rank

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(
    rank: int,
    world_size: int,
    backend: str,
    port: int,
    fn: Callable[[RankContext], Any],
    queue: Any,
    timeout_s: float,
) -> None:
    import datetime

    import torch
    import torch.distributed as dist

    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK=str(rank),
    )  # torchrun's variables, so code written for torchrun runs here unchanged
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
            device = torch.device("cuda", rank)
        else:
            device = torch.device("cpu")
            # ranks on the CPU share its cores: without this each would start one thread per
            # core and the ranks would fight over them
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
        dist.init_process_group(
            backend,
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
        value = fn(RankContext(rank, world_size, backend, device))
    except BaseException:  # any failure of a rank goes to the parent, stamped when it
        # happened: before this rank's exit makes its peers fail too
        queue.put((rank, "error", traceback.format_exc()[-4000:], time.time()))
        # written to the pipe before this rank leaves the process group: a peer fails only
        # after that, so its report follows this one (the first report is the first failure
        # however slowly the machine schedules the queue's writer thread)
        queue.close()
        queue.join_thread()
        return
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    queue.put((rank, "ok", value if rank == 0 else None, time.time()))


def run_ranks(
    fn: Callable[[RankContext], Any],
    world_size: int = 2,
    *,
    backend: str | None = None,
    timeout_s: float = 300.0,
) -> Any:
    """Run `fn` in `world_size` ranks and return rank 0's value. `fn` must be picklable (a
    module-level function). backend None: NCCL when there are that many GPUs, else gloo."""
    import torch
    import torch.multiprocessing as mp

    if backend is None:
        enough = torch.cuda.is_available() and torch.cuda.device_count() >= world_size
        backend = "nccl" if enough else "gloo"
    if backend not in ("nccl", "gloo"):
        raise ValueError(f"backend must be 'nccl' or 'gloo', got {backend!r}")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(
            target=_rank_main,
            args=(rank, world_size, backend, port, fn, queue, timeout_s),
            daemon=True,
        )
        for rank in range(world_size)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout_s
    done: dict[int, tuple[str, Any]] = {}
    try:
        while len(done) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                hung = sorted(set(range(world_size)) - set(done))
                raise RankTimeout(
                    f"rank(s) {hung} of {world_size} did not finish within {timeout_s:g} s "
                    f"({backend}); all ranks were stopped"
                )
            try:
                rank, status, value, when = queue.get(timeout=min(left, 0.5))
            except Exception:  # queue.Empty: look for ranks that died without a word
                for rank, p in enumerate(procs):
                    if rank not in done and not p.is_alive() and p.exitcode not in (0, None):
                        raise RankError(
                            f"rank {rank} of {world_size} died with exit code {p.exitcode} "
                            f"({backend})"
                        ) from None
                continue
            done[rank] = (status, value)
            if status == "error":
                raise _first_failure(queue, world_size, backend, {rank: (value, when)})
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        queue.close()
    return done[0][1]


def _first_failure(
    queue: Any, world_size: int, backend: str, errors: dict[int, tuple[str, float]]
) -> RankError:
    """The error of the rank that failed first: when one rank raises, its peers fail soon
    after ("connection closed by peer"). A failing rank writes its report before it leaves
    the process group, so such a follow-on failure is never read first; ranks that fail on
    their own at about the same time are ordered by when they failed, from the reports of
    the next 2 s."""
    deadline = time.monotonic() + 2.0
    while len(errors) < world_size and time.monotonic() < deadline:
        try:
            rank, status, value, when = queue.get(timeout=0.2)
        except Exception:  # queue.Empty
            continue
        if status == "error":
            errors[rank] = (value, when)
    first = min(errors, key=lambda r: errors[r][1])
    others = sorted(set(errors) - {first})
    also = f"\n(rank(s) {others} failed after it)" if others else ""
    return RankError(f"rank {first} of {world_size} failed ({backend}):\n{errors[first][0]}{also}")


# ------------------------------------------------------------------ collective benchmarks


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw x factor. all_reduce moves 2(n-1)/n
    of the data over the busiest link, all_gather (n-1)/n."""
    n = world_size
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op == "all_gather":
        return (n - 1) / n
    raise ValueError(f"unknown collective {op!r}")


def _sync(ctx: RankContext) -> None:
    import torch

    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)


def time_on_ranks(
    ctx: RankContext, once: Callable[[], Any], samples: int, calls: int, warmup: int = 3
) -> list[float] | None:
    """Rank body's timing loop: `warmup` calls, then `samples` samples of `calls` calls,
    every rank starting each sample together (a barrier). Returns on rank 0 the per-call
    seconds of each sample: the slowest rank's, since the step ends when its last rank
    does; None on the other ranks."""
    import torch
    import torch.distributed as dist

    for _ in range(warmup):  # connections, buffers, kernel choices
        once()
    _sync(ctx)
    times = []
    for _ in range(samples):
        dist.barrier()
        _sync(ctx)
        t0 = time.perf_counter()
        for _ in range(calls):
            once()
        _sync(ctx)
        times.append((time.perf_counter() - t0) / calls)
    mine = torch.tensor(times, dtype=torch.float64, device=ctx.device)  # NCCL: on the GPU
    everyone = [torch.empty_like(mine) for _ in range(ctx.world_size)]
    dist.all_gather(everyone, mine)
    slowest = torch.stack(everyone).max(dim=0).values
    return [float(x) for x in slowest.cpu()] if ctx.rank == 0 else None


def time_collective(ctx: RankContext, op: str, nbytes: int, samples: int, calls: int) -> Any:
    """Rank body: time `calls` back-to-back collectives per sample on `nbytes` of float32
    per rank (all_gather: each rank's part is nbytes / world_size, as nccl-tests counts)."""
    import torch
    import torch.distributed as dist

    n = ctx.world_size
    numel = max(1, nbytes // 4)
    if op == "all_reduce":
        buf = torch.ones(numel, device=ctx.device)

        def once() -> None:
            dist.all_reduce(buf)
    else:
        part = max(1, numel // n)
        src = torch.ones(part, device=ctx.device)
        out = torch.empty(part * n, device=ctx.device)

        def once() -> None:
            dist.all_gather_into_tensor(out, src)

    return time_on_ranks(ctx, once, samples, calls)


def time_p2p(ctx: RankContext, src: int, dst: int, nbytes: int, samples: int, calls: int) -> Any:
    """Rank body: `nbytes` sent from rank `src` to rank `dst` (NCCL's peer-to-peer transport
    between GPUs: NVLink or PCIe, whichever NCCL picks; gloo on the CPU), `calls` transfers
    per sample. Ranks other than the two wait at the barriers."""
    import torch
    import torch.distributed as dist

    buf = torch.ones(max(1, nbytes // 4), device=ctx.device)

    def once() -> None:
        if ctx.rank == src:
            dist.send(buf, dst)
        elif ctx.rank == dst:
            dist.recv(buf, src)

    return time_on_ranks(ctx, once, samples, calls)


def ddp_lora_step(
    ctx: RankContext,
    preset: str,
    batch: int,
    seq_len: int,
    samples: int,
    quantization: str | None = None,
) -> Any:
    """Rank body: one LoRA optimizer step per call on `batch` sequences per rank, the model
    wrapped in DistributedDataParallel when there are several ranks (gradients of the
    adapters all-reduced in buckets, overlapped with the backward pass). With one rank it is
    the plain single-GPU step, the reference for scaling efficiency."""
    from .workloads.data import fixed_batch
    from .workloads.finetune import make_trainer

    trainer = make_trainer(
        preset,
        device=ctx.device,
        quantization=quantization,
        seq_len=seq_len,
        gradient_checkpointing=True,
    )
    if ctx.world_size > 1:
        from torch.nn.parallel import DistributedDataParallel

        ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        trainer.model = DistributedDataParallel(trainer.model, device_ids=ids)
    batch_ids = fixed_batch(batch, seq_len, trainer.built.model.config.vocab_size, ctx.device)
    return time_on_ranks(ctx, lambda: trainer.step(batch_ids), samples, calls=1, warmup=2)


# nominal PCIe bandwidth per lane and direction after encoding, GB/s, by generation
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def link_peak(interconnect: str | None, nvlink_gbps: float | None) -> tuple[float, str] | None:
    """The nominal bandwidth per direction of the link between two GPUs (GB/s) and where the
    figure comes from, or None when it is not known: NVLink from the GPU profile's data
    sheet figure, PCIe from the link generation and width NVML reports."""
    if not interconnect:
        return None
    if interconnect.startswith("NVLink"):
        if not nvlink_gbps:
            return None
        return nvlink_gbps, f"NVLink, {nvlink_gbps:g} GB/s per direction (profile)"
    m = re.search(r"gen(\d+) x(\d+)", interconnect)
    if m is None or int(m.group(1)) not in PCIE_LANE_GBPS:
        return None
    gen, width = int(m.group(1)), int(m.group(2))
    peak = PCIE_LANE_GBPS[gen] * width
    return peak, f"PCIe gen{gen} x{width}, {peak:.1f} GB/s per direction (nominal)"

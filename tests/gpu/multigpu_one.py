"""Issue 63's one-GPU part: pytest_gpuperf.distributed's NCCL path at world size 1 (run by
tests/gpu/multigpu_one.sh). A file, since torch.multiprocessing's spawn re-imports __main__."""

from functools import partial
from statistics import median

from pytest_gpuperf.distributed import run_ranks, time_collective

if __name__ == "__main__":
    for op in ("all_reduce", "all_gather"):
        body = partial(time_collective, op=op, nbytes=256 << 20, samples=10, calls=20)
        s = run_ranks(body, 1, backend="nccl", timeout_s=120)
        print(f"nccl world 1 {op} 256MiB: {len(s)} samples, median {median(s) * 1e6:.1f} us a call")

"""A clock for pytest-benchmark that times CUDA work, not its launch.

pytest-benchmark's default timer, time.perf_counter, is read while CUDA work is still
queued, so its `benchmark` fixture times the launch (0.0185 ms for an 8192³ matmul that
takes 1.6 ms on an H200). The plugin never changes that timer; a user opts in:

    pytest --benchmark-timer=pytest_gpuperf.measure.clock.synchronized_perf_counter

(or the same in addopts, or `@pytest.mark.benchmark(timer=synchronized_perf_counter)` on a
test). Its own module with nothing to import, because pytest-benchmark imports the timer
it is given at start-up.
"""

import sys
import time


def synchronized_perf_counter() -> float:
    """time.perf_counter after waiting for queued CUDA work, if torch uses CUDA.

    On the CPU, or before CUDA is initialised, it costs a dictionary look-up more than
    time.perf_counter.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()

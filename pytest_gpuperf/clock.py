"""A clock for pytest-benchmark that times CUDA work, not its launch.

Its own module with nothing to import, because pytest-benchmark imports its timer at
start-up in every run.
"""

import sys
import time


def synchronized_perf_counter() -> float:
    """time.perf_counter after waiting for queued CUDA work, if torch uses CUDA.

    The plugin makes this pytest-benchmark's default timer, so its `benchmark` fixture
    times CUDA work instead of its launch.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()

"""pytest-gpuperf: GPU performance regression testing for pytest.

The public API is what `__all__` names: `from pytest_gpuperf import release_memory, DTYPES`.
Besides it, the documented subpackages `pytest_gpuperf.workloads` (model presets, LoRA/QLoRA
steps, generation, dtype work) and `pytest_gpuperf.distributed` (multi-GPU ranks and
collectives) are public; every other module is the plugin's own and may change.

Importing the package is cheap: each name is imported on first use, and torch,
transformers and NVML only when a GPU feature is used.

PYTEST_DONT_REWRITE: the plugin holds no test assertions to rewrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# each public name and the module that defines it, imported when the name is first used
_PUBLIC = {
    "DTYPES": "hardware.marks",  # the dtypes the gpu_dtype marker knows, by name
    "DTypeSpec": "hardware.marks",
    "Result": "core.results",  # what gpu_benchmark returns
    "OutOfMemory": "measure.timing",
    "is_oom": "measure.timing",
    "release_memory": "measure.timing",
    "synchronized_perf_counter": "measure.clock",  # pytest-benchmark's timer for CUDA work
    "CastAudit": "measure.casts",
}

__all__ = [  # _PUBLIC's names (tests/test_public_api.py keeps the two in step)
    "DTYPES",
    "CastAudit",
    "DTypeSpec",
    "OutOfMemory",
    "Result",
    "__version__",
    "is_oom",
    "release_memory",
    "synchronized_perf_counter",
]

if TYPE_CHECKING:
    from .core.results import Result
    from .hardware.marks import DTYPES, DTypeSpec
    from .measure.casts import CastAudit
    from .measure.clock import synchronized_perf_counter
    from .measure.timing import OutOfMemory, is_oom, release_memory


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_gpuperf' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

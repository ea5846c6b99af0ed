"""Reusable workloads for benchmarks: Llama presets with random weights, LoRA/QLoRA training
steps and batch sweeps, text generation, dtype work. Each module imports torch,
transformers, peft or bitsandbytes only when used; those three are the `workloads` extra,
and a missing one is an error naming it (`pip install 'pytest-gpuperf[workloads]'`)."""

from typing import Any

from ..core.extras import needs


def import_bitsandbytes() -> Any:
    """bitsandbytes, imported without the `torch.jit.script_method` DeprecationWarning that its
    import triggers inside torch (torch.utils.mkldnn, reached through torch.compile
    decorators): the warning is torch's own and says nothing to the user of a benchmark.
    peft imports bitsandbytes when it is installed, so callers import it here first."""
    import warnings

    with warnings.catch_warnings(), needs("workloads"):
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\.script_method.*", category=DeprecationWarning
        )
        import bitsandbytes

    return bitsandbytes

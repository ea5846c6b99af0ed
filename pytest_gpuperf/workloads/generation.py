"""Text generation with a fixed output length (greedy, min_new_tokens == max_new_tokens).

`generate_eager` is Hugging Face's own `generate()`: at batch 1 it is launch-bound (the
host issues hundreds of small kernels per token), and the benchmarks say so. Time to first
token (prefill) and time per output token (decode) are separated by timing one new token
and n new tokens: decode per token = (t(n) - t(1)) / (n - 1).
"""

from __future__ import annotations

from typing import Any

from .data import fixed_batch
from .models import WorkloadError


def prompt(batch: int, prompt_len: int, vocab: int, device: Any, seed: int = 0) -> Any:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise WorkloadError(f"batch size must be a whole number >= 1, got {batch!r}")
    return fixed_batch(batch, prompt_len, vocab, device, seed=seed)


def generate_eager(model: Any, input_ids: Any, new_tokens: int) -> Any:
    """Greedy generation of exactly `new_tokens` tokens per sequence with HF generate()."""
    import torch

    if isinstance(new_tokens, bool) or not isinstance(new_tokens, int) or new_tokens < 1:
        raise WorkloadError(f"new_tokens must be a whole number >= 1, got {new_tokens!r}")
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            use_cache=True,
            pad_token_id=0,
            eos_token_id=None,
        )
    if out.shape[1] != input_ids.shape[1] + new_tokens:
        raise WorkloadError(
            f"generate() returned {out.shape[1] - input_ids.shape[1]} new tokens, "
            f"expected {new_tokens}"
        )
    return out


def decode_split(t_one: float, t_n: float, n: int) -> tuple[float, float]:
    """(time to first token, time per output token after it) from t(1) and t(n)."""
    if n < 2:
        raise WorkloadError("decode time needs at least 2 new tokens")
    return t_one, max(0.0, (t_n - t_one) / (n - 1))

"""Training and prompt data made locally and reproducibly (seeded); nothing is downloaded.

`instruction_lengths` draws sequence lengths like an instruction-tuning chat set: the
reports we started from used 1,000 texts of 58 to 11,400 characters; we draw character
counts from a log-normal distribution clipped to that range (median about 1,000
characters) and convert at about 4 characters per token. `padded_batches` pads per batch,
as a data collator does; `fixed_batch` gives fixed-length batches for stable timing.
"""

from __future__ import annotations

import math
import random
from typing import Any

MIN_CHARS, MAX_CHARS = 58, 11_400
CHARS_PER_TOKEN = 4.0


def instruction_lengths(n: int = 1000, seed: int = 0, max_tokens: int | None = None) -> list[int]:
    """Token lengths of `n` chat-style texts, reproducible for a seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        chars = math.exp(rng.gauss(math.log(1000.0), 0.9))
        chars = min(max(chars, MIN_CHARS), MAX_CHARS)
        tokens = max(1, round(chars / CHARS_PER_TOKEN))
        if max_tokens is not None:
            tokens = min(tokens, max_tokens)
        out.append(tokens)
    return out


def fixed_batch(batch: int, seq_len: int, vocab: int, device: Any, seed: int = 0) -> Any:
    """A (batch, seq_len) tensor of random token ids in [3, vocab)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    ids = torch.randint(3, vocab, (batch, seq_len), generator=gen)
    return ids.to(device)


def padded_batches(
    lengths: list[int], batch: int, vocab: int, device: Any, pad_id: int = 0, seed: int = 0
) -> list[tuple[Any, Any]]:
    """(input_ids, attention_mask) per batch of consecutive lengths, padded to the batch max."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    out = []
    for i in range(0, len(lengths), batch):
        chunk = lengths[i : i + batch]
        width = max(chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, n in enumerate(chunk):
            ids[row, :n] = torch.randint(3, vocab, (n,), generator=gen)
            mask[row, :n] = 1
        out.append((ids.to(device), mask.to(device)))
    return out

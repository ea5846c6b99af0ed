"""LoRA / QLoRA fine-tuning steps (transformers + peft + bitsandbytes), batch-size sweeps
that treat running out of memory as a result, and a search for the largest batch that fits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .data import fixed_batch
from .models import BuiltModel, WorkloadError, build_model


@dataclass(frozen=True)
class LoraSettings:
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    targets: tuple[str, ...] = ("q_proj", "v_proj")

    def check(self, hidden_size: int) -> None:
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise WorkloadError(f"LoRA rank must be a whole number >= 1, got {self.rank!r}")
        if self.rank > hidden_size:
            raise WorkloadError(
                f"LoRA rank {self.rank} does not fit a model of hidden size {hidden_size}"
            )
        if not self.targets:
            raise WorkloadError("LoRA needs at least one target module")


@dataclass
class Trainer:
    """A model with LoRA adapters and an optimizer; `step(batch)` is one optimizer step."""

    built: BuiltModel
    model: Any
    optimizer: Any
    gradient_checkpointing: bool
    seq_len: int
    layer_calls: list[int] = field(default_factory=lambda: [0])

    def step(self, input_ids: Any) -> float:
        out = self.model(input_ids=input_ids, labels=input_ids)
        out.loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return out.loss.detach()

    def step_padded(self, input_ids: Any, attention_mask: Any) -> Any:
        """One optimizer step on a padded batch: padding is masked and not learned."""
        labels = input_ids.masked_fill(attention_mask == 0, -100)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        out.loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return out.loss.detach()

    def verify_checkpointing(self, input_ids: Any) -> int:
        """Run one step counting how often each decoder layer's body starts (a pre-hook on
        its first op, input_layernorm). With checkpointing in effect the body runs twice
        per step (forward, then recomputed during backward); without, once. The layer's
        own hooks are not used: transformers versions differ in whether they sit inside
        the checkpoint, and torch stops a recomputation early, before later ops' hooks.
        Raises WorkloadError when what happens differs from what was asked."""
        layers = self.built.model.model.layers
        self.layer_calls[0] = 0
        handles = [layer.input_layernorm.register_forward_pre_hook(self._count) for layer in layers]
        try:
            self.step(input_ids)
        finally:
            for h in handles:
                h.remove()
        calls = self.layer_calls[0]
        expected = len(layers) * (2 if self.gradient_checkpointing else 1)
        if calls != expected:
            state = "in effect" if calls == 2 * len(layers) else "not in effect"
            raise WorkloadError(
                f"gradient checkpointing was asked {'on' if self.gradient_checkpointing else 'off'}"
                f" but is {state}: {calls} decoder-layer bodies run in one step, "
                f"expected {expected}"
            )
        return calls

    def _count(self, *args: Any) -> None:
        self.layer_calls[0] += 1


def make_trainer(
    preset: str,
    *,
    device: Any,
    quantization: str | None = "nf4",
    lora: LoraSettings | None = None,
    gradient_checkpointing: bool = True,
    seq_len: int = 512,
    attn_implementation: str = "sdpa",
    dtype: Any = None,
    lr: float = 1e-4,
    seed: int = 0,
    fp32_adapters: bool = True,
) -> Trainer:
    """QLoRA (quantization="nf4") or LoRA (None, weights in `dtype`) ready to train.

    fp32_adapters: peft's default keeps LoRA weights in float32 on a bfloat16 model, so every
    adapted projection casts its input to float32 and back (hidden casts); False keeps the
    adapters in the model's dtype."""
    import torch

    from ..core.extras import needs
    from . import import_bitsandbytes

    with contextlib.suppress(ImportError):
        import_bitsandbytes()  # before peft, which imports it; LoRA in bf16 runs without it
    with needs("workloads"):
        from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    lora = lora or LoraSettings()
    built = build_model(
        preset,
        device=device,
        dtype=dtype or torch.bfloat16,
        quantization=quantization,
        attn_implementation=attn_implementation,
        seed=seed,
    )
    model = built.model
    lora.check(model.config.hidden_size)
    if quantization is not None:
        # freezes the base, upcasts norms/embeddings to fp32 as the QLoRA recipe does;
        # checkpointing is enabled below, explicitly, and verified by the benchmarks
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    else:
        for p in model.parameters():
            p.requires_grad_(False)
    if gradient_checkpointing:
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x name
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        model.enable_input_require_grads()
    model.config.use_cache = False
    cfg = LoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.targets),
        task_type="CAUSAL_LM",
    )
    try:
        model = get_peft_model(model, cfg, autocast_adapter_dtype=fp32_adapters)
    except ValueError as exc:
        raise WorkloadError(f"LoRA setup failed: {exc}") from None
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    return Trainer(built, model, optimizer, gradient_checkpointing, seq_len)


# ------------------------------------------------------------------------ batch sweeps


def try_batch(
    trainer: Trainer, batch: int, run: Callable[[Trainer, Any], Any], vocab: int | None = None
) -> Any:
    """`run(trainer, input_ids)` at this batch size. Out of memory is an outcome, not a
    crash: the memory is released and "oom" returned, unless `run` returned a Result with
    outcome "oom" itself (gpu_benchmark(..., on_oom="record"))."""
    from ..measure.timing import is_oom, release_memory

    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise WorkloadError(f"batch size must be a whole number >= 1, got {batch!r}")
    device = next(trainer.model.parameters()).device
    vocab = vocab or trainer.model.config.vocab_size
    try:
        ids = fixed_batch(batch, trainer.seq_len, vocab, device)
        out = run(trainer, ids)
    except Exception as exc:
        if not is_oom(exc):
            raise
        trainer.optimizer.zero_grad(set_to_none=True)
        release_memory(exc)
        return "oom"
    finally:
        trainer.optimizer.zero_grad(set_to_none=True)
    if getattr(out, "outcome", None) == "oom":
        release_memory()
    return out


def max_batch_search(fits: Callable[[int], bool], start: int = 1, limit: int = 4096) -> int:
    """Largest batch in [0, limit] for which `fits` holds, assuming it is monotone:
    doubling until the first failure, then bisection. 0 if even `start` fails."""
    if not fits(start):
        return 0
    lo, hi = start, None
    b = start
    while hi is None:
        nxt = min(b * 2, limit)
        if nxt == b:
            return b
        if fits(nxt):
            lo = b = nxt
        else:
            hi = nxt
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def sweep_batches(batches: Sequence[int]) -> list[int]:
    out = sorted(set(batches))
    if not out or out[0] < 1:
        raise WorkloadError(f"batch sizes must be whole numbers >= 1, got {list(batches)!r}")
    return out

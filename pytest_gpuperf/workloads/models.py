"""Llama model presets with random weights, built on the target device without downloads.

Speed and memory depend on shapes, not on weight values, so a random-weight model built
from the real architecture config measures both as well as the trained one. Models are
built on the meta device and materialised one decoder layer at a time, each layer
quantized to nf4 (bitsandbytes) right after it is made when asked: that is how the 70B
preset fits (one bf16 layer at a time, never the whole bf16 model). Users with real
weights point `GPUPERF_WEIGHTS` (or `weights=`) at a local checkpoint directory instead.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.extras import needs


class WorkloadError(ValueError):
    """A workload that cannot be set up as asked; the message says why."""


@dataclass(frozen=True)
class Preset:
    name: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int = 32000
    max_position_embeddings: int = 4096
    description: str = ""

    def config(self, **overrides: Any) -> Any:
        with needs("workloads"):
            from transformers import LlamaConfig

        kw: dict[str, Any] = dict(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads,
            vocab_size=self.vocab_size,
            max_position_embeddings=self.max_position_embeddings,
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            use_cache=False,
        )
        kw.update(overrides)
        return LlamaConfig(**kw)

    @property
    def parameters(self) -> int:
        """Parameter count from the shapes (embeddings and lm_head included)."""
        h, i, n = self.hidden_size, self.intermediate_size, self.num_hidden_layers
        head = h // self.num_attention_heads
        attn = h * h * 2 + 2 * h * self.num_key_value_heads * head
        per_layer = attn + 3 * h * i + 2 * h
        return n * per_layer + 2 * self.vocab_size * h + h


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "tiny",
            64,
            192,  # a multiple of 32: bitsandbytes' CPU kernels for 4-bit inference need it
            2,
            4,
            4,
            vocab_size=1024,
            max_position_embeddings=2048,
            description="tiny Llama for the CPU (about 0.2M parameters)",
        ),
        Preset(
            "llama-1b",
            2048,
            5632,
            16,
            32,
            32,
            description="0.95B Llama (the DESIGN notes' timing model)",
        ),
        Preset("llama2-7b", 4096, 11008, 32, 32, 32, description="Llama-2 7B architecture"),
        Preset("llama2-13b", 5120, 13824, 40, 40, 40, description="Llama-2 13B architecture"),
        Preset("llama2-70b", 8192, 28672, 80, 64, 8, description="Llama-2 70B architecture"),
    )
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise WorkloadError(f"unknown model preset {name!r}; known: {', '.join(PRESETS)}") from None


@dataclass
class BuiltModel:
    model: Any
    preset: str
    quantization: str | None
    build_s: float
    device: str
    weights: str = "random"
    notes: list[str] = field(default_factory=list)


def _init_params(module: Any, torch: Any, generator: Any) -> None:
    with torch.no_grad():
        for p in module.parameters(recurse=True):
            if p.ndim == 1:  # RMSNorm weights
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02, generator=generator)


def _quantize_linears(layer: Any, torch: Any, compute_dtype: Any, device: Any) -> None:
    from . import import_bitsandbytes

    bnb = import_bitsandbytes()

    for parent in list(layer.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear:
                continue
            q = bnb.nn.Linear4bit(
                child.in_features,
                child.out_features,
                bias=child.bias is not None,
                compute_dtype=compute_dtype,
                quant_type="nf4",
                quant_storage=torch.uint8,
                device="meta",
            )
            q.weight = bnb.nn.Params4bit(
                child.weight.data, requires_grad=False, quant_type="nf4"
            ).to(device)  # moving a Params4bit quantizes it
            if child.bias is not None:
                q.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
            setattr(parent, child_name, q)
            del child


def build_model(
    preset: str,
    *,
    device: Any = "cpu",
    dtype: Any = None,
    quantization: str | None = None,
    attn_implementation: str = "sdpa",
    seed: int = 0,
    weights: str | os.PathLike[str] | None = None,
) -> BuiltModel:
    """A Llama of `preset` shape on `device`, random weights unless `weights` is given.

    quantization: None (weights in `dtype`) or "nf4" (bitsandbytes 4-bit NF4, compute in
    `dtype`, default bfloat16). `weights` (or env GPUPERF_WEIGHTS) loads a local
    checkpoint directory with `from_pretrained(local_files_only=True)` instead.
    """
    import torch

    spec = get_preset(preset)
    if quantization not in (None, "nf4"):
        raise WorkloadError(f"quantization must be None or 'nf4', got {quantization!r}")
    dtype = dtype or torch.bfloat16
    device = torch.device(device)
    if quantization == "nf4":  # before anything is built: a missing extra is named at once
        from . import import_bitsandbytes

        import_bitsandbytes()
    t0 = time.perf_counter()
    weights = weights or os.environ.get("GPUPERF_WEIGHTS") or None
    if weights is not None:
        return _load_local(
            spec, Path(weights), device, dtype, quantization, attn_implementation, t0
        )

    with needs("workloads"):
        from transformers import AutoModelForCausalLM

    config = spec.config(attn_implementation=attn_implementation)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    gen = torch.Generator(device=device).manual_seed(seed)
    core = model.model
    for part in (core.embed_tokens, core.norm, model.lm_head):
        part.to_empty(device=device)
        _init_params(part, torch, gen)
    for layer in core.layers:
        layer.to_empty(device=device)
        _init_params(layer, torch, gen)
        if quantization == "nf4":
            _quantize_linears(layer, torch, dtype, device)
    # non-persistent buffers (rotary frequencies) are not materialised by to_empty
    core.rotary_emb = type(core.rotary_emb)(config=config).to(device)
    leftovers = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if leftovers:
        raise WorkloadError(f"model build left tensors on the meta device: {leftovers[:5]}")
    if quantization == "nf4":
        model.is_loaded_in_4bit = True  # what peft's prepare_model_for_kbit_training checks
    if device.type == "cuda":
        torch.cuda.synchronize()
    return BuiltModel(model, preset, quantization, time.perf_counter() - t0, str(device))


def _load_local(
    spec: Preset,
    path: Path,
    device: Any,
    dtype: Any,
    quantization: str | None,
    attn_implementation: str,
    t0: float,
) -> BuiltModel:
    import torch

    with needs("workloads"):
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    if not path.is_dir() or not (path / "config.json").is_file():
        raise WorkloadError(
            f"weights path {str(path)!r} is not a model directory with a config.json "
            "(set by weights= or GPUPERF_WEIGHTS)"
        )
    kw: dict[str, Any] = dict(
        dtype=dtype, local_files_only=True, attn_implementation=attn_implementation
    )
    if quantization == "nf4":
        kw["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype
        )
        kw["device_map"] = {"": device}
    model = AutoModelForCausalLM.from_pretrained(str(path), **kw)
    if quantization is None:
        model.to(device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return BuiltModel(
        model, spec.name, quantization, time.perf_counter() - t0, str(device), weights=str(path)
    )

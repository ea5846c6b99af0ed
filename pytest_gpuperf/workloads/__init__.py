"""Reusable workloads for benchmarks: Llama presets with random weights, LoRA/QLoRA training
steps and batch sweeps, text generation, dtype work. Each module imports torch,
transformers, peft or bitsandbytes only when used."""

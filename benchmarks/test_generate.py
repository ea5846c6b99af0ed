"""Text generation throughput with a fixed output length (greedy)."""

import pytest

from pytest_gpuperf.workloads.generation import generate_eager, prompt
from pytest_gpuperf.workloads.models import build_model

CPU = pytest.mark.cpu_only
GPU = pytest.mark.requires_gpus(1)

EAGER = [
    pytest.param("tiny", 1, 32, marks=CPU, id="tiny-b1-32tok"),
    pytest.param(
        "llama-1b", 1, 64, marks=[GPU, pytest.mark.requires_vram("8GiB")], id="llama-1b-b1-64tok"
    ),
    pytest.param(
        "llama-1b", 32, 64, marks=[GPU, pytest.mark.requires_vram("8GiB")], id="llama-1b-b32-64tok"
    ),
]


@pytest.mark.parametrize(("preset", "batch", "new_tokens"), EAGER)
def test_generate_eager(gpu_benchmark, one_model, device, preset, batch, new_tokens):
    import torch

    built = one_model.get(
        (preset, "eager-gen"), lambda: build_model(preset, device=device, dtype=torch.bfloat16)
    )
    model = built.model.eval()
    ids = prompt(batch, 128, model.config.vocab_size, device)
    result = gpu_benchmark(
        lambda: generate_eager(model, ids, new_tokens), work=batch * new_tokens, unit="tokens"
    )
    assert result.outcome == "ok"

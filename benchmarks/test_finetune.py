"""LoRA and QLoRA fine-tuning: one optimizer step, tokens/s and samples/s, peak memory."""

import pytest

from pytest_gpuperf.workloads.data import fixed_batch
from pytest_gpuperf.workloads.finetune import make_trainer

CPU = pytest.mark.cpu_only
GPU = pytest.mark.requires_gpus(1)

# (preset, batch, seq_len, marks): the CPU run uses the tiny Llama, a GPU the real shapes
LORA = [
    pytest.param("tiny", 4, 64, marks=CPU, id="tiny-b4"),
    pytest.param(
        "llama-1b", 8, 512, marks=[GPU, pytest.mark.requires_vram("16GiB")], id="llama-1b-b8"
    ),
    pytest.param(
        "llama-1b", 32, 512, marks=[GPU, pytest.mark.requires_vram("32GiB")], id="llama-1b-b32"
    ),
]
QLORA = [
    pytest.param("tiny", 4, 64, marks=CPU, id="tiny-b4"),
    pytest.param(
        "llama2-7b", 4, 1024, marks=[GPU, pytest.mark.requires_vram("16GiB")], id="llama2-7b-b4"
    ),
    pytest.param(
        "llama2-13b", 4, 1024, marks=[GPU, pytest.mark.requires_vram("24GiB")], id="llama2-13b-b4"
    ),
    pytest.param(
        "llama2-70b", 1, 1024, marks=[GPU, pytest.mark.requires_vram("44GiB")], id="llama2-70b-b1"
    ),
]


def _trainer(one_model, preset, quantization, seq_len, device):
    key = (preset, quantization, seq_len)
    return one_model.get(
        key,
        lambda: make_trainer(
            preset,
            device=device,
            quantization=quantization,
            seq_len=seq_len,
            gradient_checkpointing=True,
        ),
    )


def _step_benchmark(gpu_benchmark, trainer, batch, seq_len):
    ids = fixed_batch(batch, seq_len, trainer.model.config.vocab_size, trainer_device(trainer))
    trainer.verify_checkpointing(ids)
    result = gpu_benchmark(lambda: trainer.step(ids), work=batch * seq_len, unit="tokens")
    samples_per_s = result.throughput.median / seq_len
    gpu_benchmark.record("samples_per_s", samples_per_s, "samples/s")
    return result


def trainer_device(trainer):
    return next(trainer.model.parameters()).device


@pytest.mark.parametrize(("preset", "batch", "seq_len"), LORA)
def test_lora_step(gpu_benchmark, one_model, device, preset, batch, seq_len):
    trainer = _trainer(one_model, preset, None, seq_len, device)
    result = _step_benchmark(gpu_benchmark, trainer, batch, seq_len)
    assert result.outcome == "ok"


@pytest.mark.parametrize(("preset", "batch", "seq_len"), QLORA)
def test_qlora_step(gpu_benchmark, one_model, device, preset, batch, seq_len):
    trainer = _trainer(one_model, preset, "nf4", seq_len, device)
    result = _step_benchmark(gpu_benchmark, trainer, batch, seq_len)
    assert result.outcome == "ok"

"""LoRA and QLoRA fine-tuning: one optimizer step, tokens/s and samples/s, peak memory."""

import pytest

from pytest_gpuperf.workloads.data import fixed_batch
from pytest_gpuperf.workloads.finetune import make_trainer, max_batch_search, try_batch

CPU = pytest.mark.gpu_cpu_only
GPU = pytest.mark.gpu_requires_gpus(1)

# (preset, batch, seq_len, marks): the CPU run uses the tiny Llama, a GPU the real shapes
LORA = [
    pytest.param("tiny", 4, 64, marks=CPU, id="tiny-b4"),
    pytest.param(
        "llama-1b", 8, 512, marks=[GPU, pytest.mark.gpu_requires_vram("16GiB")], id="llama-1b-b8"
    ),
    pytest.param(
        "llama-1b", 32, 512, marks=[GPU, pytest.mark.gpu_requires_vram("32GiB")], id="llama-1b-b32"
    ),
]
# QLoRA presets: shape of the step, the batch sweep and the max-batch search. The trainer is
# a module-scoped fixture parametrized by preset, so pytest runs every QLoRA test of one
# preset together and builds each model once (the 70B takes tens of seconds to build).
QLORA = {
    "tiny": dict(marks=[CPU], seq_len=64, batch=4, sweep=(1, 2, 4), limit=8),
    "llama2-7b": dict(
        marks=[GPU, pytest.mark.gpu_requires_vram("16GiB")],
        seq_len=1024,
        batch=4,
        sweep=(1, 8, 16, 20, 24, 25, 27),
        limit=64,
    ),
    "llama2-13b": dict(
        marks=[GPU, pytest.mark.gpu_requires_vram("24GiB")],
        seq_len=1024,
        batch=4,
        sweep=(1, 8, 15, 20, 25),
        limit=64,
    ),
    "llama2-70b": dict(
        marks=[GPU, pytest.mark.gpu_requires_vram("44GiB")],
        seq_len=1024,
        batch=1,
        sweep=(1, 2, 4),
        limit=8,
    ),
}


def _with_scale_tier(*big: str) -> list:
    """One param per QLoRA preset, the presets `big` in the `scale` tier (pytest -m scale)."""
    return [
        pytest.param(
            name, marks=[*spec["marks"], *([pytest.mark.scale] if name in big else [])], id=name
        )
        for name, spec in QLORA.items()
    ]


QLORA_PARAMS = _with_scale_tier()
# In the `scale` tier, out of the full suite's 10 minutes on one H200: the 70B batch sweep
# (its max-batch search stays), and realistic lengths with the 13B and 70B (8 steps per call,
# tens of seconds each; the full suite runs them with the 7B).
SWEEP_PARAMS = _with_scale_tier("llama2-70b")
REALISTIC_PARAMS = _with_scale_tier("llama2-13b", "llama2-70b")


@pytest.fixture(scope="module")
def qlora(request, one_model, device):
    name = request.param
    spec = QLORA[name]
    return name, spec, _trainer(one_model, name, "nf4", spec["seq_len"], device)


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
    gpu_benchmark.record("samples_per_s", samples_per_s, "samples/s", derived_from="")
    return result


def trainer_device(trainer):
    return next(trainer.model.parameters()).device


@pytest.mark.parametrize(("preset", "batch", "seq_len"), LORA)
def test_lora_step(gpu_benchmark, one_model, device, preset, batch, seq_len):
    trainer = _trainer(one_model, preset, None, seq_len, device)
    result = _step_benchmark(gpu_benchmark, trainer, batch, seq_len)
    assert result.outcome == "ok"


@pytest.mark.parametrize("qlora", QLORA_PARAMS, indirect=True)
def test_qlora_step(gpu_benchmark, qlora):
    _, spec, trainer = qlora
    result = _step_benchmark(gpu_benchmark, trainer, spec["batch"], spec["seq_len"])
    assert result.outcome == "ok"


# Batch sweeps up to the out-of-memory point, as the reports did (batch 1 to 27 at 1024
# tokens). An OOM is a recorded result ("OOM at batch 25"), its memory released, and the
# sweep stops there. Under --gpuperf-emulate=a100-40gb the sweep answers "up to which batch on
# a 40 GB card" on a larger GPU. A sweep point answers "how fast, and does it fit", not a
# gated 0.5% figure: one warm-up step (the model is warm; a new batch size only needs its
# allocations and kernel choices made) and three timed steps, even of 4 s each.
SWEEP_SETTINGS = dict(
    min_samples=3,
    max_samples=3,
    min_time=0.0,
    max_time=30.0,
    target=0.02,
    warmup_time=0.0,
    warmup_max_time=0.1,
)


@pytest.mark.parametrize("qlora", SWEEP_PARAMS, indirect=True)
def test_qlora_batch_sweep(gpu_benchmark, qlora):
    _, spec, trainer = qlora
    seq_len = spec["seq_len"]
    results = []
    for batch in spec["sweep"]:
        gpu_benchmark.params["batch"] = batch  # each point's batch, the report's axis

        def step_at(tr, ids, batch=batch):
            return gpu_benchmark(
                lambda: tr.step(ids),
                work=batch * seq_len,
                unit="tokens",
                metric=f"batch{batch}",
                on_oom="record",
                **SWEEP_SETTINGS,
            )

        result = try_batch(trainer, batch, step_at)
        results.append(result)
        if result.outcome == "oom":
            del gpu_benchmark.params["batch"]
            gpu_benchmark.record("first_oom_batch", batch, "samples", note=f"OOM at batch {batch}")
            break
    assert results and all(r.outcome == "ok" for r in results[:-1])


# The largest batch that fits, found by doubling and bisection (not a full sweep): a memory
# regression shows up as a smaller max batch, gated like any metric.
@pytest.mark.parametrize("qlora", QLORA_PARAMS, indirect=True)
def test_qlora_max_batch(gpu_benchmark, qlora):
    _, spec, trainer = qlora
    limit = spec["limit"]

    def one_step(tr, ids):
        tr.step(ids)
        return "ok"

    def fits(batch):
        return try_batch(trainer, batch, one_step) == "ok"

    best = max_batch_search(fits, start=1, limit=limit)
    note = f"the search limit {limit}: larger batches may fit" if best == limit else None
    gpu_benchmark.record("max_batch", best, "samples", note=note)
    assert best >= 0


# Hidden dtype conversions: peft keeps LoRA weights in float32 on a bfloat16 model by
# default, so each adapted projection casts its input up and its output back. The audit
# counts those casts in one step; the benchmark times the step with and without them.
HIDDEN = [
    pytest.param("tiny", 4, 64, marks=CPU, id="tiny"),
    pytest.param(
        "llama-1b", 32, 512, marks=[GPU, pytest.mark.gpu_requires_vram("32GiB")], id="llama-1b-b32"
    ),
]


@pytest.mark.parametrize("adapters", ["fp32-adapters", "bf16-adapters"])
@pytest.mark.parametrize(("preset", "batch", "seq_len"), HIDDEN)
def test_hidden_casts(
    gpu_benchmark, gpu_cast_audit, one_model, device, preset, batch, seq_len, adapters
):
    fp32 = adapters == "fp32-adapters"
    trainer = one_model.get(
        (preset, "lora", seq_len, adapters),
        lambda: make_trainer(
            preset,
            device=device,
            quantization=None,
            seq_len=seq_len,
            gradient_checkpointing=True,
            fp32_adapters=fp32,
        ),
    )
    ids = fixed_batch(batch, seq_len, trainer.model.config.vocab_size, trainer_device(trainer))
    with gpu_cast_audit() as audit:
        trainer.step(ids)
    gpu_benchmark.record(
        "casts_per_step", audit.count, "casts", higher_is_better=False, note=audit.summary()
    )
    gpu_benchmark.record("cast_bytes_per_step", audit.bytes, "bytes", higher_is_better=False)
    result = gpu_benchmark(lambda: trainer.step(ids), work=batch * seq_len, unit="tokens")
    assert result.outcome == "ok"
    # peft's float32 adapters add an upcast of each adapted projection's input
    assert audit.count > 0


# Realistic lengths: sequences drawn like a 1,000-text chat set (58 to 11,400 characters),
# padded per batch as a data collator does. One call trains on the same 8 batches, so the
# work per call is fixed: the real (unpadded) tokens in them. One call is 8 steps (seconds on
# a GPU): at most 5 timed calls after the warm-up.
@pytest.mark.gpuperf(min_samples=3, max_samples=5, max_time=30)
@pytest.mark.parametrize("qlora", REALISTIC_PARAMS, indirect=True)
def test_qlora_realistic_lengths(gpu_benchmark, qlora):
    from pytest_gpuperf.workloads.data import instruction_lengths, padded_batches

    _, spec, trainer = qlora
    lengths = instruction_lengths(8 * spec["batch"], seed=0, max_tokens=spec["seq_len"])
    batches = padded_batches(
        lengths, spec["batch"], trainer.model.config.vocab_size, trainer_device(trainer)
    )

    def epoch():
        for ids, mask in batches:
            trainer.step_padded(ids, mask)

    result = gpu_benchmark(epoch, work=sum(lengths), unit="tokens")
    padded = sum(ids.numel() for ids, _ in batches)
    gpu_benchmark.record(
        "padding_fraction", 1 - sum(lengths) / padded, "fraction", higher_is_better=False
    )
    assert result.outcome == "ok"

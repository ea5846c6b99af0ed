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


# GPU-bound generation: our own greedy loop around a static KV cache, the one-token forward
# replayed from a CUDA graph. Time to first token (prefill) and time per output token
# (decode) are measured separately; decode speed is compared with the memory-bandwidth
# limit (weight bytes read per token over the copy bandwidth measured in the same test).
# "-compiled": the one-token step through torch.compile, captured in the same CUDA graph
# (compile time recorded apart, as compile_s). Its greedy tokens equal transformers' own
# (tests/test_workloads.py, tests/test_gpu.py).
STATIC = [
    pytest.param("tiny", 1, 32, False, marks=CPU, id="tiny-b1-32tok"),
    *[
        pytest.param(
            "llama-1b",
            b,
            n,
            compiled,
            marks=[GPU, pytest.mark.requires_vram("8GiB")],
            id=f"llama-1b-b{b}-{n}tok" + ("-compiled" if compiled else ""),
        )
        for b, n, compiled in (
            (1, 64, False),
            (1, 256, False),
            (1, 1024, False),
            (8, 256, False),
            (1, 256, True),
            (8, 256, True),
        )
    ],
]


@pytest.mark.parametrize(("preset", "batch", "new_tokens", "compiled"), STATIC)
def test_generate_static(
    gpu_benchmark, one_model, device, gpu, preset, batch, new_tokens, compiled
):
    import torch

    from pytest_gpuperf.workloads.generation import StaticGreedyDecoder, weight_bytes

    built = one_model.get(
        (preset, "eager-gen"), lambda: build_model(preset, device=device, dtype=torch.bfloat16)
    )
    model = built.model.eval()
    prompt_len = 128
    ids = prompt(batch, prompt_len, model.config.vocab_size, device)
    dec = StaticGreedyDecoder(model, batch, prompt_len, new_tokens, compile=compiled)
    dec.warm(ids)  # compiles (if asked) and captures the graph before anything is timed
    if dec.compile_s is not None:
        gpu_benchmark.record(
            "compile_s", dec.compile_s, "s", note="compiling the step; not in any timed figure"
        )

    first = gpu_benchmark(lambda: dec.generate(ids, 1), work=batch, unit="tokens", metric="prefill")
    full = gpu_benchmark(
        lambda: dec.generate(ids, new_tokens),
        work=batch * new_tokens,
        unit="tokens",
        metric="generate",
    )
    per_token = max(1e-12, (full.time.median - first.time.median) / (new_tokens - 1))
    decode_tps = batch / per_token

    numel = (1 << 30) // 2 if gpu else 1 << 22
    src = torch.randn(numel, device=device, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy = gpu_benchmark(lambda: dst.copy_(src), work=2 * src.nbytes, unit="bytes", metric="copy")
    limit_tps = batch * copy.throughput.median * 1e9 / weight_bytes(model)
    note = dec.describe()
    gpu_benchmark.record("decode_tokens_per_s", decode_tps, "tokens/s", note=note)
    gpu_benchmark.record(
        "time_to_first_token_ms", first.time.median * 1e3, "ms", higher_is_better=False
    )
    gpu_benchmark.record(
        "bandwidth_limit_fraction",
        decode_tps / limit_tps,
        "fraction",
        note=f"limit {limit_tps:,.0f} tokens/s from {weight_bytes(model) / 2**30:.2f} GiB of weights per token",
    )
    assert decode_tps > 0

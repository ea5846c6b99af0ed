"""Workloads on the CPU: the tiny Llama through the real transformers, peft and
bitsandbytes code paths; bad input; sweeps; the cast audit."""

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from pytest_gpuperf.measure.casts import CastAudit  # noqa: E402
from pytest_gpuperf.workloads.data import (  # noqa: E402
    MAX_CHARS,
    MIN_CHARS,
    fixed_batch,
    instruction_lengths,
    padded_batches,
)
from pytest_gpuperf.workloads.finetune import (  # noqa: E402
    LoraSettings,
    make_trainer,
    max_batch_search,
    try_batch,
)
from pytest_gpuperf.workloads.generation import generate_eager, prompt  # noqa: E402
from pytest_gpuperf.workloads.models import PRESETS, WorkloadError, build_model  # noqa: E402


def test_presets_have_the_llama2_shapes():
    assert PRESETS["llama2-7b"].parameters == pytest.approx(6.74e9, rel=0.01)
    assert PRESETS["llama2-13b"].parameters == pytest.approx(13.0e9, rel=0.01)
    assert PRESETS["llama2-70b"].parameters == pytest.approx(69.0e9, rel=0.01)
    assert PRESETS["llama-1b"].parameters == pytest.approx(0.95e9, rel=0.02)


def test_tiny_nf4_model_is_quantized_and_has_no_meta_tensors():
    import bitsandbytes as bnb

    built = build_model("tiny", device="cpu", quantization="nf4")
    q = built.model.model.layers[0].self_attn.q_proj
    assert isinstance(q, bnb.nn.Linear4bit) and q.weight.dtype == torch.uint8
    assert not any(p.is_meta for p in built.model.parameters())
    out = built.model(input_ids=fixed_batch(1, 8, 1024, "cpu"))
    assert torch.isfinite(out.logits.float()).all()


@pytest.mark.parametrize("quantization", ["nf4", None])
def test_training_step_with_verified_checkpointing(quantization):
    tr = make_trainer("tiny", device="cpu", quantization=quantization, seq_len=32)
    ids = fixed_batch(2, 32, 1024, "cpu")
    assert tr.verify_checkpointing(ids) == 2 * 2  # 2 layers, each run twice
    before = [p.detach().clone() for p in tr.optimizer.param_groups[0]["params"]]
    tr.step(ids)
    tr.step(ids)
    after = tr.optimizer.param_groups[0]["params"]
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))


def test_checkpointing_that_is_not_in_effect_is_caught():
    tr = make_trainer("tiny", device="cpu", quantization=None, seq_len=16)
    tr.model.eval()  # checkpointing only applies in training mode
    with pytest.raises(WorkloadError, match="asked on but is not in effect"):
        tr.verify_checkpointing(fixed_batch(1, 16, 1024, "cpu"))


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: build_model("llama3-8b"), "unknown model preset 'llama3-8b'; known: tiny"),
        (lambda: build_model("tiny", quantization="int3"), "quantization must be None or 'nf4'"),
        (lambda: build_model("tiny", weights="/nonexistent/ckpt"), "is not a model directory"),
        (lambda: make_trainer("tiny", device="cpu", lora=LoraSettings(rank=0)), "rank must be"),
        (
            lambda: make_trainer("tiny", device="cpu", lora=LoraSettings(rank=65)),
            "LoRA rank 65 does not fit a model of hidden size 64",
        ),
        (lambda: prompt(0, 8, 100, "cpu"), "batch size must be a whole number >= 1, got 0"),
    ],
)
def test_bad_input_is_a_clear_error(call, fragment):
    with pytest.raises(WorkloadError) as info:
        call()
    assert fragment in str(info.value)


def test_missing_bitsandbytes_is_a_clear_error(monkeypatch):
    from pytest_gpuperf.core.extras import MissingExtra

    monkeypatch.setitem(sys.modules, "bitsandbytes", None)
    with pytest.raises(MissingExtra, match=r"pip install 'pytest-gpuperf\[workloads\]'"):
        build_model("tiny", quantization="nf4")


def test_weights_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUPERF_WEIGHTS", str(tmp_path))
    with pytest.raises(WorkloadError, match="GPUPERF_WEIGHTS"):
        build_model("tiny")


def test_local_checkpoint_is_loaded(tmp_path):
    built = build_model("tiny", dtype=torch.float32)
    built.model.save_pretrained(tmp_path)
    again = build_model("tiny", dtype=torch.float32, weights=tmp_path)
    assert again.weights == str(tmp_path)
    ids = fixed_batch(1, 8, 1024, "cpu")
    assert torch.allclose(built.model(input_ids=ids).logits, again.model(input_ids=ids).logits)


def test_an_oom_in_a_sweep_is_a_result_and_batch_zero_is_refused():
    tr = make_trainer("tiny", device="cpu", quantization=None, seq_len=16)

    def run(trainer, ids):
        if ids.shape[0] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9 GiB")
        trainer.step(ids)
        return "ok"

    assert try_batch(tr, 2, run) == "ok"
    assert try_batch(tr, 4, run) == "oom"
    with pytest.raises(WorkloadError, match="got 0"):
        try_batch(tr, 0, run)
    with pytest.raises(ValueError, match="boom"):
        try_batch(tr, 1, lambda t, i: (_ for _ in ()).throw(ValueError("boom")))


@given(st.integers(min_value=0, max_value=300), st.integers(min_value=1, max_value=256))
def test_max_batch_search_finds_the_largest_fitting_batch(true_max, limit):
    calls = []

    def fits(b):
        calls.append(b)
        return b <= true_max

    assert max_batch_search(fits, limit=limit) == min(true_max, limit)
    assert len(calls) <= 2 * limit.bit_length() + 2  # a search, not a sweep


def test_generation_has_a_fixed_output_length():
    built = build_model("tiny", dtype=torch.float32)
    ids = prompt(2, 8, 1024, "cpu")
    assert generate_eager(built.model.eval(), ids, 5).shape == (2, 13)


def test_instruction_lengths_are_reproducible_and_in_range():
    a = instruction_lengths(1000, seed=3)
    assert a == instruction_lengths(1000, seed=3) and a != instruction_lengths(1000, seed=4)
    assert min(a) >= round(MIN_CHARS / 4) and max(a) <= round(MAX_CHARS / 4)
    first = a[:10]
    batches = padded_batches(first, 4, 1024, "cpu")
    assert [ids.shape[0] for ids, _ in batches] == [4, 4, 2]
    for i, (ids, mask) in enumerate(batches):
        chunk = first[i * 4 : (i + 1) * 4]
        assert int(mask.sum()) == sum(chunk) and ids.shape[1] == max(chunk)


def test_cast_audit_counts_conversions_and_bytes():
    x = torch.randn(10, 10, dtype=torch.bfloat16)
    with CastAudit() as audit:
        x.float()
        x.to(torch.bfloat16)  # same dtype: no conversion
        torch.empty(10, 10, dtype=torch.float16).copy_(x)
    assert audit.count == 2
    assert audit.by_pair[("torch.bfloat16", "torch.float32")] == [1, 100 * (2 + 4)]
    assert audit.bytes == 100 * 6 + 100 * 4


def test_cast_audit_sees_peft_float32_adapters():
    ids = fixed_batch(1, 16, 1024, "cpu")
    counts = {}
    for fp32 in (True, False):
        tr = make_trainer("tiny", device="cpu", quantization=None, seq_len=16, fp32_adapters=fp32)
        with CastAudit() as audit:
            tr.step(ids)
        counts[fp32] = audit.count
    assert counts[True] > counts[False] > 0


@pytest.mark.filterwarnings("error:.*past_key_values.*:FutureWarning")
def test_static_greedy_decoder_matches_hf_generate():
    from pytest_gpuperf.workloads.generation import StaticGreedyDecoder

    model = build_model("tiny", dtype=torch.float32).model.eval()
    ids = prompt(2, 8, 1024, "cpu")
    reference = generate_eager(model, ids, 6)[:, 8:]
    dec = StaticGreedyDecoder(model, 2, 8, 6)
    assert torch.equal(dec.generate(ids), reference)
    assert torch.equal(dec.generate(ids, 3), reference[:, :3])  # the cache was reset
    assert dec.graph is None and dec.graph_error is None  # no CUDA graph on the CPU
    with pytest.raises(WorkloadError, match=r"new_tokens must be in 1\.\.6"):
        dec.generate(ids, 7)
    with pytest.raises(WorkloadError, match="input_ids must be"):
        dec.generate(prompt(1, 8, 1024, "cpu"))


def test_compiled_decoder_matches_hf_generate_for_32_tokens():
    """The GPU-bound decoder's compiled step (torch.compile over a static KV cache) gives
    transformers' greedy tokens, for 32 tokens of a seeded model; its compile time is kept
    apart, measured by warm()."""
    from pytest_gpuperf.workloads.generation import StaticGreedyDecoder

    model = build_model("tiny", dtype=torch.float32, seed=1).model.eval()
    ids = prompt(1, 16, model.config.vocab_size, "cpu", seed=3)
    reference = generate_eager(model, ids, 32)[:, 16:]
    dec = StaticGreedyDecoder(model, 1, 16, 32, compile=True)
    dec.warm(ids)
    assert dec.compile_error is None and dec.compiled
    assert dec.compile_s is not None and dec.compile_s > 0
    assert torch.equal(dec.generate(ids), reference)
    assert dec.describe() == "torch.compile (default), no CUDA"  # the mode, for the note


def test_a_step_that_does_not_compile_runs_uncompiled_and_says_why(monkeypatch):
    from pytest_gpuperf.workloads.generation import StaticGreedyDecoder

    def broken(fn, **kwargs):
        def run(*args, **kw):
            raise RuntimeError("inductor: unsupported op\nmore")

        return run

    monkeypatch.setattr(torch, "compile", broken)
    model = build_model("tiny", dtype=torch.float32).model.eval()
    ids = prompt(1, 8, model.config.vocab_size, "cpu")
    dec = StaticGreedyDecoder(model, 1, 8, 6, compile=True)
    dec.warm(ids)
    assert dec.compile_error == "RuntimeError: inductor: unsupported op"
    assert not dec.compiled and dec.compile_s is None
    assert torch.equal(dec.generate(ids), generate_eager(model, ids, 6)[:, 8:])
    assert "compile failed: RuntimeError: inductor: unsupported op" in dec.describe()


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_zero_new_tokens_is_a_clear_error(bad):
    from pytest_gpuperf.workloads.generation import StaticGreedyDecoder

    model = build_model("tiny", dtype=torch.float32).model.eval()
    with pytest.raises(WorkloadError, match="max_new_tokens must be"):
        StaticGreedyDecoder(model, 1, 8, bad)
    with pytest.raises(WorkloadError, match="new_tokens must be a whole number >= 1"):
        generate_eager(model, prompt(1, 8, model.config.vocab_size, "cpu"), bad)


def test_weight_bytes_of_nf4_counts_the_quantization_constants():
    from pytest_gpuperf.workloads.generation import weight_bytes

    model = build_model("tiny", quantization="nf4").model
    params = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    absmax = sum(
        m.weight.quant_state.absmax.numel() * m.weight.quant_state.absmax.element_size()
        for m in model.modules()
        if getattr(getattr(m, "weight", None), "quant_state", None) is not None
    )
    assert absmax > 0 and weight_bytes(model) >= params + absmax


def test_padded_step_masks_the_padding():
    tr = make_trainer("tiny", device="cpu", quantization="nf4", seq_len=32)
    lengths = [5, 32, 17]
    ((ids, mask),) = padded_batches(lengths, 3, 1024, "cpu")
    loss = tr.step_padded(ids, mask)
    assert torch.isfinite(loss)
    garbage = ids.masked_fill(mask == 0, 7)  # what sits in the padding must not matter
    tr2 = make_trainer("tiny", device="cpu", quantization="nf4", seq_len=32)
    assert torch.allclose(tr2.step_padded(garbage, mask), loss)


@pytest.mark.slow
def test_importing_bitsandbytes_and_peft_prints_no_deprecation_warning():
    """The shipped suite's output stays free of torch's own torch.jit.script_method warning,
    which importing bitsandbytes (and so peft) triggers: checked in a fresh interpreter,
    where the import really happens."""
    import subprocess
    import sys

    code = (
        "from pytest_gpuperf.workloads import import_bitsandbytes\n"
        "import_bitsandbytes()\n"
        "import peft\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]

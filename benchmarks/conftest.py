"""The shipped benchmark suite. Its size follows the device: on the CPU (the embedded
default) every benchmark runs with the tiny Llama and small shapes, so the whole suite runs
in about 30 s on 2 cores; on a GPU the real presets and shapes run, each gated by the
VRAM it needs.

Tiers: `pytest benchmarks -m smoke` runs one benchmark per family, GPU-bound ones first
(for pull requests); `pytest benchmarks` runs the full suite (nightly)."""

from __future__ import annotations

import pytest

# The smoke tier, by test id within benchmarks/: one benchmark per family, GPU-bound ones
# (stable to well under 1% between sessions on the H200) first; the tiny variants are the
# same benchmarks on the CPU. tests/test_suite.py checks that each id exists.
SMOKE = (
    "test_dtype.py::test_matmul[bf16]",
    "test_dtype.py::test_cast_bandwidth[fp32-to-bf16]",
    "test_finetune.py::test_lora_step[llama-1b-b32]",
    "test_finetune.py::test_lora_step[tiny-b4]",
    "test_finetune.py::test_qlora_step[llama2-7b]",
    "test_finetune.py::test_qlora_step[tiny]",
    "test_generate.py::test_generate_static[llama-1b-b1-256tok]",
    "test_generate.py::test_generate_static[tiny-b1-32tok]",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "smoke: the pull-request tier of the shipped suite (pytest benchmarks -m smoke)"
    )
    config.addinivalue_line(
        "markers",
        "scale: the large-model tier: generation with the 7B, 13B and 70B models, realistic-"
        "length fine-tuning of the 13B and 70B (pytest benchmarks -m 'not scale' leaves it out)",
    )
    # pytest-xdist registers it when installed; --strict-markers must not fail without it
    config.addinivalue_line("markers", "xdist_group(name): tests run by one xdist worker")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker, and before xdist groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("benchmarks/", 1)[-1] in SMOKE:
            item.add_marker(pytest.mark.smoke)
        # `pytest -n <GPUs> --dist loadgroup`: a preset's tests stay on one worker (one GPU),
        # so its model is built once
        params = getattr(getattr(item, "callspec", None), "params", {})
        preset = params.get("preset") or params.get("qlora")
        if isinstance(preset, str):
            item.add_marker(pytest.mark.xdist_group(preset))


@pytest.fixture(scope="session")
def gpu(gpu_device) -> bool:
    """True when this run has a GPU (CUDA), False on the CPU."""
    return gpu_device.kind == "cuda"


@pytest.fixture(scope="session")
def device(gpu: bool):
    import torch

    return torch.device("cuda" if gpu else "cpu")


class OneModel:
    """Keeps the last model built and frees it before building another: the big presets
    must not sit in GPU memory together (and emulated memory caps must hold)."""

    def __init__(self) -> None:
        self.key = None
        self.value = None

    def get(self, key, build):
        if key != self.key:
            self.clear()
            self.value = build()
            self.key = key
        return self.value

    def clear(self) -> None:
        from pytest_gpuperf import release_memory

        self.key = self.value = None
        release_memory()


@pytest.fixture(scope="session")
def one_model():
    cache = OneModel()
    yield cache
    cache.clear()


@pytest.fixture(autouse=True)
def _no_other_tests_model(request: pytest.FixtureRequest) -> None:
    """A test that uses no cached model runs with none resident: another test's model left
    in the cache would count in its peak reserved memory, which would then depend on what
    ran before it in the same process (on the H200 the fp32 matmul's peak was 0.78 GiB in a
    process of its own, 8.6 and 36 GiB in `-n 2` workers that had run the model groups).
    Consecutive tests of one model keep it."""
    if "one_model" not in request.fixturenames:
        cache = request.getfixturevalue("one_model")
        if cache.key is not None:
            cache.clear()

"""The shipped benchmark suite. Its size follows the device: on the CPU (the embedded
default) every benchmark runs with the tiny Llama and small shapes, so the whole suite runs
in about a minute on 2 cores; on a GPU the real presets and shapes run, each gated by the
VRAM it needs."""

from __future__ import annotations

import pytest


def on_gpu(config: pytest.Config) -> bool:
    from pytest_gpuperf.plugin import get_session

    return get_session(config).snapshot().kind == "cuda"


@pytest.fixture(scope="session")
def gpu(pytestconfig: pytest.Config) -> bool:
    """True when this run has a GPU (CUDA), False on the CPU."""
    return on_gpu(pytestconfig)


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
        from pytest_gpuperf.timing import release_memory

        self.key = self.value = None
        release_memory()


@pytest.fixture(scope="session")
def one_model():
    cache = OneModel()
    yield cache
    cache.clear()

import contextlib

# pytester's inline sessions restore sys.modules after each run; a torch imported inside
# one and dropped afterwards cannot be imported again in the same process (it crashes).
# Importing it once here keeps it out of those snapshots.
with contextlib.suppress(ImportError):
    import torch  # noqa: F401
with contextlib.suppress(ImportError):  # the same holds for scipy's extensions (verdicts)
    import scipy.special  # noqa: F401
with contextlib.suppress(ImportError):  # and for matplotlib (the report's charts): a
    # chart drawn after an inline run that first imported its figure modules met two copies
    # of their classes ("Single argument to subplot must be a three-digit integer")
    import matplotlib.backends.backend_svg
    import matplotlib.figure  # noqa: F401

# Hypothesis: CI must be deterministic, so by default the examples are derived from each
# test's source (derandomize) and no per-example deadline applies (a loaded 2-core runner
# is slow at times, and that is not a failure). `pytest --hypothesis-profile=explore` draws
# fresh random examples and keeps a failure database, for searching harder locally.
with contextlib.suppress(ImportError):
    from hypothesis import settings

    settings.register_profile("deterministic", derandomize=True, deadline=None, database=None)
    settings.register_profile("explore", deadline=None, max_examples=1000)
    settings.load_profile("deterministic")


import pytest


@pytest.fixture
def project(pytester, monkeypatch):
    """A pytester project with two virtual-clock benchmarks (tests/gateproject.py)."""
    from .gateproject import make_project

    return make_project(pytester, monkeypatch)


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch):
    """The plugin speaks up in CI (CI, GITHUB_ACTIONS): tests that want that set it
    themselves, so that the suite behaves the same on a laptop and in CI."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch):
    """The pytest sessions the tests start are not pytest-xdist workers, even when this
    suite runs under -n: pytest-benchmark reads PYTEST_XDIST_WORKER and turns itself off,
    and a fresh process the plugin starts must not inherit what the outer worker has."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _cuda_visible_devices_kept():
    """An in-process session that plays a pytest-xdist worker pins its GPU through
    CUDA_VISIBLE_DEVICES in os.environ; later tests (device detection) must not see it."""
    import os

    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    yield
    if before is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = before

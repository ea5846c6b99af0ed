"""Optional dependencies, installed by extras: a missing one is an error naming the extra.

The plugin itself (markers, fixtures, `gpu_benchmark`, the gate, `--gpuperf-info`,
`--gpuperf-profiles`) needs only the core dependencies. The shipped workloads need
transformers, peft and bitsandbytes (`pytest-gpuperf[workloads]`), the HTML report's charts
matplotlib and jinja2 (`pytest-gpuperf[report]`); `pytest-gpuperf[suite]` installs everything the
shipped benchmark suite needs. Nothing here imports anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

EXTRAS = {
    "workloads": ("transformers", "peft", "bitsandbytes"),
    "report": ("matplotlib", "jinja2"),
}
PURPOSE = {
    "workloads": "the shipped workloads (pytest_gpuperf.workloads)",
    "report": "the charts",  # after "--gpuperf-html PATH:" or "gpuperf report:"
}


class MissingExtra(ImportError):
    """An optional dependency is not installed (or not importable); the message names the
    extra that installs it."""


def install_hint(extra: str) -> str:
    return f"pip install 'pytest-gpuperf[{extra}]'"


def missing(extra: str, exc: ImportError) -> MissingExtra:
    """The error for an import of `extra`'s packages that failed with `exc`."""
    packages = EXTRAS[extra]
    names = ", ".join(packages[:-1]) + " and " + packages[-1] if len(packages) > 1 else packages[0]
    which = "which are" if len(packages) > 1 else "which is"
    err = MissingExtra(
        f"{PURPOSE[extra]} need {names}, {which} optional: {install_hint(extra)} "
        f"(import failed: {exc})"
    )
    err.name = getattr(exc, "name", None)
    return err


@contextmanager
def needs(extra: str) -> Iterator[None]:
    """Turn an ImportError inside the block into MissingExtra naming `extra`:

        with needs("workloads"):
            from transformers import StaticCache
    """
    try:
        yield
    except MissingExtra:
        raise
    except ImportError as exc:
        raise missing(extra, exc) from exc

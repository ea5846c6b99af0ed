"""Hooks where users decide (registered with pytest_addhooks; implement them in a
conftest.py or a plugin).

    def pytest_gpuperf_environment(config, environment):
        environment["cpu_governor"] = read_governor()  # recorded, and compared below

    def pytest_gpuperf_incomparable(config, baseline_env, current_env):
        if baseline_env.get("cpu_governor") != current_env.get("cpu_governor"):
            return "cpu_governor differs"
        return None  # no opinion: the built-in rule decides
"""

from __future__ import annotations

from typing import Any

import pluggy
import pytest

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_gpuperf_environment(config: pytest.Config, environment: dict[str, Any]) -> None:
    """Add or edit the fields of the run's environment, in place. The environment is
    recorded with each result saved into a baseline and compared with the baseline's by
    pytest_gpuperf_incomparable. Values must be strings, numbers, booleans or None.

    Called once per run (when results are judged or saved), by the pytest process that
    judges them (the controller under pytest-xdist)."""


@hookspec(firstresult=True)
def pytest_gpuperf_incomparable(
    config: pytest.Config, baseline_env: dict[str, Any], current_env: dict[str, Any]
) -> str | None:
    """Whether a baseline entry measured in `baseline_env` may be compared with a result
    measured in `current_env`: a reason (a non-empty string: the result is `incomparable`,
    reported with the reason and never compared), an empty string (comparable, whatever the
    built-in rule says), or None (no opinion: the next implementation decides, and last the
    built-in rule: a different GPU, MIG slice, emulated cap, GPU count or interconnect, or a
    new major version of the driver, CUDA, torch or transformers).

    The first implementation that returns a string decides (firstresult). Each result's
    `current_env` counts the GPUs its test uses."""

"""A run's session id: its own module, so that a session starts without importing the
results model (every pytest run with the plugin installed starts one)."""

from __future__ import annotations

import uuid


def new_session_id() -> str:
    """A fresh session id for this run. Only the process that saves (the pytest-xdist
    controller, never a worker) writes it into the baseline's history."""
    return uuid.uuid4().hex[:12]

"""A run's session id and a test's id as baselines know it: their own module, so that a
session starts without importing the results model (every pytest run with the plugin
installed starts one)."""

from __future__ import annotations

import uuid
from typing import Any


def new_session_id() -> str:
    """A fresh session id for this run. Only the process that saves (the pytest-xdist
    controller, never a worker) writes it into the baseline's history."""
    return uuid.uuid4().hex[:12]


def strip_group(nodeid: str) -> str:
    """`nodeid` without the '@group' that pytest-xdist's --dist loadgroup appends."""
    head, at, tail = nodeid.rpartition("@")
    if at and not any(part in tail for part in ("]", "::", "/")):
        return head
    return nodeid


def node_id(item: Any) -> str:
    """A pytest item's id as baselines know it: without the '@group' that pytest-xdist's
    --dist loadgroup appends to tests marked xdist_group."""
    marked = item.get_closest_marker("xdist_group") is not None
    return strip_group(item.nodeid) if marked else item.nodeid

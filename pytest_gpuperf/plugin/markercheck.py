"""The gpuperf markers of one test checked at collection: each bad one named with what is
wrong, so that plugin/__init__.py reports every bad marker of a file in one collection error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..core.settings import SettingError, check_order, parse_layer


def bad_markers(metafunc: pytest.Metafunc) -> Iterator[tuple[str, str]]:
    """(marker, what is wrong) for each bad gpuperf marker of the test."""
    from ..hardware import marks

    for name, parse in marks.PARSERS.items():
        for m in metafunc.definition.iter_markers(name):
            try:
                parse(m.args, dict(m.kwargs))
            except marks.MarkerError as exc:
                yield name, str(exc)
    seen: dict[tuple[int, str], Any] = {}  # (the node marked, setting) -> its value
    for node, m in metafunc.definition.iter_markers_with_node("gpuperf"):
        try:
            if m.args:
                raise SettingError(f"takes keyword settings only, got {m.args!r}")
            check_order(parse_layer(dict(m.kwargs), "marker"))
            one_value_per_node(seen, id(node), dict(m.kwargs))
        except SettingError as exc:
            yield "gpuperf", str(exc)
    dtype_marks = list(metafunc.definition.iter_markers("gpu_dtype"))
    if dtype_marks:
        try:
            marks.parse_dtype_marker(dtype_marks[0].args, dict(dtype_marks[0].kwargs))
        except marks.MarkerError as exc:
            yield "gpu_dtype", str(exc)
        if "gpu_dtype" not in metafunc.fixturenames:
            yield "gpu_dtype", "the test must take a `gpu_dtype` argument"


def one_value_per_node(seen: dict[tuple[int, str], Any], node: int, kw: dict[str, Any]) -> None:
    """Two gpuperf markers on one function (or one class, one module) that give a setting
    two values: refused, since neither is closer to the test. Across levels the closest
    marker wins, as pytest's get_closest_marker: the function's over its class's over its
    module's (docs/writing-benchmarks.md, "Settings")."""
    for name, value in kw.items():
        if (node, name) in seen and seen[(node, name)] != value:
            raise SettingError(
                f"two markers on one test set {name} ({seen[(node, name)]!r} and {value!r}): "
                "keep one (a marker closer to the test, on the function over its class over "
                "its module, wins)"
            )
        seen[(node, name)] = value

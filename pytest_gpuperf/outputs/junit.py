"""JUnit XML properties of a benchmark's results, and where they go in the file.

pytest writes a test's `user_properties` inside its `<testcase>`: valid in the xunit1
(legacy) family, not in xunit2, pytest's default, whose schema allows `<properties>` only
in `<testsuite>` (pytest warns users of `record_property` about this). So under xunit2 the
plugin's properties, each named after its test (`gpuperf:<test key>...`), go to the
testsuite's properties instead (`suite_level`, `split`); under xunit1 they stay in the
testcase, as `record_property` puts them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.results import Result

PREFIX = "gpuperf:"


def junit_properties(results: Iterable[Result]) -> list[tuple[str, str]]:
    """(name, value) pairs for one test's results: the headline (figure, interval, device),
    the throughput in its unit, and each metric's verdict."""
    out = []
    for r in results:
        out.append((f"{PREFIX}{r.key}", r.headline()))
        if r.throughput is not None:
            out.append((f"{PREFIX}{r.key}:{r.throughput.unit}", f"{r.throughput.median:.6g}"))
        for name, v in r.verdicts.items():
            out.append((f"{PREFIX}{r.key}:{name}:verdict", str(v.status)))
    return out


def suite_level(family: object) -> bool:
    """Whether a JUnit family allows properties only at testsuite level (all but xunit1)."""
    return family not in ("xunit1", "legacy")


def split(
    properties: Iterable[tuple[str, Any]],
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """(the plugin's properties, the others) of a report's user_properties, in order."""
    ours: list[tuple[str, Any]] = []
    others: list[tuple[str, Any]] = []
    for prop in properties:
        (ours if str(prop[0]).startswith(PREFIX) else others).append(prop)
    return ours, others

"""JUnit XML that validates: under xunit2 (pytest's default family) the plugin's properties
move from each `<testcase>` to the `<testsuite>` (outputs/junit.py says why). Registered
where pytest writes JUnit XML (the controller under pytest-xdist, whose reports carry
the workers' properties)."""

from __future__ import annotations

from typing import Any

import pytest

from ..outputs.junit import split, suite_level


class JunitProperties:
    """Moves the plugin's properties of each report to the testsuite under xunit2."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.found = False
        self.writer: Any = None

    def xml(self) -> Any:
        """pytest's JUnit XML writer of this run (a plugin of class LogXML), else None."""
        if not self.found:
            self.found = True
            self.writer = next(
                (p for p in self.config.pluginmanager.get_plugins()
                 if type(p).__name__ == "LogXML" and hasattr(p, "add_global_property")),
                None,
            )  # fmt: skip
        return self.writer

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when not in ("call", "teardown") or not report.user_properties:
            return
        xml = self.xml()
        if xml is None or not suite_level(getattr(xml, "family", None)):
            return
        ours, others = split(report.user_properties)
        if not ours:
            return
        report.user_properties = others  # a new list: the item's own keeps them
        if report.when == "teardown":  # the teardown report holds them all, once per test
            for name, value in ours:
                xml.add_global_property(name, str(value))

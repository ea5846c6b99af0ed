"""GitHub Actions workflow commands for a run (printed where GITHUB_ACTIONS is "true"): an
`::error` annotation for each line of the performance gate, at the failing test's file and
line where the run collected it, so that a regression shows on the pull request's diff and
in the run's summary, and `::warning`s (a missing baseline). Every message and property is
escaped as GitHub's toolkit does. Pure: lines in, lines out."""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "PERFORMANCE REGRESSION "


def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    """A workflow command's property value (file, title), escaped."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def error_annotations(
    lines: list[str], locations: Mapping[str, tuple[str, int | None]]
) -> list[str]:
    """`::error` commands for the gate's failure lines. A test's line (PERFORMANCE
    REGRESSION <test id>[::metric] ...) is placed at its file and line (`locations`: test id
    -> (path relative to the rootdir, 0-based line)); a class-wide line, or a test this
    process did not collect (pytest-xdist's controller), at its file or at none."""
    out = []
    for line in lines:
        where = ""
        body = line.removeprefix(PREFIX)
        key = body.split(" ", 1)[0] if line.startswith(PREFIX) else ""
        if "::" in key and not key.startswith("class-wide"):
            found = max((n for n in locations if key == n or key.startswith(n + "::")),
                        key=len, default=None)  # fmt: skip
            path, lineno = locations[found] if found else (key.split("::", 1)[0], None)
            where = f"file={_prop(path)}" + (f",line={lineno + 1}" if lineno is not None else "")
        title = "title=gpuperf%3A performance regression"
        out.append(f"::error {where + ',' if where else ''}{title}::{_data(line)}")
    return out


def warning_annotation(title: str, text: str) -> str:
    """A `::warning` command with its title and message escaped (a path may hold `%`, `:`
    or a newline, which would otherwise end the command or start another)."""
    return f"::warning title={_prop(title)}::{_data(text)}"

"""What the `gpuperf` subcommands read alike: a results file, checked by runfile, and the
error that makes a command exit 2 naming the bad input."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.results import Result


class InputError(Exception):
    """Bad input to the command: exit 2 with this message."""


def read_results(path: Path, purpose: str = "") -> tuple[dict[str, Any], list[Result]]:
    """The results file's JSON object and its results (none: InputError, "the run has no
    results" and what they were wanted for)."""
    from ..outputs.runfile import ResultsFileError, read_run

    try:
        data, summary = read_run(path)
    except ResultsFileError as exc:
        raise InputError(str(exc)) from None
    if not summary.results:
        raise InputError(f"results file {path}: the run has no results{purpose}")
    return data, summary.results

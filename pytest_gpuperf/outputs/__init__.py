"""Every output of a run, each built from one RunSummary: the terminal summary
(`terminal`), the JSON results file, the GitHub step summary and the verdicts fitted to a
pull-request comment (`--gpuperf-markdown`) (written here), JUnit
properties (`junit`), pytest-benchmark's JSON (`benchjson`) and the HTML report (`html`).
Nothing here imports torch; only `benchjson` needs pytest."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .markdown import COMMENT_LIMIT, markdown
from .summary import RunSummary
from .text import json_safe

__all__ = ["RunSummary", "write_files"]


def write_files(
    summary: RunSummary,
    *,
    json_path: Path | None = None,
    html_path: Path | None = None,
    markdown_path: Path | None = None,
    step_summary: Path | None = None,
    profiles: Any = None,
    baselines: dict[str, Any] | None = None,
) -> tuple[list[str], bool]:
    """Write the outputs asked for, each on its own: one that cannot be built or written is
    named ("NOT WRITTEN: ... why") and the others are still written. Returns the lines to
    show ("wrote ...", "NOT WRITTEN ...") and whether any was not written (which must fail
    the run)."""
    jobs: list[tuple[str, Path, Callable[[], str], str]] = []
    if json_path is not None:
        jobs.append(("--gpuperf-json", json_path, lambda: _json_text(summary), "w"))
    if markdown_path is not None:  # a pull-request comment's body: no more than one holds
        jobs.append(("--gpuperf-markdown", markdown_path,
                     lambda: markdown(summary, COMMENT_LIMIT) + "\n", "w"))  # fmt: skip
    if step_summary is not None:
        jobs.append(("GITHUB_STEP_SUMMARY", step_summary, lambda: markdown(summary) + "\n\n",
                     "a"))  # fmt: skip
    if html_path is not None:
        jobs.append(("--gpuperf-html", html_path,
                     lambda: _html_text(summary, profiles, baselines), "w"))  # fmt: skip
    notes, failed = [], False
    for what, path, build, mode in jobs:
        try:
            text = build()
        except Exception as exc:  # a bug in one output must not cost the others
            failed = True
            notes.append(f"gpuperf: NOT WRITTEN: {what} {path}: {_why(exc)}")
            continue
        try:
            if mode == "w":
                path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, mode, encoding="utf-8") as fh:
                fh.write(text)
        except (OSError, UnicodeError) as exc:
            failed = True
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else _why(exc)
            notes.append(f"gpuperf: NOT WRITTEN: {what} {path}: {why}")
        else:
            if what != "GITHUB_STEP_SUMMARY":
                kib = len(text.encode()) / 1024
                size = f" ({kib:,.0f} KiB)" if what == "--gpuperf-html" else ""
                notes.append(f"gpuperf: wrote {path}{size}")
    return notes, failed


def _json_text(summary: RunSummary) -> str:
    from ..baseline.store import over_capacity

    text = json.dumps(json_safe(summary.payload()), indent=2) + "\n"
    if (why := over_capacity(text)) is not None:  # one that gpuperf compare would refuse
        raise _Missing(why)
    return text


def _html_text(summary: RunSummary, profiles: Any, baselines: dict[str, Any] | None) -> str:
    try:
        from .report.html import build_html

        return build_html([summary], profiles=profiles, baselines=baselines)
    except ImportError as exc:  # the report extra is not installed (MissingExtra says so)
        raise _Missing(str(exc)) from None


class _Missing(Exception):
    """An output that cannot be built, said as it is: the report's extra not installed, a
    results file over the capacity every reader accepts."""


def _why(exc: Exception) -> str:
    from .text import plain

    if isinstance(exc, _Missing):
        return str(exc)
    return plain(f"{type(exc).__name__}: {exc}")[:500]

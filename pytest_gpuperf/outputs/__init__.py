"""Every output of a run, each built from one RunSummary: the terminal summary
(`terminal`), the JSON results file and the GitHub step summary (written here), JUnit
properties (`junit`), pytest-benchmark's JSON (`benchjson`) and the HTML report (`html`).
Nothing here imports torch; only `benchjson` needs pytest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .summary import RunSummary, SchemaError
from .text import json_safe

__all__ = ["RunSummary", "SchemaError", "write_files"]


def write_files(
    summary: RunSummary,
    *,
    json_path: Path | None = None,
    html_path: Path | None = None,
    step_summary: Path | None = None,
    profiles: Any = None,
    baselines: dict[str, Any] | None = None,
) -> tuple[list[str], bool]:
    """Write the outputs asked for. Returns the lines to show ("wrote ...", "NOT WRITTEN:
    ... why") and whether any could not be written (which must fail the run)."""
    outputs: list[tuple[str, Path, str, str]] = []
    if json_path is not None:
        text = json.dumps(json_safe(summary.payload()), indent=2) + "\n"
        outputs.append(("--gpuperf-json", json_path, text, "w"))
    notes, failed = [], False
    if html_path is not None:
        from .html import build_html

        try:
            text = build_html([summary], profiles=profiles, baselines=baselines)
        except ImportError as exc:  # matplotlib: the report extra is not installed
            from ..extras import missing

            failed = True
            why = missing("report", exc)
            notes.append(f"gpuperf: NOT WRITTEN: --gpuperf-html {html_path}: {why}")
        else:
            outputs.append(("--gpuperf-html", html_path, text, "w"))
    if step_summary is not None:
        outputs.append(("GITHUB_STEP_SUMMARY", step_summary, summary.markdown() + "\n\n", "a"))
    for what, path, text, mode in outputs:
        try:
            if mode == "w":
                path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, mode, encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            failed = True
            notes.append(f"gpuperf: NOT WRITTEN: {what} {path}: {exc.strerror or exc}")
        else:
            if what != "GITHUB_STEP_SUMMARY":
                kib = len(text.encode()) / 1024
                size = f" ({kib:,.0f} KiB)" if what == "--gpuperf-html" else ""
                notes.append(f"gpuperf: wrote {path}{size}")
    return notes, failed

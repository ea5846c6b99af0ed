"""The run as markdown: the GitHub step summary (GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

from .summary import RunSummary
from .text import (
    RESULT_HEADER,
    VERDICT_HEADER,
    markdown_table,
    md_cell,
    plain,
    result_rows,
    run_verdict_rows,
)


def markdown(summary: RunSummary) -> str:
    rows = run_verdict_rows(summary)
    text = [
        f"## gpuperf: {md_cell(summary.describe)}",
        f"profile **{md_cell(summary.profile or 'unknown')}**, baseline "
        f"{md_cell(summary.baseline_path or 'none')}",
        "",
    ]
    if summary.baseline_note:
        text += [f"> **Warning:** {md_cell(summary.baseline_note)}", ""]
    if rows:
        text.append(markdown_table(VERDICT_HEADER, rows))
    else:
        text.append(markdown_table(RESULT_HEADER, result_rows(summary.results)))
    return "\n".join(text + _reproduce(summary))


def _reproduce(summary: RunSummary) -> list[str]:
    """The commands that re-run each failing test against the same baseline, from the
    rootdir, in a shell block (nothing when none failed or the run named no baseline)."""
    from ..judging.explain import rerun_commands

    if summary.rerun is None:
        return []
    commands = rerun_commands(summary.results, summary.rerun)
    if not commands:
        return []
    return ["", "To reproduce a failing verdict, from the rootdir:", "", "```sh",
            *(plain(c) for c in commands), "```"]  # fmt: skip

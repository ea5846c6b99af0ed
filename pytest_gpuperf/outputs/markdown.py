"""The run as markdown: the GitHub step summary (GITHUB_STEP_SUMMARY), and the same text
fitted to a pull-request comment (`--gpuperf-markdown`, `gpuperf ab --markdown`): a
heading, the verdict table worst first, the commands that reproduce a failing verdict, and
no more than a comment holds (rows dropped from the end, least severe first, with a note)."""

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

# the most characters GitHub takes in an issue or pull-request comment's body
COMMENT_LIMIT = 65_536


def markdown(summary: RunSummary, limit: int | None = None) -> str:
    """The run's markdown; with `limit`, fitted to that many characters (fit_markdown)."""
    rows = run_verdict_rows(summary)
    top = [
        f"## gpuperf: {md_cell(summary.describe)}",
        f"profile **{md_cell(summary.profile or 'unknown')}**, baseline "
        f"{md_cell(summary.baseline_path or 'none')}",
        "",
    ]
    if summary.baseline_note:
        top += [f"> **Warning:** {md_cell(summary.baseline_note)}", ""]
    blind = summary.blind
    line = blind.line() if blind is not None else None
    if blind is not None and line:  # where the gate could not see: as loud as no baseline
        top += [f"> **{'Blind' if blind.counted else 'Note'}:** {md_cell(line)}", ""]
    if rows:
        header = VERDICT_HEADER
    else:
        header, rows = RESULT_HEADER, result_rows(summary.results)
    return fit_markdown(top, header, rows, _reproduce(summary), limit)


def _reproduce(summary: RunSummary) -> list[str]:
    """The commands that re-run each failing test against the same baseline, from the
    rootdir (none when none failed or the run named no baseline)."""
    from ..judging.explain import rerun_commands

    if summary.rerun is None:
        return []
    return rerun_commands(summary.results, summary.rerun)


def fit_markdown(
    top: list[str],
    header: list[str],
    rows: list[list[str]],
    commands: list[str],
    limit: int | None = None,
) -> str:
    """`top` lines, the table of `rows` and the reproduce block of `commands`, in at most
    `limit` characters (None: no limit). Rows come worst first, so rows are dropped from
    the end, then commands from the end, each with a note of how many are not shown; the
    heading always stays."""
    text = _compose(top, header, rows, len(rows), commands, len(commands), limit)
    if limit is None or len(text) <= limit:
        return text
    n_cmds = len(commands)
    while n_cmds and len(_compose(top, header, rows, 0, commands, n_cmds, limit)) > limit:
        n_cmds = max(0, n_cmds - max(1, n_cmds // 8))  # the commands of a huge failure
    # the longest prefix of rows that fits (the text grows with every row kept)
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(_compose(top, header, rows, mid, commands, n_cmds, limit)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    text = _compose(top, header, rows, lo, commands, n_cmds, limit)
    if len(text) > limit:  # a heading longer than a comment: cut it, saying so
        note = f"\n\n(cut: a comment holds at most {limit:,} characters)"
        text = text[: max(0, limit - len(note))] + note
    return text


def _compose(
    top: list[str],
    header: list[str],
    rows: list[list[str]],
    n_rows: int,
    commands: list[str],
    n_cmds: int,
    limit: int | None,
) -> str:
    """The text with the first `n_rows` rows and the first `n_cmds` commands, and a note
    for each part left short."""
    lines = [*top, markdown_table(header, rows[:n_rows])]
    if n_rows < len(rows):
        lines += ["", f"**{len(rows) - n_rows} of {len(rows)} rows not shown** (a comment "
                  f"holds at most {limit:,} characters): the full table is in the results "
                  "file (`--gpuperf-json`) and the HTML report"]  # fmt: skip
    if commands:
        lines += ["", "To reproduce a failing verdict, from the rootdir:", "", "```sh",
                  *(plain(c) for c in commands[:n_cmds]), "```"]  # fmt: skip
        if n_cmds < len(commands):
            lines.append(f"({len(commands) - n_cmds} more command(s) not shown)")
    return "\n".join(lines)

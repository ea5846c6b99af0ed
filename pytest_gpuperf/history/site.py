"""`gpuperf history DIR -o SITE`: the nightly history as a static site a team opens each
morning, offline (from a CI artifact or a file share): no script, font or image is fetched;
the charts are inline SVG (history/svg.py), the style is in each page.

- SITE/index.html: the recent changes first (newest first, each with its commit range, a
  link where `--repo-url` gives a template), then every figure with a small chart, those
  that changed first.
- SITE/b/<benchmark>.html: a page per benchmark (test node id): per figure, a chart per
  profile with the interval band, runs left out, saved sessions, steps and creep drawn; its
  changes with their ranges and `gpuperf bisect` commands.

SITE is created, or rebuilt where a build of its own is there (its `.gpuperf-site` file);
any other directory with files in it is refused, so nothing of a user's is overwritten."""

from __future__ import annotations

import hashlib
import re
import statistics
from html import escape
from pathlib import Path
from string import Formatter
from typing import Any
from urllib.parse import quote

from ..core.results import format_value
from .changes import Change, Found, bisect_command
from .store import History, Series
from .svg import Chart, Mark, chart_svg, sparkline

MARKER = ".gpuperf-site"
CHANGES_SHOWN = 100  # the index's newest changes (each benchmark's page has all of its own)
PLACES = ("last_good", "first_bad")
STYLE = """body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:top}th{background:#f6f6f6}code{font-size:12px}
.worse{color:#d62728}.better{color:#2ca02c}.grid{display:flex;flex-wrap:wrap;gap:6px}
.fig{border:1px solid #ddd;border-radius:4px;padding:4px 6px;width:160px;font-size:12px;
color:inherit;text-decoration:none;overflow:hidden}.fig b{display:block;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis}.chart text{font-size:11px;fill:#555}
.muted{color:#777}h2{margin-top:1.2em}td:first-child,.range{white-space:nowrap}
td code{overflow-wrap:anywhere}"""


class SiteError(ValueError):
    """A site that cannot be written where asked, or a bad --repo-url: one line."""


def check_repo_url(template: str) -> str:
    """The --repo-url template, checked: http(s), and only {last_good} and {first_bad}
    (full commit ids) as placeholders, e.g. https://github.com/o/r/compare/{last_good}...{first_bad}."""
    if not re.match(r"https?://", template):
        raise SiteError(f"--repo-url {template!r}: must start with http:// or https://")
    try:
        names = [name for _, name, _, _ in Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise SiteError(f"--repo-url {template!r}: {exc}") from None
    bad = [n for n in names if n not in PLACES]
    if bad:
        raise SiteError(f"--repo-url {template!r}: unknown placeholder {{{bad[0]}}}; "
                        "use {last_good} and {first_bad}")  # fmt: skip
    return template


def range_url(template: str | None, good: str | None, bad: str | None) -> str | None:
    """The link to a range's commits, or None (no template, or a run without a commit)."""
    if not template or not good or not bad:
        return None
    return template.format(last_good=quote(good, safe=""), first_bad=quote(bad, safe=""))


def prepare(site: Path, history: Path) -> None:
    """SITE made ready: created, or a previous build's pages removed; refused where it is
    the history itself, or a directory of other files."""
    if site.resolve() == history.resolve():
        raise SiteError(f"-o {site}: is the history directory; give the site its own")
    if site.exists() and not site.is_dir():
        raise SiteError(f"-o {site}: is a file, not a directory")
    if site.is_dir() and any(site.iterdir()) and not (site / MARKER).is_file():
        raise SiteError(f"-o {site}: holds files of something else (no {MARKER}); name a new "
                        "or empty directory")  # fmt: skip
    site.mkdir(parents=True, exist_ok=True)
    (site / MARKER).write_text("a gpuperf history site: rebuilt by `gpuperf history -o`\n")
    pages = site / "b"
    if pages.is_dir():
        for old in pages.glob("*.html"):
            old.unlink()


def write_site(hist: History, found: Found, site: Path, history: Path,
               repo_url: str | None = None) -> int:  # fmt: skip
    """Write the site; returns the pages written (the index included)."""
    prepare(site, history)
    charts = {key: chart_of(hist, s, found.changes) for key, s in hist.series.items()}
    by_test: dict[str, list[tuple[str, str, str]]] = {}
    for key, s in hist.series.items():
        by_test.setdefault(s.nodeid, []).append(key)
    pages = {test: page_name(test) for test in by_test}
    (site / "b").mkdir(exist_ok=True)
    for test, keys in by_test.items():
        text = benchmark_page(hist, test, keys, charts, found, repo_url)
        (site / "b" / pages[test]).write_text(text, encoding="utf-8")
    index = index_page(hist, found, charts, pages, repo_url)
    (site / "index.html").write_text(index, encoding="utf-8")
    return len(pages) + 1


def page_name(test: str) -> str:
    """A benchmark's page: its test's name, made safe, and a hash of its full node id."""
    tail = re.sub(r"[^A-Za-z0-9_.-]+", "_", test.rsplit("/", 1)[-1])[:60]
    return f"{tail}-{hashlib.sha1(test.encode()).hexdigest()[:8]}.html"


def anchor(profile: str, figure: str, metric: str | None) -> str:
    return "f-" + re.sub(r"[^A-Za-z0-9_-]+", "_", f"{profile}-{metric or ''}-{figure}")


def chart_of(hist: History, s: Series, changes: list[Change]) -> Chart:
    """A series' chart: its points, the runs left out and saved, its changes' marks."""
    runs = hist.runs
    chart = Chart(list(s.runs), list(s.median), list(s.ci_low), list(s.ci_high), s.unit,
                  len(runs), dict(s.left),
                  [i for i, r in enumerate(s.runs) if runs[r].saved],
                  dates=(runs[0].date[:10], runs[-1].date[:10]) if runs else ("", ""))  # fmt: skip
    seen = None
    for i in sorted(s.restarts):  # where a restart's note first appears: the accept
        if s.restarts[i] != seen:
            chart.restarts[i] = seen = s.restarts[i]
    mine = sorted((c for c in changes if (c.profile, c.test, c.figure) ==
                   (s.profile, s.test, s.figure)), key=lambda c: c.first_bad)  # fmt: skip
    kept = [(s.runs[i], s.median[i]) for i in range(len(s.runs)) if i not in s.left]
    for j, c in enumerate(mine):
        start = mine[j - 1].first_bad if j else (kept[0][0] if kept else 0)
        end = mine[j + 1].last_good if j + 1 < len(mine) else (kept[-1][0] if kept else 0)
        if c.kind == "creep":
            before = _level(kept, c.last_good - 1, c.last_good + 1)
            after = _level(kept, c.first_bad - 1, c.first_bad + 1)
        else:
            before, after = _level(kept, start, c.last_good), _level(kept, c.first_bad, end)
        worse = c.direction in ("slower", "worse")
        chart.marks.append(Mark(c.kind, worse, c.last_good, c.first_bad, before, after,
                                change_label(c), start, end))  # fmt: skip
    return chart


def _level(kept: list[tuple[int, float]], a: int, b: int) -> float:
    vals = [v for r, v in kept if a <= r <= b]
    return statistics.median(vals) if vals else (kept[-1][1] if kept else 0.0)


def change_label(c: Change) -> str:
    size = f"{c.change * 100:+.2f}% ±{c.interval * 100:.2f}%"
    if c.kind == "creep":
        return f"creep {c.direction} {size}: {c.rate or 0.0:+.2%} a run over {c.runs} runs"
    env = f" (the environment's: {c.environment})" if c.environment else ""
    return f"step {c.direction} {size} (z {c.z:.1f}){env}"


def _html(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")  # fmt: skip


def _run_cell(hist: History, i: int) -> str:
    run = hist.runs[i]
    commit = escape(run.commit[:12]) if run.commit else "(no commit)"
    dirty = " +uncommitted" if run.dirty else ""
    return f'{escape(run.date[:10])} <code title="{escape(run.name)}">{commit}</code>{dirty}'


def changes_table(hist: History, changes: list[Change], repo_url: str | None,
                  pages: dict[str, str] | None) -> list[str]:  # fmt: skip
    """The changes as a table, newest first: when, how much, what (on the index, linked to
    its page), the range (linked where the template gives one); on a benchmark's page, the
    `gpuperf bisect` command for the range."""
    if not changes:
        return ['<p class="muted">No change found.</p>']
    out = ["<table><tr><th>first bad</th><th>change</th>"
           + ("<th>benchmark</th>" if pages is not None else "")
           + "<th>profile</th><th>range: last good &rarr; first bad</th>"
           + ("<th>bisect</th>" if pages is None else "") + "</tr>"]  # fmt: skip
    for c in changes:
        s = hist.series[(c.profile, c.test, c.figure)]
        good, bad = hist.runs[c.last_good], hist.runs[c.first_bad]
        size = escape(change_label(c)).replace(" -", "<br>-", 1).replace(" +", "<br>+", 1)
        cells = [escape(bad.date[:10]),
                 f'<span class="{"worse" if c.direction in ("slower", "worse") else "better"}">'
                 f"{size}</span>"]  # fmt: skip
        if pages is not None:
            href = f"b/{escape(pages[s.nodeid])}#{anchor(c.profile, c.figure, s.metric)}"
            cells.append(f'<a href="{href}">{escape(s.test)}</a> {escape(c.figure)}')
        rng = f"{_run_cell(hist, c.last_good)} &rarr;<br>{_run_cell(hist, c.first_bad)}"
        url = range_url(repo_url, good.commit, bad.commit)
        cells += [escape(c.profile or "-"), f'<a href="{escape(url)}">{rng}</a>' if url else rng]
        if pages is None:
            bisect = bisect_command(good.commit, bad.commit, s.nodeid)
            cells.append(f"the environment's: {escape(c.environment)}" if c.environment
                         else f"<code>{escape(bisect)}</code>" if bisect else "")  # fmt: skip
        cls = ["", "", *([""] if pages is not None else []), "", ' class="range"', ""]
        out.append("<tr>" + "".join(f"<td{k}>{v}</td>" for k, v in zip(cls, cells, strict=False))
                   + "</tr>")  # fmt: skip
    out.append("</table>")
    return out


def _span(hist: History) -> str:
    if not hist.runs:
        return "no runs"
    return f"{len(hist.runs)} runs, {hist.runs[0].date[:10]} to {hist.runs[-1].date[:10]}"


def index_page(hist: History, found: Found, charts: dict[Any, Chart], pages: dict[str, str],
               repo_url: str | None) -> str:  # fmt: skip
    """The index: the newest changes, the flaky verdicts, then every figure's small chart."""
    body = ["<h1>gpuperf nightly history</h1>",
            f"<p>{_span(hist)}; {len(hist.series)} series; {len(found.changes)} changes.</p>",
            "<h2>Recent changes</h2>"]  # fmt: skip
    body += changes_table(hist, found.changes[:CHANGES_SHOWN], repo_url, pages)
    if len(found.changes) > CHANGES_SHOWN:
        body.append(f'<p class="muted">{len(found.changes) - CHANGES_SHOWN} older changes: '
                    "on their benchmarks' pages and in <code>gpuperf history --json</code>."
                    "</p>")  # fmt: skip
    body += _verdicts(hist, found, pages)
    body.append('<h2>Figures</h2><p class="muted">Newest change first; a dot is a change '
                "(red worse, green better). Each opens its benchmark's page.</p>"
                '<div class="grid">')  # fmt: skip
    newest: dict[tuple[str, str, str], int] = {}
    for c in found.changes:  # newest first: the first seen is a series' newest
        newest.setdefault((c.profile, c.test, c.figure), -c.first_bad)
    for key in sorted(hist.series, key=lambda k: (newest.get(k, 1), k)):
        s, chart = hist.series[key], charts[key]
        last = format_value(chart.y[-1], chart.unit) if chart.y else "-"
        body.append(f'<a class="fig" href="b/{escape(pages[s.nodeid])}#'
                    f'{anchor(s.profile, s.figure, s.metric)}" title="{escape(s.test)}">'
                    f"<b>{escape(s.test.rsplit('/', 1)[-1])}</b>{escape(s.figure)} · "
                    f"{escape(s.profile or '-')} · {escape(last)}<br>{sparkline(chart)}"
                    "</a>")  # fmt: skip
    body.append("</div>")
    return _html("gpuperf nightly history", body)


def _verdicts(hist: History, found: Found, pages: dict[str, str]) -> list[str]:
    """Figures whose verdict flipped between nights, or regressed with no change behind."""
    if not found.verdicts:
        return []
    rows = sorted(found.verdicts.items(), key=lambda kv: (-kv[1][2], -kv[1][1]))
    out = ["<h2>Verdicts that flipped</h2><table><tr><th>figure</th><th>profile</th>"
           "<th>false alarms</th><th>flips</th><th>judged runs</th></tr>"]  # fmt: skip
    for (profile, test, figure), (n, flips, false) in rows[:CHANGES_SHOWN]:
        s = hist.series[(profile, test, figure)]
        out.append(f'<tr><td><a href="b/{escape(pages[s.nodeid])}">{escape(test)}</a> '
                   f"{escape(figure)}</td><td>{escape(profile or '-')}</td><td>{false}</td>"
                   f"<td>{flips}</td><td>{n}</td></tr>")  # fmt: skip
    return [*out, "</table>"]


def benchmark_page(hist: History, test: str, keys: list[tuple[str, str, str]],
                   charts: dict[Any, Chart], found: Found,
                   repo_url: str | None) -> str:  # fmt: skip
    """A benchmark's page: per figure, a chart per profile, and its changes."""
    body = ['<p><a href="../index.html">&larr; all figures</a></p>',
            f"<h1>{escape(test)}</h1><p>{_span(hist)}. Blue: the median, its 95% interval "
            "shaded; grey rings: runs left out (power state, shared GPU, busy host); green "
            "ticks: saved baseline sessions; purple dotted line: its history restarted from "
            "an accepted run (gpuperf baseline accept); red/green shading: a step's range "
            "(its levels either side) or a creep's span (dashed).</p>"]  # fmt: skip
    for key in sorted(keys, key=lambda k: (k[2], k[1], k[0])):
        s, chart = hist.series[key], charts[key]
        mine = [c for c in found.changes if (c.profile, c.test, c.figure) == key]
        title = f"{s.figure}{f' ({s.metric})' if s.metric else ''} · {s.profile or '-'}"
        left = f", {len(s.left)} left out" if s.left else ""
        body.append(f'<h2 id="{anchor(s.profile, s.figure, s.metric)}">{escape(title)}</h2>'
                    f'<p class="muted">{len(s.runs)} runs{left}; {escape(s.unit)}, '
                    f"{'higher' if s.higher else 'lower'} is better</p>"
                    + chart_svg(chart))  # fmt: skip
        body += changes_table(hist, mine, repo_url, None) if mine else []
    return _html(test, body)

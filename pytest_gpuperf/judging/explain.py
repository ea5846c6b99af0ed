"""What the gate says about a judged run, in words: one failure line per failing metric
(`failure_lines`, with the baseline it was judged against and the command that re-runs it:
`Rerun`, `rerun_command`), and which baseline entries the run should have measured
(`selected`, `missing`). No pytest and no I/O here."""

from __future__ import annotations

import math
import shlex
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from ..baseline.history import since_restart, values_of, window
from ..core.figures import metrics_of
from ..core.results import Result, format_value
from ..core.verdict import Verdict
from .judge import Judgement
from .verdict import FAILED, REGRESSED, interval_text, lopsided_bounds


@dataclass(frozen=True)
class Rerun:
    """What a command re-running a verdict needs of the run that gave it: the GPU profile,
    the baseline directory as the command names it, and the emulated card (None: none)."""

    profile: str
    baseline_dir: str
    emulate: str | None = None

    @classmethod
    def of(cls, file_profile: str, directory: PurePath, rootdir: PurePath | None) -> Rerun:
        """From the baseline file's profile ("h200", or "h200@a100-40gb" when emulating)
        and directory; the directory relative to the rootdir when inside it (a relative
        --gpuperf-baseline-dir is resolved against the rootdir), else as it is."""
        profile, _, emulate = file_profile.partition("@")
        shown = str(directory)
        if rootdir is not None and directory.is_relative_to(rootdir):
            shown = str(directory.relative_to(rootdir))
        return cls(profile, shown, emulate or None)


def rerun_command(nodeids: Iterable[str], rerun: Rerun) -> str:
    """The one-line POSIX shell command that re-runs just these tests against the same
    baseline file and profile (from the rootdir)."""
    return (
        f"pytest {_quoted(nodeids)} --gpu-profile={shlex.quote(rerun.profile)} "
        f"--gpuperf-baseline=compare --gpuperf-baseline-dir={shlex.quote(rerun.baseline_dir)}"
        + _emulate(rerun)
    )


def ab_command(nodeids: Iterable[str], commit: str, rerun: Rerun) -> str:
    """The `gpuperf ab` line that measures these tests against the commit a paired
    verdict was judged against, interleaved on this GPU (no baseline)."""
    return f"gpuperf ab --base {shlex.quote(commit[:12])} -- {_quoted(nodeids)}{_emulate(rerun)}"


def _quoted(nodeids: Iterable[str]) -> str:
    return " ".join(shlex.quote(n) for n in dict.fromkeys(nodeids))


def _emulate(rerun: Rerun) -> str:
    return f" --gpuperf-emulate={shlex.quote(rerun.emulate)}" if rerun.emulate else ""


def _recorded_commit(verdict: Verdict) -> str | None:
    """The base commit the paired stage recorded in a verdict, where it re-measured it."""
    paired = verdict.paired
    commit = paired.get("commit") if paired is not None else None
    return commit if isinstance(commit, str) and commit else None


def paired_commit(verdict: Verdict) -> str | None:
    """The base commit of a verdict the paired stage decided (None: the first stage's, also
    where the stage re-measured it but the first stage's verdict stands: no `stage1`)."""
    return _recorded_commit(verdict) if verdict.stage1 is not None else None


EACH_PAIR = "each_pair"  # in `paired`: each process pair's change, where they bore stage 1 out


def borne_out(verdict: Verdict) -> bool:
    """Whether the paired stage re-measured a verdict the first stage decided and every one
    of its process pairs bore it out, so that the first stage's verdict stands (its noise
    per process: paired/stage.py `_each_pair`)."""
    paired = verdict.paired
    return paired is not None and isinstance(paired.get(EACH_PAIR), list | tuple)


def seen_twice(verdict: Verdict) -> bool:
    """Whether something measured a verdict's figure again: a fresh process confirmed it,
    the paired stage decided it, or each of its process pairs bore it out. An improvement
    nothing re-measured is unconfirmed (confirmation.unconfirmed_improvements)."""
    return bool(verdict.confirmed or paired_commit(verdict) or borne_out(verdict))


def ab_commit(verdict: Verdict) -> str | None:
    """The commit a `gpuperf ab` line measures a verdict's test against: a paired verdict's,
    or that of one the paired stage bore out."""
    return paired_commit(verdict) or (_recorded_commit(verdict) if borne_out(verdict) else None)


def _checked(v: Verdict) -> str:
    """A regression's failure line on how it was checked: in a fresh process, by the
    paired stage, or by each of its process pairs; or that nothing re-measured it."""
    said = []
    if v.confirmed:
        said.append("confirmed in a fresh process")
    elif paired_commit(v):
        said.append("decided by the paired stage, in fresh processes of both builds")
    elif v.confirmed is None and not borne_out(v):
        said.append("NOT re-measured in a fresh process")
    if borne_out(v):
        said.append("borne out by each process pair of the paired stage, in fresh processes "
                    "of both builds")  # fmt: skip
    return "".join(f"; {x}" for x in said)


def _paired_medians(verdict: Verdict) -> tuple[float, float] | None:
    """The base build's and this build's medians over the paired rounds of a verdict the
    paired stage decided, where it recorded them."""
    if paired_commit(verdict) is None:
        return None
    p = verdict.paired or {}
    b, h = p.get("base_median"), p.get("head_median")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (b, h)):
        return None
    return float(b), float(h)  # type: ignore[arg-type]


def rerun_commands(results: Iterable[Result], rerun: Rerun) -> list[str]:
    """The commands re-running each test with a regressed or failed verdict, in the
    results' order: the pytest one, and the `gpuperf ab` one where the paired stage
    decided one of its verdicts."""
    failing: dict[str, str | None] = {}
    for r in results:
        for vd in r.verdicts.values():
            if vd.status in (REGRESSED, FAILED):
                failing[r.nodeid] = failing.get(r.nodeid) or ab_commit(vd)
    out = []
    for nodeid, commit in failing.items():
        out.append(rerun_command([nodeid], rerun))
        if commit:
            out.append(ab_command([nodeid], commit, rerun))
    return out


def failure_lines(
    results: Iterable[Result],
    entries: dict[str, dict[str, Any]],
    profile: str,
    judgement: Judgement | None = None,
    rerun: Rerun | None = None,
    since: dict[tuple[str, str], str] | None = None,
) -> list[str]:
    """One readable line per failing metric: what, baseline -> now, change, its
    uncertainty and where that comes from, the tolerance, which baseline (profile, date,
    commit, sessions), whether a fresh process confirmed it, since when the nightly history
    has it at this level (`since`, where one is given) and, given `rerun`, the command
    that re-runs it (rerun_command)."""
    lines = []
    conf = f"{judgement.confidence:.2%}" if judgement else "99%"
    results = list(results)
    for r in results:
        metrics = metrics_of(r)
        base_entry = entries.get(r.key) or {}
        for name, v in r.verdicts.items():
            if v.status == FAILED:
                lines.append(
                    f"PERFORMANCE REGRESSION {r.key} {name}: no result now ({v.reason}) "
                    f"where baseline {profile} has one: " + _base_text(base_entry, name, profile)
                    + _rerun_tail([r.nodeid], rerun)
                )
                continue
            if v.status != REGRESSED or name not in metrics:
                continue
            base_m = base_entry["metrics"][name]
            ref = statistics.median(values_of(base_m)) if values_of(base_m) else math.nan
            now, unit = metrics[name]["median"], metrics[name]["unit"]
            rounds = _paired_medians(v)  # a paired verdict: the figures its change is of
            ref, now = rounds or (ref, now)
            of = " (the paired rounds' medians, base build -> this one)" if rounds else ""
            change = f"{v.change * 100:+.2f}%" if v.change is not None else "from 0"
            if v.uncertainty is not None and lopsided_bounds(v.change, v.uncertainty):
                change += interval_text(v.change, v.uncertainty)  # the basis's ± is log units
            lines.append(
                f"PERFORMANCE REGRESSION {r.key} {name}: {format_value(ref, unit)} -> "
                f"{format_value(now, unit)}{of}: regressed {change} "
                f"(tolerance {v.tolerance * 100:.1f}%; {v.basis or 'no spread'}; at {conf}); "
                f"baseline "
                + _base_text(base_entry, name, profile)
                + _checked(v)
                + (f"; {since[(r.key, name)]}" if since and (r.key, name) in since else "")
                + _rerun_tail([r.nodeid], rerun, ab_commit(v))
            )
    if judgement is not None:
        nodeids = {r.key: r.nodeid for r in results}
        for s in judgement.shifts:
            if s.verdict.status == REGRESSED:
                lines.append(
                    f"PERFORMANCE REGRESSION {s.line()}; {s.verdict.basis}"
                    + ("; confirmed in a fresh process" if s.verdict.confirmed else "")
                    + _rerun_tail([nodeids[k] for k in s.keys if k in nodeids], rerun)
                )
    return lines


def _rerun_tail(nodeids: list[str], rerun: Rerun | None, commit: str | None = None) -> str:
    """A failure line's end: the command that re-runs its tests (and, for a paired
    verdict, the one that measures them against its base commit again)."""
    if rerun is None or not nodeids:
        return ""
    tail = f"; reproduce: {rerun_command(nodeids, rerun)}"
    if commit:
        tail += f"; the paired verdict: {ab_command(nodeids, commit, rerun)}"
    return tail


def _base_text(base_entry: dict[str, Any], metric: str, profile: str) -> str:
    """"h200 of <date> commit <c>, N session(s)": the sessions the figure is judged against
    (history.window: the newest since its last restart), with "since its restart" where
    older ones are kept in the file, not judged."""
    base_m = base_entry.get("metrics", {}).get(metric, {})
    judged = len(window(base_m)) if isinstance(base_m, dict) else 0
    restarted = isinstance(base_m, dict) and len(since_restart(base_m)) < len(
        base_m.get("history") or []
    )
    return (
        f"{profile} of {str(base_entry.get('date') or '?')[:10]}"
        + (f" commit {str(base_entry['commit'])[:10]}" if base_entry.get("commit") else "")
        + f", {judged} session(s)"
        + (" since its restart" if restarted else "")
    )


def selected(entries: Iterable[str], collected: Iterable[str]) -> list[str]:
    """Baseline keys that belong to the collected tests (a key is a node id, or a node id
    with '::metric')."""
    chosen = set(collected)
    out = []
    for key in entries:
        node = key.split("::")
        if any("::".join(node[:cut]) in chosen for cut in range(len(node), 0, -1)):
            out.append(key)
    return out


def missing(
    entries: Iterable[str], measured: Iterable[str], collected: Iterable[str] | None
) -> list[str]:
    """Baseline entries that produced no result in this run: of the collected tests only
    (None: every entry counts, as offline, where the run's selection is unknown)."""
    done = set(measured)
    keys = list(entries) if collected is None else selected(entries, collected)
    return [k for k in keys if k not in done]


def orphaned(entries: Iterable[str], known: Iterable[str]) -> list[str]:
    """Baseline entries of the test files a run collected that name no test those files
    have now (renamed or deleted), given every test id the collection found, deselected
    ones included."""
    ids = set(known)
    files = {i.split("::", 1)[0] for i in ids}
    of_files = [k for k in entries if k.split("::", 1)[0] in files]
    tested = set(selected(of_files, ids))
    return [k for k in of_files if k not in tested]

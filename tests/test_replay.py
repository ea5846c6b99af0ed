"""Behaviour pinned across refactors: recorded results and their baselines (one CPU run of
benchmarks/test_dtype.py, and an H200 run of tests/gpu/test_verdicts.py whose compute class
regressed) replayed through `gpuperf compare` and `gpuperf report`, and judged again by
judge_run as compare does, give exactly the stored verdict tables, verdict JSON and report
text (tests/data/replay/*.golden.*; the report's generation time left out).

A deliberate change of a verdict or of the report's text regenerates them:
`GPUPERF_REGOLD=1 pytest tests/test_replay.py`, and the diff is reviewed in the commit."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuperf.core.verdict import Status

DATA = Path(__file__).parent / "data"
CASES = {
    "cpu": (DATA / "replay" / "cpu-run.json", DATA / "replay" / "cpu-baseline.json", "cpu"),
    "h200": (
        DATA / "evidence" / "h200-2026-12-01-w" / "slow10-1.json",
        DATA / "evidence" / "h200-2026-12-01-w" / "baseline-h200.json",
        "h200",
    ),
}


def _gpuperf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", *args],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def _report_text(page: str) -> str:
    """The report's visible text and its embedded data, one line per block (no markup)."""
    page = re.sub(r"<style.*?</style>", "", page, flags=re.S)
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, flags=re.S)
    data = [line for s in scripts for line in s.splitlines() if "{" in line and '"' in line]
    text = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    text = re.sub(r"<(br|/tr|/p|/h\d|/li|/div|/table)[^>]*>", "\n", text)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    text = re.sub(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "Generated (date)", text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join([line for line in lines if line] + data) + "\n"


def _verdict_json(run: Path, baseline: Path) -> str:
    """Every verdict of the run judged again against the baseline (what `gpuperf compare`
    does: judge_run on the file's results), and the class lines, as JSON."""
    from pytest_gpuperf.baseline.history import environment
    from pytest_gpuperf.baseline.store import load
    from pytest_gpuperf.core.verdict import to_json
    from pytest_gpuperf.judging.judge import judge_run
    from pytest_gpuperf.outputs.runfile import read_run

    data, summary = read_run(run)
    base = load(baseline)
    assert base is not None
    devices = {r.emulated for r in summary.results}
    j = judge_run(
        summary.results, base.entries,
        environment(data["device"], devices.pop() if len(devices) == 1 else None),
    )  # fmt: skip
    assert all(v.trail for r in summary.results for v in r.verdicts.values())  # each: a rule
    out: dict[str, object] = {
        r.key: {name: _untrailed(to_json(v)) for name, v in r.verdicts.items()}
        for r in summary.results
    }
    out["(class lines)"] = [s.line() for s in j.shifts]
    out["(confidence)"] = j.confidence
    return json.dumps(_rounded(out), indent=1, sort_keys=True, default=str) + "\n"


def _untrailed(d: dict[str, object]) -> dict[str, object]:
    """A verdict's JSON without its trail, which the trail's own golden pins (the
    verdicts' golden predates the trail and stays byte-identical)."""
    return {k: v for k, v in d.items() if k != "trail"}


def _rounded(x: object) -> object:
    """Floats to 12 significant digits: the verdict, not a libm's last bit."""
    if isinstance(x, float):
        return float(f"{x:.12g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rounded(v) for v in x]
    return x


def _check(name: str, got: str) -> None:
    golden = DATA / "replay" / name
    if os.environ.get("GPUPERF_REGOLD"):
        golden.write_text(got)
    assert golden.exists(), f"{golden} missing: run with GPUPERF_REGOLD=1 once and review it"
    assert got == golden.read_text(), f"{name} differs from the stored golden output"


@pytest.mark.parametrize("case", sorted(CASES))
def test_compare_and_report_replay_byte_identical(case, tmp_path):
    run, baseline, profile = CASES[case]
    shutil.copy(run, tmp_path / "run.json")
    (tmp_path / "b").mkdir()
    shutil.copy(baseline, tmp_path / "b" / f"{profile}.json")
    cmp = _gpuperf("compare", "run.json", "--baseline", f"b/{profile}.json", cwd=tmp_path)
    assert cmp.returncode in (0, 1), cmp.stderr
    _check(f"{case}.golden.compare.txt", f"exit {cmp.returncode}\n{cmp.stdout}")
    rep = _gpuperf(
        "report", "run.json", "-o", "r.html", "--baseline-dir", "b", "--title", "replay",
        cwd=tmp_path,
    )  # fmt: skip
    assert rep.returncode == 0, rep.stderr
    _check(f"{case}.golden.report.txt", _report_text((tmp_path / "r.html").read_text()))
    _check(f"{case}.golden.verdicts.json", _verdict_json(run, baseline))


def test_compare_verbose_shows_every_verdicts_trail(tmp_path):
    """`gpuperf compare -v` of the replayed H200 run prints how each verdict was reached,
    one line a rule, from the records' trails (pinned: a rule added, dropped or reordered
    shows in the diff); every verdict of the table has at least one step."""
    run, baseline, profile = CASES["h200"]
    shutil.copy(run, tmp_path / "run.json")
    (tmp_path / "b").mkdir()
    shutil.copy(baseline, tmp_path / "b" / f"{profile}.json")
    cmp = _gpuperf("compare", "run.json", "--baseline", f"b/{profile}.json", "-v", cwd=tmp_path)
    assert cmp.returncode == 1, cmp.stderr
    lines = cmp.stdout.splitlines()
    start = lines.index("--- how each verdict was reached (its rules in order)")
    trail = lines[start:-1]  # the last line: "performance regression"
    heads = [i for i, line in enumerate(trail) if not line.startswith(("  ", "---"))]
    table = [line for line in lines[:start] if line.split(" ")[0] in _STATUS_WORDS]
    assert len(heads) == len(table) > 0
    assert all(trail[i + 1].startswith("  1. ") for i in heads)
    _check("h200.golden.trail.txt", "\n".join(trail) + "\n")


_STATUS_WORDS = {s.value.upper() for s in Status}

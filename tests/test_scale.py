"""A large suite (issue 58): one capacity rule for the files gpuperf writes and reads (no
writer writes a baseline or results file over store.MAX_BYTES, every reader reads one up to
it), and every tool reading back a generated suite (tools/large_suite.py). Sizes here are
small, the limit lowered to match; docs/performance.md records the full-size timings."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pytest_gpuperf.baseline import store
from pytest_gpuperf.baseline.history import environment
from pytest_gpuperf.baseline.schema import entries_to_save
from pytest_gpuperf.cli.main import main
from pytest_gpuperf.outputs import write_files
from pytest_gpuperf.outputs.runfile import read_run

ROOT = Path(__file__).resolve().parents[1]


def _large_suite():
    spec = importlib.util.spec_from_file_location("large_suite", ROOT / "tools" / "large_suite.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def suite(tmp_path):
    """A generated suite of 45 tests: its baseline (3 sessions each) and a results file."""
    gen = _large_suite()
    base, run = tmp_path / "cpu.json", tmp_path / "run.json"
    base.write_text(json.dumps(gen.baseline(45), indent=2))
    run.write_text(json.dumps(gen.results(45), indent=2))
    return base, run


def _updates(run: Path):
    data, summary = read_run(run)
    env = environment(data["device"], None)
    return entries_to_save(summary.results, env, date="2026-12-07T00:00:00+00:00", commit=None,
                           session="s9", host="h")  # fmt: skip


def test_a_save_over_the_capacity_is_refused_before_anything_is_written(suite, monkeypatch):
    """Issue 58: 50,000 benchmarks saved a 62 MiB baseline with exit 0 that every reader
    then refused (32 MiB). Now the writer holds to the readers' limit, and says so."""
    base, run = suite
    updates = _updates(run)
    before = base.read_bytes()
    monkeypatch.setattr(store, "MAX_BYTES", len(before) + 1000)  # one more session: over
    assert store.load(base) is not None
    with pytest.raises(store.CapacityError, match=r"not written: it would be .* over the"):
        store.save(base, "cpu", updates, "2026-12-07T00:00:00+00:00")
    assert base.read_bytes() == before  # the file as it was
    fresh = base.parent / "fresh.json"
    monkeypatch.setattr(store, "MAX_BYTES", len(before) // 2)
    with pytest.raises(store.CapacityError, match=str(fresh)):
        store.save(fresh, "cpu", updates, "2026-12-07T00:00:00+00:00")
    assert not fresh.exists()


def test_whatever_a_writer_may_write_every_reader_reads(suite, monkeypatch):
    """A save that fits is read back by the loader at the same limit: the limit is one."""
    base, run = suite
    updates = _updates(run)
    store.save(base, "cpu", updates, "2026-12-07T00:00:00+00:00")
    monkeypatch.setattr(store, "MAX_BYTES", base.stat().st_size)  # exactly this file
    assert len(store.load(base).entries) == 45
    monkeypatch.setattr(store, "MAX_BYTES", base.stat().st_size - 1)
    with pytest.raises(store.BaselineError, match="over the"):
        store.load(base)


def test_a_results_file_over_the_capacity_is_not_written(suite, monkeypatch, tmp_path):
    _, run = suite
    _, summary = read_run(run)
    out = tmp_path / "out.json"
    monkeypatch.setattr(store, "MAX_BYTES", run.stat().st_size // 2)
    notes, failed = write_files(summary, json_path=out)
    assert failed and not out.exists()
    assert notes == [notes[0]] and "NOT WRITTEN: --gpuperf-json" in notes[0]
    assert "over the" in notes[0] and "every gpuperf reader accepts" in notes[0]
    monkeypatch.setattr(store, "MAX_BYTES", run.stat().st_size * 2)
    notes, failed = write_files(summary, json_path=out)
    assert not failed and len(read_run(out)[1].results) == 45  # what is written, is read


def test_every_tool_reads_back_a_generated_suite(suite, tmp_path, capsys):
    """compare, report, save, show and merge over one generated suite: each reads what the
    others wrote (the full size, 50,000 tests, is measured in docs/performance.md)."""
    base, run = suite
    assert main(["compare", str(run), "--baseline", str(base)]) == 0
    assert "verdicts: 45 inconclusive" in capsys.readouterr().out
    report = tmp_path / "r.html"
    assert main(["report", str(run), "-o", str(report)]) == 0 and report.stat().st_size > 0
    saved = tmp_path / "saved.json"
    store.save(saved, "cpu", _updates(run), "2026-12-07T00:00:00+00:00")
    capsys.readouterr()
    assert main(["baseline", "show", str(saved)]) == 0
    assert "45 test(s), 45 metric(s)" in capsys.readouterr().out
    merged = tmp_path / "merged.json"
    assert main(["baseline", "merge", str(base), str(saved), "-o", str(merged)]) == 0
    assert "45 test(s), 45 metric(s), 180 session value(s)" in capsys.readouterr().out


def test_a_file_of_a_large_suite_is_read_by_every_reader(suite):
    """Issue 58: a 20,000-test results file (66 MiB) was refused by gpuperf compare and
    report, and a 62 MiB baseline by every run, save and show, over a 32 MiB limit no
    writer held to. A file over 32 MiB (here a small one padded with JSON whitespace) is
    read by both readers."""
    base, run = suite
    pad = b" " * (33 * 2**20)
    for path in (base, run):
        path.write_bytes(path.read_bytes() + pad)
    assert len(store.load(base).entries) == 45
    assert len(read_run(run)[1].results) == 45

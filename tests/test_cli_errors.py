"""One line where a traceback was (issue 58): a lone surrogate in a baseline's key, output
into a pipe whose reader left, two gpuperf markers on one test."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuperf.baseline.schema import BaselineError
from pytest_gpuperf.baseline.store import load
from pytest_gpuperf.cli.main import PIPE_CLOSED, main

REPLAY = Path(__file__).parent / "data" / "replay"


def _with_surrogate_key(tmp_path: Path) -> Path:
    """The replay baseline with one key ending in an unpaired surrogate (a JSON escape)."""
    text = (REPLAY / "cpu-baseline.json").read_text(encoding="utf-8")
    key = next(iter(json.loads(text)["entries"]))
    assert text.count(json.dumps(key)) == 1
    path = tmp_path / "cpu.json"
    path.write_text(text.replace(json.dumps(key), json.dumps(key)[:-1] + '\\ud800"'), "utf-8")
    return path


def test_a_lone_surrogate_is_refused_by_the_loader_as_by_the_results_reader(tmp_path, capsys):
    path = _with_surrogate_key(tmp_path)
    with pytest.raises(BaselineError, match="unpaired surrogate"):
        load(path)
    assert main(["baseline", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unpaired surrogate" in err and str(path) in err


def test_a_paired_surrogate_escape_is_text_and_read(tmp_path):
    text = (REPLAY / "cpu-baseline.json").read_text(encoding="utf-8")
    key = next(iter(json.loads(text)["entries"]))
    path = tmp_path / "cpu.json"
    path.write_text(text.replace(json.dumps(key), json.dumps(key)[:-1] + '\\ud83d\\ude00"'))
    found = load(path)
    assert found is not None and key + "\U0001f600" in found.entries


@pytest.mark.slow
def test_output_into_a_pipe_whose_reader_left_stops_quietly(tmp_path):
    """`gpuperf baseline show | head -1`: no BrokenPipeError traceback, exit 141."""
    baseline = tmp_path / "cpu.json"
    baseline.write_text((REPLAY / "cpu-baseline.json").read_text(encoding="utf-8"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_gpuperf", "baseline", "show", str(baseline)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == PIPE_CLOSED, err
    assert err == ""


def test_a_closed_pipe_in_process_is_exit_141_not_a_traceback(tmp_path, monkeypatch):
    """The same in-process: stdout raising BrokenPipeError as a pipe's does."""
    baseline = tmp_path / "cpu.json"
    baseline.write_text((REPLAY / "cpu-baseline.json").read_text(encoding="utf-8"))
    read, write = os.pipe()
    os.close(read)
    out = open(write, "w")  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdout", out)
    try:
        assert main(["baseline", "show", str(baseline)]) == PIPE_CLOSED
    finally:
        monkeypatch.undo()
        with contextlib.suppress(BrokenPipeError):
            out.close()

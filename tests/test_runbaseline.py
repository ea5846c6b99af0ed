"""The run's baseline state (runbaseline.RunBaseline) without pytest: what it says it does
in each mode, and what it refuses."""

import json

import pytest

from pytest_gpuperf.baseline.run import RunBaseline
from pytest_gpuperf.baseline.schema import BaselineError
from pytest_gpuperf.session import Options


def base(tmp_path, mode, **kw):
    opts = Options(baseline_mode=mode, baseline_dir=tmp_path, **kw)
    return RunBaseline(opts)


def test_no_matching_profile_is_a_note_not_an_error(tmp_path):
    b = base(tmp_path, "auto")
    b.prepare(None, "some card")
    assert b.ready and b.file is None and b.path is None
    assert b.line() == (
        "no GPU profile matches some card: results are not compared or saved; add a profile "
        "in pyproject.toml ([tool.gpuperf.profiles])"
    )
    assert b.missing(["x"], {"x"}) == []


def test_what_each_mode_says(tmp_path):
    off = base(tmp_path, "off")
    off.prepare("cpu", "cpu")
    assert not off.ready and off.line() == "baselines off" and not off.comparing
    auto = base(tmp_path, "auto")
    auto.prepare("cpu", "cpu")
    assert auto.comparing and auto.file is None and auto.entries == {}
    assert auto.line() == f"no baseline at {tmp_path / 'cpu.json'} (profile cpu): results are new"
    save = base(tmp_path, "save")
    save.prepare("cpu", "cpu")
    assert not save.comparing
    assert save.line() == f"saving to baseline {tmp_path / 'cpu.json'} (profile cpu)"
    with pytest.raises(BaselineError, match=r"cpu\.json"):
        base(tmp_path, "compare").prepare("cpu", "cpu")  # compare needs the file


def test_a_corrupt_file_is_refused_when_found(tmp_path):
    (tmp_path / "cpu.json").write_text("{not json")
    with pytest.raises(BaselineError, match=r"cpu\.json"):
        base(tmp_path, "auto").prepare("cpu", "cpu")
    assert (tmp_path / "cpu.json").read_text() == "{not json"


def test_an_interrupted_run_is_not_saved(tmp_path):
    b = base(tmp_path, "save")
    b.prepare("cpu", "cpu")
    note, failed = b.save(stopped=True, results=[object()], detected="cpu", describe="cpu",
                          failed_tests=(), environment={}, durations={})  # fmt: skip
    assert failed and note.startswith(f"NOT SAVED to {tmp_path / 'cpu.json'}: the run was")
    assert not (tmp_path / "cpu.json").exists()
    nothing = base(tmp_path, "auto")
    nothing.prepare("cpu", "cpu")
    assert nothing.save(stopped=False, results=[object()], detected="cpu", describe="cpu",
                        failed_tests=(), environment={}, durations={}) == (None, False)  # fmt: skip


def test_confidence_is_shared_by_the_measurements_the_run_judges(tmp_path):
    from pytest_gpuperf.results import Result, Throughput
    from pytest_gpuperf.stats import summarize

    entry = {"environment": {}, "metrics": {
        "throughput": {"unit": "tokens/s", "direction": "higher", "median": 1.0,
                       "history": [{"median": 1.0}, {"median": 1.01}]}}}  # fmt: skip
    data = {"schema": "pytest-gpuperf/baseline", "version": 1, "profile": "cpu",
            "entries": {f"t.py::test_{i}": entry for i in range(4)}}  # fmt: skip
    (tmp_path / "cpu.json").write_text(json.dumps(data))
    b = base(tmp_path, "auto")
    b.options.false_alarm = 0.004  # set after the session exists, as the plugin does
    b.prepare("cpu", "cpu")

    def result(i, **kw):
        r = Result(f"t.py::test_{i}", None, "tokens", 1.0, **kw)
        r.time = summarize([1.0, 1.0, 1.0], 0.95)
        r.throughput = Throughput("tokens/s", 1.0, 0.99, 1.01)
        return r

    # 2 of the 4 entries measured: their 2 metrics share the rate
    assert b.judge([result(0), result(1)], {}, False).confidence == pytest.approx(1 - 0.004 / 2)
    # a figure derived from a measurement is that measurement again: no share of its own
    derived = Result("t.py::test_1", "per_s", "x/s", 1.0, kind="recorded", derived_from="")
    derived.throughput = Throughput("x/s", 2.0, 2.0, 2.0)
    assert b.judge([result(0), result(1), derived], {}, False).confidence == pytest.approx(1 - 0.004 / 2)
    # informational figures (gate=False) are never judged: no share either
    info = Result("t.py::test_0", None, "tokens", 1.0, gate=False)
    assert b.judge([info, result(1)], {}, False).confidence == pytest.approx(1 - 0.004)

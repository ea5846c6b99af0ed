"""Baselines you can trust: each case of the integrity issue, as a user or an attacker
would meet it, on the CPU. Every case here failed before its fix."""

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from pytest_gpuperf.__main__ import main as gpuperf_main
from pytest_gpuperf.baseline.run import key_collisions
from pytest_gpuperf.baseline.schema import BaselineError, merge
from pytest_gpuperf.baseline.store import load, save
from pytest_gpuperf.outputs.text import markdown_table, md_cell, plain, table
from pytest_gpuperf.results import Result

from .gateproject import BENCH, FAST, saved


def entry(gpu="G", median=100.0):
    return {
        "environment": {"gpu": gpu, "mig_profile": None, "emulated": None},
        "date": "2026-11-30",
        "commit": None,
        "flags": {},
        "metrics": {
            "throughput": {
                "unit": "tokens/s",
                "direction": "higher",
                "median": median,
                "ci_low": median * 0.99,
                "ci_high": median * 1.01,
                "n": 10,
            }
        },
    }


def baseline_json(profile="cpu", entries=None, **extra):
    data = {"schema": "pytest-gpuperf/baseline", "version": 1, "profile": profile}
    data.update(extra)
    data["entries"] = {
        k: {**e, "metrics": {m: {**v, "history": [{"median": v["median"]}]} for m, v in e["metrics"].items()}}
        for k, e in (entries or {}).items()
    }
    return data


# 1 --------------------------------------------------- results of one device, another's file


def test_a_save_under_allow_mismatch_never_writes_another_devices_baseline(project):
    (project.path / "baselines").mkdir()
    path = project.path / "baselines" / "h200.json"
    path.write_text(json.dumps(baseline_json("h200", {"test_b.py::test_spin": entry("NVIDIA H200", 680.0)})))
    before = path.read_bytes()
    result = project.runpytest(
        *FAST, "--gpu-profile=h200", "--gpuperf-allow-mismatch", "--gpuperf-baseline=save"
    )
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["baseline: NOT SAVED to *h200.json: results measured on cpu:* (profile cpu) never enter the baseline of profile 'h200', whatever --gpuperf-allow-mismatch says"]
    )
    assert path.read_bytes() == before


def test_merge_refuses_an_entry_from_another_device(tmp_path):
    path = tmp_path / "h200.json"
    save(path, "h200", {"k": entry("NVIDIA H200")}, now="1")
    before = path.read_bytes()
    with pytest.raises(BaselineError, match=r"entry 'k' was measured on another device \(gpu 'NVIDIA H200' in the file, 'cpu: X' now\)"):
        save(path, "h200", {"k": entry("cpu: X", 0.7)}, now="2")
    assert path.read_bytes() == before


# 2 ------------------------------------------------------------- record() validated at once


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('record("delta", -3.5, "ms")', "value of 'delta' must be >= 0, got -3.5"),
        ('record("m", 5, None)', "unit of 'm' must be a non-empty string, got None"),
        ('record("m", 5, "")', "unit of 'm' must be a non-empty string"),
        ('record("m", float("nan"), "x")', "value of 'm' must be a finite number"),
        ('record("m", 5, "ms", higher_is_better="yes")', "higher_is_better must be True, False or None"),
    ],
)
def test_record_refuses_what_the_loader_would_refuse(project, call, message):
    project.makepyfile(test_r=f"def test_r(gpu_benchmark):\n    gpu_benchmark.{call}\n")
    result = project.runpytest(*FAST, "test_r.py", "--gpuperf-baseline=save")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*ValueError: {message}*"])
    assert not (project.path / "baselines" / "cpu.json").exists()
    # and the next run is not broken by anything this one did
    project.runpytest(*FAST, "test_b.py").assert_outcomes(passed=2)


# 3 ------------------------------------------------------------------- gpuperf compare input


def run_compare(*args):
    return subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", *map(str, args)],
        capture_output=True,
        text=True,
    )


@pytest.fixture
def cpu_run(project):
    """A saved CPU baseline and a results file of a run compared against it."""
    saved(project, times=1)
    project.runpytest(*FAST, "--gpuperf-json=run.json").assert_outcomes(passed=2)
    return project.path / "run.json", project.path / "baselines" / "cpu.json"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"results": [{"foo": 1}], "device": {}}', "results[0]: result has no 'nodeid' string"),
        (b'{"results": 5, "device": {}}', "'results' must be a list"),
        (b'{"results": [], "device": {}, "profile": "cpu"}', "the run has no results to compare"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
        (b'{"results": [NaN], "device": {}}', "holds NaN, not a number"),
        (b"[[[[" * 20000, "nested too deeply"),
        (b'{"results": [], "results": [], "device": {}}', "holds the key 'results' twice"),
        (b'{"a": 1' + b"0" * 5000 + b"}", "5001-digit integer: too large"),
    ],
)
def test_compare_rejects_malformed_results_with_exit_2(tmp_path, cpu_run, content, message):
    _, base = cpu_run
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    r = run_compare(bad, "--baseline", base)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_compare_rejects_nan_figures_in_a_result(tmp_path, cpu_run):
    run, base = cpu_run
    data = json.loads(run.read_text())
    data["results"][0]["throughput"]["median"] = None  # json_safe's NaN
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(data))
    r = run_compare(bad, "--baseline", base)
    assert r.returncode == 2 and "results[0]: result 'test_b.py::test_spin' throughput: median must be float, got None" in r.stderr


def test_compare_refuses_a_baseline_of_another_profile(tmp_path, cpu_run):
    run, _ = cpu_run
    other = tmp_path / "h200.json"
    other.write_text(json.dumps(baseline_json("h200", {"test_b.py::test_spin": entry("NVIDIA H200")})))
    r = run_compare(run, "--baseline", other)
    assert r.returncode == 2
    assert "belongs to profile 'h200', and the run" in r.stderr and "measured as profile 'cpu'" in r.stderr


def test_compare_help_lists_the_exit_codes():
    r = run_compare("--help")
    assert r.returncode == 0
    assert "exit codes:" in r.stdout and "1  a performance regression" in r.stdout
    assert "2  bad input" in r.stdout


def test_compare_uses_the_baseline_the_run_recorded_and_names_it(tmp_path, cpu_run, monkeypatch):
    run, base = cpu_run
    monkeypatch.chdir(tmp_path)  # no ./baselines here: the recorded path must be used
    r = run_compare(run)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"baseline: {base}\n")


# one gate ------------------------------------------------------------------------------


def test_pytest_and_compare_give_the_same_verdicts(project, monkeypatch):
    """The same results through the pytest session and through `gpuperf compare`: a
    marker tolerance of 0.9 holds offline too, and an out-of-memory result where the
    baseline has figures is FAILED in both."""
    saved(project, times=2)
    project.makepyfile(
        test_b=BENCH.replace(
            "def test_spin(gpu_benchmark):",
            "import pytest\n\n@pytest.mark.gpuperf(tolerance=0.9)\ndef test_spin(gpu_benchmark):",
        ).replace(
            'gpu_benchmark(lambda: spin(0.001), work=1, unit="samples")',
            "def work():\n        if os.environ.get('OOM'):\n            raise RuntimeError('CUDA out of memory (simulated)')\n"
            "        spin(0.001)\n"
            '    gpu_benchmark(work, work=1, unit="samples", on_oom="record")',
        )
    )
    monkeypatch.setenv("SLOW", "0.5")
    monkeypatch.setenv("OOM", "1")
    result = project.runpytest(*FAST, "--gpuperf-json=now.json")
    result.assert_outcomes(passed=2, failed=1)  # the gate's failure, apart from the tests
    result.stdout.fnmatch_lines(["PERFORMANCE REGRESSION test_b.py::test_other throughput: no result now*"])
    data = json.loads((project.path / "now.json").read_text())
    assert 0.99 <= data["confidence"] < 1  # compare judges the same run at the same confidence
    in_pytest = {r["key"]: {m: v["status"] for m, v in r["verdicts"].items()} for r in data["results"]}
    assert in_pytest == {
        "test_b.py::test_spin": {"throughput": "unchanged"},
        "test_b.py::test_other": {"throughput": "failed"},
    }
    r = subprocess.run(
        [sys.executable, "-m", "pytest_gpuperf", "compare", "now.json"],
        capture_output=True, text=True, cwd=project.path,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    offline = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in {"UNCHANGED", "FAILED", "REGRESSED", "INCONCLUSIVE", "NEW"}:
            offline[parts[1]] = {parts[2]: parts[0].lower()}
    assert offline == in_pytest


# 4 ---------------------------------------------------------------------------------- xdist


def test_the_xdist_controller_compares_and_reports_missing(project):
    pytest.importorskip("xdist")
    saved(project, times=2)
    project.makepyfile(
        test_c="from vclock import spin\n\ndef test_gone(gpu_benchmark):\n    gpu_benchmark(lambda: spin(0.001))\n"
    )
    project.runpytest(*FAST, "test_c.py", "--gpuperf-baseline=save").assert_outcomes(passed=1)
    project.makepyfile(test_c="def test_gone():\n    pass\n")  # now measures nothing
    result = project.runpytest(*FAST, "-n", "2", "--gpuperf-json=x.json")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*gpuperf verdicts against baseline *cpu.json*", "MISSING *test_c.py::test_gone*"])
    data = json.loads((project.path / "x.json").read_text())
    assert data["missing"] == ["test_c.py::test_gone"]
    assert data["baseline"].endswith("cpu.json")


# 5 ------------------------------------------------------------------------- key collisions


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'gpu_benchmark(lambda: spin(0.001), metric="peak")\n    gpu_benchmark.record("peak", 1, "GB")',
            "test_k.py::test_k::peak was already measured in this test and is now recorded again",
        ),
        (
            'gpu_benchmark.record("bs", 1, "samples")\n    gpu_benchmark.record("bs", 2, "samples")',
            "test_k.py::test_k::bs was already recorded in this test and is now recorded again",
        ),
        ('gpu_benchmark(lambda: spin(0.001), metric="m]")', "metric 'm]': use printable text"),
        ('gpu_benchmark.record("a::b", 1, "x")', "metric 'a::b': use printable text"),
        ('gpu_benchmark.record("\\n\\n# HEADING", 1, "x")', "metric '\\n\\n# HEADING': use printable"),
    ],
)
def test_key_collisions_are_errors_naming_both(project, body, message):
    project.makepyfile(test_k=f"from vclock import spin\n\ndef test_k(gpu_benchmark):\n    {body}\n")
    result = project.runpytest(*FAST, "test_k.py")
    result.assert_outcomes(failed=1)
    assert message in result.stdout.str()


def test_a_collision_across_tests_is_refused_at_save(project):
    a = Result(nodeid="t.py::a[x]", metric="m", unit="calls", work_per_call=1)
    b = Result(nodeid="t.py::a[x]::m", metric=None, unit="calls", work_per_call=1)
    (clash,) = key_collisions([a, b])
    assert "t.py::a[x]::m: measured twice in one run (by t.py::a[x] metric 'm' and by t.py::a[x]::m)" in clash


# 6 ------------------------------------------------------------- links, unknown keys, mode


def test_a_save_writes_through_a_symlink_keeps_unknown_keys_and_the_mode(tmp_path):
    real = tmp_path / "shared" / "h200.json"
    real.parent.mkdir()
    data = baseline_json("h200", {"k": entry()}, comment="owned by the perf team")
    data["entries"]["k"]["owner"] = "alice"
    real.write_text(json.dumps(data))
    real.chmod(0o664)
    link = tmp_path / "h200.json"
    link.symlink_to(real)
    save(link, "h200", {"k": entry(median=101.0), "new": entry()}, now="2")
    assert link.is_symlink() and os.readlink(link) == str(real)
    written = json.loads(real.read_text())
    assert written["comment"] == "owned by the perf team"
    assert written["entries"]["k"]["owner"] == "alice"
    assert len(written["entries"]["k"]["metrics"]["throughput"]["history"]) == 2
    assert stat.S_IMODE(real.stat().st_mode) == 0o664


def test_a_new_baseline_file_is_readable_by_the_team(tmp_path):
    old = os.umask(0o022)
    try:
        save(tmp_path / "cpu.json", "cpu", {"k": entry()}, now="1")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "cpu.json").stat().st_mode) == 0o644


# 7 -------------------------------------------------------------------------------- escaping


def test_markdown_cells_cannot_break_out_of_the_table():
    evil = ["\n\n# HEADING\n<details open>", "![](https://example/p.png)", "a\\|b", "`x`"]
    md = markdown_table(["h"], [[e] for e in evil])
    lines = md.splitlines()
    assert len(lines) == 2 + len(evil)  # no cell added a line
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines[:1] + lines[2:])
    assert "<details" not in md and "&lt;details open&gt;" in md
    assert "!\\[\\]\\(https://example/p.png\\)" in md
    assert md_cell("a\\|b") == "a\\\\\\|b"  # the backslash and the pipe are both escaped
    assert md_cell("`x`") == "\\`x\\`"


def test_terminal_text_shows_control_characters_instead_of_acting_on_them():
    assert plain("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert plain("a\nb\rc\x9b") == "a\\x0ab\\x0dc\\x9b"
    assert "\x1b" not in "".join(table(["h"], [["\x1b[2J"]]))


def test_escaped_ids_in_a_run(project, monkeypatch):
    summary = project.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    project.makepyfile(
        test_e=textwrap.dedent(
            """
            import pytest
            from vclock import spin

            @pytest.mark.parametrize("x", ["![](https://example/p.png)", "\\x1b[31mred", "a|b"])
            def test_e(gpu_benchmark, x):
                gpu_benchmark(lambda: spin(0.001))
            """
        )
    )
    result = project.runpytest(*FAST, "test_e.py")
    result.assert_outcomes(passed=3)
    assert "\x1b[31m" not in result.stdout.str()
    md = summary.read_text()
    assert "](https" not in md and "\x1b" not in md
    rows = [line for line in md.splitlines() if line.startswith("| NEW |")]
    assert len(rows) == 3 and all(row.count(" | ") == 6 for row in rows)


# 8 ----------------------------------------------------------------------- validation gaps


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["entries"]["k"].update(environment="oops"), "'environment' must be an object"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"].update(ci_low=200.0), "does not contain the median"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"].update(n="many"), "n must be a whole number >= 1, got 'many'"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"].update(unit=""), "unit must be a non-empty string"),
        (lambda d: d["entries"]["k"]["metrics"]["throughput"]["history"][0].update(date=5), "date and commit must be strings"),
        (lambda d: d["entries"]["k"].update(flags=[]), "'flags' must be an object"),
        (lambda d: d.update(version=True), "schema version True is not supported"),
    ],
)
def test_every_field_is_validated(tmp_path, mutate, message):
    data = baseline_json("cpu", {"k": entry()})
    mutate(data)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BaselineError, match=f"baseline file {path}: .*{message}".replace("(", r"\(").replace(")", r"\)")):
        load(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema": 1' + "0" * 400 + "}", "401-digit integer: too large"),
        ('{"a": 1' + "0" * 5000 + "}", "5001-digit integer: too large"),
        ("[" * 100000 + "]" * 100000, "nested too deeply"),
        ('{"a": 1, "a": 2}', "holds the key 'a' twice"),
        ('{"a": 1e999}', "not a pytest-gpuperf baseline"),
    ],
)
def test_hostile_json_gets_one_clear_error(tmp_path, text, message):
    path = tmp_path / "cpu.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=message):
        load(path)


def test_special_files_are_refused_without_reading_them(tmp_path):
    fifo = tmp_path / "cpu.json"
    os.mkfifo(fifo)  # opening it would block until a writer came
    with pytest.raises(BaselineError, match="is not a regular file"):
        load(fifo)
    for dev in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(BaselineError, match="is not a regular file"):
            load(dev)


def test_a_file_over_the_size_limit_is_refused_fast(tmp_path, monkeypatch):
    import pytest_gpuperf.baseline.store as baselines

    monkeypatch.setattr(baselines, "MAX_BYTES", 1000)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(baseline_json("cpu", {f"k{i}": entry() for i in range(20)})))
    with pytest.raises(BaselineError, match=r"is 5\.8 KiB, over the 1000 B limit"):
        load(path)


def test_the_environment_of_a_bad_file_never_reaches_a_test(project):
    (project.path / "baselines").mkdir()
    data = baseline_json("cpu", {"test_b.py::test_spin": entry()})
    data["entries"]["test_b.py::test_spin"]["environment"] = "oops"
    (project.path / "baselines" / "cpu.json").write_text(json.dumps(data))
    result = project.runpytest(*FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'environment' must be an object, got 'oops'*"])


# 9 ------------------------------------------------------------ leftovers of a killed save


def test_stale_temporary_files_are_cleaned_and_ignored_by_git(tmp_path):
    stale = tmp_path / ".cpu.json.abc123.tmp"
    stale.write_text("x" * 1000)
    other = tmp_path / ".h200.json.abc.tmp"  # another file's: not ours to touch
    other.write_text("y")
    save(tmp_path / "cpu.json", "cpu", {"k": entry()}, now="1")
    assert not stale.exists() and other.exists()
    assert load(tmp_path / "cpu.json") is not None
    # the lock is hidden beside the file, not a visible cpu.json.lock
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cpu.json.lock", ".h200.json.abc.tmp", "cpu.json"]
    # the lock and temporary files never reach a commit
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    check = subprocess.run(
        ["git", "check-ignore", "baselines/.cpu.json.lock", "baselines/.cpu.json.x1.tmp"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert check.stdout.split() == ["baselines/.cpu.json.lock", "baselines/.cpu.json.x1.tmp"]


# 10 ----------------------------------------------------------------- conflicting settings


def test_conflicting_settings_are_one_usage_error_naming_the_sources(project):
    result = project.runpytest("--gpuperf-min-time=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*gpuperf: min_time=3 (command line) is above max_time=2 (the CPU default): the minimum sampling time is above the hard budget*"]
    )
    result = project.runpytest("--gpuperf-min-samples=100000000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*min_samples='100000000': must be at most 100,000 samples*"])


def test_a_contradictory_marker_is_a_collection_error(project):
    project.makepyfile(
        test_m="import pytest\n@pytest.mark.gpuperf(min_time=5, max_time=1)\ndef test_m(gpu_benchmark):\n    pass\n"
    )
    result = project.runpytest("test_m.py")
    result.stdout.fnmatch_lines(
        ["*test_m.py::test_m: @pytest.mark.gpuperf: marker: min_time=5 is above max_time=1*"]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_marker_against_the_command_line_fails_the_test_naming_both(project):
    project.makepyfile(
        test_m="import pytest\n@pytest.mark.gpuperf(max_time=1)\ndef test_m(gpu_benchmark):\n    pass\n"
    )
    result = project.runpytest("test_m.py", "--gpuperf-min-time=1.5")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_m.py::test_m: min_time=1.5 (command line) is above max_time=1 (test_m.py::test_m: @pytest.mark.gpuperf)*"]
    )


# 11 -------------------------------------------------------------------- unwritable outputs


def test_an_unwritable_json_path_is_a_usage_error(project):
    (project.path / "out").mkdir()
    result = project.runpytest(*FAST, "--gpuperf-json=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpuperf-json=out: is a directory; give a file path*"])


def test_a_step_summary_that_cannot_be_written_keeps_the_results(project, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "no" / "such" / "dir" / "s.md"))
    result = project.runpytest(*FAST)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    result.stdout.fnmatch_lines(
        ["*= gpuperf results =*", "test_b.py::test_spin *tokens/s*", "gpuperf: NOT WRITTEN: GITHUB_STEP_SUMMARY *s.md: No such file or directory"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# 12 ---------------------------------------------------------- interrupted and failed tests


def test_an_interrupted_save_run_saves_nothing(project):
    project.makepyfile(
        test_z="def test_z():\n    raise KeyboardInterrupt\n"
    )
    # in a subprocess: a KeyboardInterrupt in an in-process run would stop this session too
    result = project.runpytest_subprocess(*FAST, "test_b.py", "test_z.py", "--gpuperf-baseline=save")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (project.path / "baselines" / "cpu.json").exists()
    result.stdout.fnmatch_lines(["baseline: NOT SAVED to *cpu.json: the run was interrupted*"])


def test_a_run_stopped_at_its_first_failure_saves_nothing(project):
    project.makepyfile(test_a="def test_a():\n    assert False\n")
    result = project.runpytest(*FAST, "-x", "test_b.py", "test_a.py", "--gpuperf-baseline=save")
    result.assert_outcomes(passed=2, failed=1)
    assert not (project.path / "baselines" / "cpu.json").exists()
    result.stdout.fnmatch_lines(["baseline: NOT SAVED to *cpu.json: the run was interrupted or stopped early*"])


def test_a_test_that_fails_its_own_assertion_is_not_saved(project):
    project.makepyfile(
        test_f="from vclock import spin\n\ndef test_f(gpu_benchmark):\n    gpu_benchmark(lambda: spin(0.001))\n    assert False, 'wrong answer'\n"
    )
    result = project.runpytest(*FAST, "--gpuperf-baseline=save")
    result.assert_outcomes(passed=2, failed=1)
    data = json.loads((project.path / "baselines" / "cpu.json").read_text())
    assert set(data["entries"]) == {"test_b.py::test_spin", "test_b.py::test_other"}
    result.stdout.fnmatch_lines(["baseline: saved 2 benchmark(s) to *cpu.json; not saved, their test failed: test_f.py::test_f"])


# 13 --------------------------------------------------------------------- smaller settings


def test_a_bad_warn_only_ini_value_names_the_key_and_the_file(project):
    project.makeini("[pytest]\ngpuperf_warn_only = maybe\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_warn_only: *maybe*; use true or false*"])


def test_a_bad_ini_profile_is_reported_as_the_ini_key(project):
    project.makeini("[pytest]\ngpuperf_profile = h9000\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: gpuperf_profile: *h9000*"])
    assert "--gpu-profile:" not in result.stderr.str()


def test_an_empty_profile_is_a_usage_error(project):
    result = project.runpytest("--gpu-profile=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-profile is empty: name a GPU profile*"])


def test_merge_result_passes_the_loaders_checks(tmp_path):
    bad = entry()
    bad["metrics"]["throughput"]["median"] = -1.0
    with pytest.raises(BaselineError, match=r"median is -1\.0: must be >= 0"):
        merge(None, tmp_path / "cpu.json", "cpu", {"k": bad}, "now")


def test_main_is_importable_without_running(capsys):
    assert gpuperf_main(["compare", "/nonexistent/r.json"]) == 2
    assert "results file /nonexistent/r.json: does not exist" in capsys.readouterr().err

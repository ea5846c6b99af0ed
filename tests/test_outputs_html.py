"""The HTML report (outputs/html.py): --gpuperf-html, `gpuperf report` of several GPUs, a browser."""

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuperf.cli.main import main
from pytest_gpuperf.core.results import Result, plain_params
from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.outputs.report.html import build_html
from pytest_gpuperf.outputs.runfile import ResultsFileError, summary_from_payload

from . import reportdata as rd
from .gateproject import FAST, saved
from .inputs import browser as _browser
from .inputs import need_a_browser as _need_a_browser

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "tests" / "data" / "evidence"
# real H200 results, copied (as compact JSON) from docs/evidence: a 40 GB-emulated QLoRA
# sweep, the smoke tier, the dtype and generation modules, and a compared multi-GPU session
H200_RUNS = [
    EVIDENCE / "h200-2026-11-30-b" / "emu-a100-40gb.json",
    EVIDENCE / "h200-2026-11-30-b" / "smoke.json",
    EVIDENCE / "h200x2-2026-11-30" / "xdist.json",
    EVIDENCE / "h200x2-2026-11-30" / "c-mg-4.json",
]


def self_contained(text: str) -> None:
    """Nothing the page would fetch: no external script, stylesheet, image or font."""
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", text)
    assert "@import" not in text and "url(http" not in text
    assert not re.search(r"""(src|href)=["']?https?:""", text)


def test_a_run_writes_its_html_report(project):
    saved(project, times=2)
    out = project.path / "out" / "report.html"
    result = project.runpytest(*FAST, f"--gpuperf-html={out}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"gpuperf: wrote {out} (* KiB)"])
    text = out.read_text()
    self_contained(text)
    assert "Verdicts, worst first" in text
    assert text.count('data-verdict="') == 2  # the throughput of each (no GPU memory)
    assert "test_b.py::test_spin" in text and "CPU" in text
    assert "History: the baseline" in text and text.count("<svg") == 1


USER_BENCH = """
import pytest
from vclock import spin

@pytest.mark.parametrize("batch", [1, 2, 4, 8])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_step(gpu_benchmark, batch, precision):
    gpu_benchmark(lambda: spin(0.001 * (1 + batch / 4)), work=batch * 64, unit="tokens")
"""


def test_a_user_benchmark_parametrized_over_batch_size_gets_a_line_chart(project):
    """Nothing in the plugin knows this test: its chart comes from its parameters. batch
    (a number) is the x axis, precision (a category) splits the lines."""
    project.makepyfile(test_user=USER_BENCH)
    out = project.path / "report.html"
    result = project.runpytest(*FAST, "test_user.py", f"--gpuperf-html={out}",
                               f"--gpuperf-json={project.path / 'r.json'}")  # fmt: skip
    result.assert_outcomes(passed=8)
    results = json.loads((project.path / "r.json").read_text())["results"]
    assert {(r["params"]["precision"], r["params"]["batch"]) for r in results} == {
        (p, b) for p in ("fp32", "bf16") for b in (1, 2, 4, 8)
    }
    page = rd.parse(out.read_text())
    chart = page.chart("test_user.py::test_step: by batch")
    assert {"1", "2", "4", "8"} <= set(chart.texts)  # the batch sizes on the x axis
    assert "tokens/s" in chart.texts and "throughput" in chart.texts
    assert {"precision=bf16 · CPU", "precision=fp32 · CPU"} <= set(chart.texts)  # the legend
    assert chart.lines.count(4) >= 2  # a line through the 4 batch sizes per precision
    assert len(page.charts) == len(page.headings)  # no other chart was made up
    assert not any(h.endswith("per precision") for h in page.headings)  # the line splits it


def test_params_are_plain_json_and_read_back():
    class Spec:
        name = "bf16"

    def fn():
        pass

    raw = {"batch": 8, "dtype": Spec(), "fn": fn, "none": None, "shape": (1, 2),
           "ok": True, "x": 0.5, "inf": float("inf")}  # fmt: skip
    assert plain_params(raw, {"shape": 3, "inf": 1}) == {
        "batch": 8, "dtype": "bf16", "fn": "fn", "none": "None", "shape": "shape3",
        "ok": True, "x": 0.5, "inf": "inf1",
    }  # fmt: skip
    r = Result(nodeid="t.py::t[8]", metric=None, unit="tokens", work_per_call=1.0,
               params={"batch": 8, "dtype": "bf16"})  # fmt: skip
    assert Result.from_dict(json.loads(json.dumps(r.to_dict()))).params == r.params
    old = r.to_dict()
    del old["params"]  # a file written before params were recorded
    assert Result.from_dict(old).params == {}
    with pytest.raises(ValueError, match="params 'batch' must be a string, number or bool"):
        Result.from_dict({**r.to_dict(), "params": {"batch": [8]}})


RECORDING = """
def test_fit(gpu_benchmark):
    gpu_benchmark.record("max_batch", 31, "samples", note="the search limit")
    gpu_benchmark.record("ttft", 12.5, "ms")
"""


def test_a_save_runs_step_summary_shows_recorded_figures_with_value_and_unit(project, monkeypatch):
    """A save run has no verdicts: its step summary is the results table, where a recorded
    figure once read "OK" with empty columns."""
    project.makepyfile(test_fit=RECORDING)
    step = project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    project.runpytest(*FAST, "test_fit.py", "--gpuperf-baseline=save").assert_outcomes(passed=1)
    rows = [line.split(" | ") for line in step.read_text().splitlines() if "test\\_fit" in line]
    assert [r[:3] for r in rows] == [
        ["| test\\_fit.py::test\\_fit::max\\_batch", "31 samples", "recorded"],
        ["| test\\_fit.py::test\\_fit::ttft", "12.5 ms", "recorded"],
    ]
    assert rows[0][-1] == "the search limit |"


def test_importing_the_plugin_and_its_outputs_loads_no_report_library():
    """matplotlib and jinja2 are loaded when a report is written, not when pytest starts."""
    code = (
        "import sys, pytest_gpuperf.plugin, pytest_gpuperf.outputs, pytest_gpuperf.outputs.runfile;"
        "print(sorted(m for m in ('matplotlib', 'jinja2', 'markupsafe') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_html_path_that_is_a_directory_is_a_usage_error(project):
    result = project.runpytest(*FAST, f"--gpuperf-html={project.path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--gpuperf-html={project.path}: is a directory*"])


def test_report_merges_runs_of_several_gpus(tmp_path, capsys):
    out = tmp_path / "report.html"
    rc = main(["report", *map(str, H200_RUNS), "--baseline-dir", str(ROOT / "baselines"),
               "-o", str(out)])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    assert re.match(r"wrote .*report.html \(\d+ KiB\) from 4 run\(s\)", capsys.readouterr().out)
    text = out.read_text()
    self_contained(text)
    page = rd.parse(text)
    assert page.headings[:3] == ["Runs", "Verdicts, worst first",
                                 "History: the baseline's saved sessions and this run"]  # fmt: skip
    assert page.headings[3:] == ["Cost and energy", "All results"]
    # files written before parameters were recorded: their figures in the tables only
    assert "4 run(s)\nrecorded none" in text
    assert "H200 as a100-40gb" in text  # the emulated run says so
    assert "speed of the real card, memory of the emulated one" in page.cells
    assert "$4/h (h200, cloud on-demand rate, May 2026" in text  # the dated default price
    assert len(text.encode()) < 1_000_000


def test_the_shipped_sweep_gets_throughput_memory_and_out_of_memory_per_batch(tmp_path, capsys):
    """The QLoRA sweep declares each point's batch (gpu_benchmark.params): one line per GPU
    run through its batches, peak memory beside it with each card's capacity, the
    out-of-memory point marked; the emulated 40 GB run is a line of its own."""
    h200 = rd.write(tmp_path / "h200.json", rd.payload(rd.sweep_run(oom_at=None)))
    emu = rd.payload(rd.sweep_run(batches=(1, 8, 16), oom_at=20), emulated=["a100-40gb", 40.0])
    emu_path = rd.write(tmp_path / "emu.json", emu)
    out = tmp_path / "r.html"
    assert main(["report", str(h200), str(emu_path), "-o", str(out)]) == 0, capsys.readouterr().err
    page = rd.parse(out.read_text())
    chart = page.chart("test_finetune.py::test_qlora_batch_sweep: by batch")
    texts = set(chart.texts)
    assert {"throughput", "peak memory", "tokens/s", "GiB"} <= texts
    assert {"1", "8", "16", "20"} <= texts  # the emulated run ran out of memory at 20
    assert {"H200", "H200 as a100-40gb"} <= texts  # a line per run
    assert "OOM" in texts and "a100-40gb cap 40 GiB (emulated)" in texts
    assert chart.lines.count(4) >= 2 and chart.lines.count(3) >= 2  # throughput and memory
    assert "first_oom_batch" not in texts  # a figure of its own, in the tables
    assert "20 samples" in page.cells


def test_the_scale_tier_lines_per_length_with_each_compile_mode_apart(tmp_path, capsys):
    """test_generate_scale times one decoder at several lengths (params["new_tokens"] per
    call); the graph-only and the compiled decoder are lines of their own, by their
    compile_mode parameter."""
    results = []
    for mode, speed in (("None", 100.0), ("default", 130.0)):
        node = f"benchmarks/test_generate.py::test_generate_scale[llama2-7b-bf16-b1-{mode}]"
        params = {"preset": "llama2-7b", "weights": "bf16", "batch": 1, "compile_mode": mode}
        results += [rd.measured(node, speed * (1 - n / 4096), {**params, "new_tokens": n},
                                metric=f"tokens{n}") for n in (64, 256, 1024)]  # fmt: skip
        results.append(rd.recorded(node, "time_to_first_token_ms", 20.0, "ms", params))
    path = rd.write(tmp_path / "scale.json", rd.payload(results))
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 0, capsys.readouterr().err
    page = rd.parse(out.read_text())
    chart = page.chart("test_generate.py::test_generate_scale: by new_tokens")
    assert {"compile_mode=None · H200", "compile_mode=default · H200"} <= set(chart.texts)
    assert {"64", "256", "1,024"} <= set(chart.texts) and chart.lines.count(3) >= 2
    bars = page.chart("test_generate.py::test_generate_scale: per compile_mode")
    assert "time_to_first_token_ms" in bars.texts  # the figures without a length: bars


def _payload(path: Path) -> dict:
    return json.loads(path.read_text())


def test_bad_inputs_are_named_and_the_rest_is_reported(tmp_path, capsys):
    other_schema = tmp_path / "other.json"
    other_schema.write_text(json.dumps({"schema": "someone-else/1", "results": [], "device": {}}))
    not_json = tmp_path / "broken.json"
    not_json.write_text("{not json")
    # the same profile name on another GPU (a custom profile reused across runners)
    renamed = _payload(H200_RUNS[1])
    renamed["device"]["gpus"][0]["name"] = "NVIDIA A100-SXM4-80GB"
    a100 = tmp_path / "a100-as-h200.json"
    a100.write_text(json.dumps(renamed))
    # a profile without a price
    l4 = _payload(H200_RUNS[1])
    l4["profile"] = "l4"
    l4["device"]["gpus"][0]["name"] = "NVIDIA L4"
    l4_path = tmp_path / "l4.json"
    l4_path.write_text(json.dumps(l4))
    out = tmp_path / "r.html"
    rc = main(["report", str(H200_RUNS[1]), str(other_schema), str(not_json), str(a100),
               str(l4_path), "-o", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2  # an input was left out: CI notices
    assert f"left out: results file {other_schema}: schema 'someone-else/1' is not 'pytest-gpuperf/results-1'" in err
    assert f"left out: results file {not_json}:" in err
    text = out.read_text()  # written for what is valid
    assert "from 3 run(s)" in text and "A100-SXM4-80GB" in text
    assert "profile 'h200' names runs of different GPUs" in html.unescape(text)
    assert "no price per hour for profile l4" in text
    assert "left out:" in text  # the report itself says what it left out


def test_nothing_readable_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    out = tmp_path / "r.html"
    assert main(["report", str(bad), "-o", str(out)]) == 2
    assert "no readable results: nothing written" in capsys.readouterr().err
    assert not out.exists()


def test_summary_round_trips_through_its_json():
    data = _payload(H200_RUNS[0])
    s = summary_from_payload(data, "emu.json")
    assert s.emulated == ("a100-40gb", None) and s.profile == "h200"
    again = summary_from_payload(json.loads(json.dumps(s.payload())), "again.json")
    assert [r.to_dict() for r in again.results] == [r.to_dict() for r in s.results]
    with pytest.raises(ResultsFileError, match=r"x.json: results\[0\]: "):
        summary_from_payload({**data, "results": [{"nodeid": 3}]}, "x.json")


def test_the_pre_release_metrics_list_is_not_read():
    """Files written before commit 7f206e0 kept recorded figures in a 'metrics' list; no
    release wrote one, and the reader for it is gone: the list is ignored like any key this
    version does not know."""
    data = _payload(H200_RUNS[1])
    data["metrics"] = [{"key": "benchmarks/test_finetune.py::test_qlora_max_batch[llama2-7b]::max_batch",
                        "value": 31.0, "unit": "samples", "higher_is_better": True}]  # fmt: skip
    s = summary_from_payload(data, "old.json")
    assert len(s.results) == len(data["results"])
    assert not any(r.metric == "max_batch" for r in s.results)


# ------------------------------------------------------------------ in a real browser

@pytest.mark.slow
def test_the_report_as_a_person_sees_it(tmp_path):
    """Opened from a file (as from a CI artifact), offline: no console error, every chart
    drawn, the verdict filter works; a screenshot is kept."""
    _need_a_browser()
    from selenium.webdriver.common.by import By

    cpu = tmp_path / "cpu.json"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/test_dtype.py", "benchmarks/test_generate.py",
         "-k", "matmul or cast or copy or scale", "-q", "-p", "no:cacheprovider",
         "--gpuperf-baseline=off", f"--gpuperf-json={cpu}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    out = tmp_path / "report.html"
    rc = main(["report", *map(str, H200_RUNS), str(cpu), "--baseline-dir",
               str(ROOT / "baselines"), "-o", str(out)])  # fmt: skip
    assert rc == 0
    # the CPU run's charts, from its parameters: the dtypes and the scale tier's lengths
    headings = rd.parse(out.read_text()).headings
    assert "test_generate.py::test_generate_scale: by new_tokens" in headings
    assert "test_dtype.py::test_matmul: per dtype" in headings
    driver = _browser()
    try:
        driver.get(out.as_uri())
        # a loaded machine may lay out a large page after `get` returns (one full run saw 1
        # chart of many): wait for them, as a person would, rather than count at once
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, 120).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, ".chart svg")) >= 4
        )
        charts = driver.find_elements(By.CSS_SELECTOR, ".chart svg")
        assert len(charts) >= 4
        for svg in charts:
            size = svg.size
            assert size["width"] > 300 and size["height"] > 150
            assert svg.find_elements(By.CSS_SELECTOR, "path, line, rect, use")
        rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-verdict]")
        inconclusive = [r for r in rows if r.get_attribute("data-verdict") == "INCONCLUSIVE"]
        assert rows and inconclusive
        driver.find_element(By.CSS_SELECTOR, "input.vf[value='INCONCLUSIVE']").click()
        assert all(not r.is_displayed() for r in inconclusive)
        assert any(r.is_displayed() for r in rows if r not in inconclusive)
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(int(height), 8000))
        shot = Path(os.environ.get("GPUPERF_SCREENSHOT", tmp_path / "report.png"))
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        driver.quit()


def test_compiled_decoder_runs_are_their_own_series(tmp_path):
    """test_generate_static on a GPU: batch 1 and 8 (a line each) for each compile mode, by
    its compile_mode parameter: no mode may vanish from the chart for want of a known id."""
    results = []
    for mode in ("None", "default", "max-autotune-no-cudagraphs"):
        for b in (1, 8):
            node = f"benchmarks/test_generate.py::test_generate_static[llama-1b-b{b}-256tok-{mode}]"
            params = {"preset": "llama-1b", "batch": b, "new_tokens": 256, "compile_mode": mode}
            results.append(rd.measured(node, 300.0 * b, params, metric="generate"))
    s = summary_from_payload(rd.payload(results), "static.json")
    chart = rd.parse(build_html([s])).chart("test_generate.py::test_generate_static: by batch")
    for mode in ("None", "default", "max-autotune-no-cudagraphs"):
        assert f"compile_mode={mode} · H200" in chart.texts
    assert chart.lines.count(2) >= 3 and "generate" in chart.texts


def test_history_comes_from_the_baseline_the_run_was_judged_against(tmp_path, capsys):
    """An emulated run was judged against h200@a100-40gb.json: its history must not come from
    the real card's h200.json, which may hold the same keys."""
    from pytest_gpuperf.outputs.report.html import baseline_name

    s = summary_from_payload(_payload(H200_RUNS[0]), "emu.json")
    s.baseline_path = "/runner/baselines/h200@a100-40gb.json"
    assert baseline_name(s) == "h200@a100-40gb.json"
    s.baseline_path = None
    assert baseline_name(s) == "h200.json"
    data = _payload(H200_RUNS[3])
    data["baseline"] = "/elsewhere/h200@a100-40gb.json"
    path = tmp_path / "emu-judged.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--baseline-dir", str(ROOT / "baselines"), "-o", str(out)]) == 0
    assert "History: the baseline" not in out.read_text()  # no h200@a100-40gb.json there


def test_without_matplotlib_the_html_is_not_written_and_the_run_fails(project, monkeypatch):
    saved(project, times=1)
    project.makeconftest(
        "import sys\nsys.modules['matplotlib'] = None  # as if it were not installed\n"
    )
    out = project.path / "r.html"
    result = project.runpytest(*FAST, f"--gpuperf-html={out}")
    result.stdout.fnmatch_lines([f"gpuperf: NOT WRITTEN: --gpuperf-html {out}: the charts need matplotlib and jinja2, which are optional: pip install 'pytest-gpuperf?report?'*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED and not out.exists()


def test_report_reads_pytest_benchmarks_json_with_our_section(tmp_path, capsys):
    """A --benchmark-json file carries the run in its "gpuperf" section."""
    bench = {"machine_info": {}, "benchmarks": [], "gpuperf": _payload(H200_RUNS[1])}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    assert "test_matmul[bf16]" in out.read_text()


def test_a_run_with_a_bad_figure_is_left_out_as_compare_would(tmp_path, capsys):
    data = _payload(H200_RUNS[1])
    data["results"][0]["throughput"]["ci_low"] = -1.0  # below zero: not a figure
    bad = tmp_path / "bad-figure.json"
    bad.write_text(json.dumps(data))
    out = tmp_path / "r.html"
    assert main(["report", str(bad), str(H200_RUNS[0]), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"left out: results file {bad}: results[0] benchmarks/test_dtype.py::test_matmul[bf16] throughput: ci_low is -1.0" in err
    assert out.exists()


def test_report_baseline_dir_problems_are_named(tmp_path, capsys):
    out = tmp_path / "r.html"
    missing_dir = tmp_path / "no-such-dir"
    assert main(["report", str(H200_RUNS[3]), "--baseline-dir", str(missing_dir), "-o", str(out)]) == 2
    assert f"--baseline-dir {missing_dir}: not a directory" in capsys.readouterr().err
    bad = tmp_path / "baselines"
    bad.mkdir()
    (bad / "h200.json").write_text("{not json")
    assert main(["report", str(H200_RUNS[3]), "--baseline-dir", str(bad), "-o", str(out)]) == 0
    assert f"no history from h200.json: baseline file {bad / 'h200.json'}" in capsys.readouterr().err
    assert "History: the baseline" not in out.read_text() and (bad / "h200.json").read_text() == "{not json"
    missing = tmp_path / "no-such.toml"  # a named profiles file that is not there was ignored
    assert main(["report", str(H200_RUNS[3]), "--pyproject", str(missing), "-o", str(tmp_path / "p.html")]) == 2
    assert f"--pyproject {missing}: not a file" in capsys.readouterr().err
    assert not (tmp_path / "p.html").exists()


def test_the_runs_table_says_when_the_baseline_judged_nothing_of_the_run():
    from pytest_gpuperf.outputs.report.html import _baseline_cell

    s = summary_from_payload(_payload(H200_RUNS[0]), "run.json")
    s.baseline_path = "baselines/h200.json"
    for r in s.results:
        r.verdicts = {"throughput": from_json({"status": "unchanged"})}
    assert _baseline_cell(s) == "baselines/h200.json"
    for r in s.results:
        r.verdicts = {"throughput": from_json({"status": "new"})}
    assert _baseline_cell(s) == "baselines/h200.json (nothing of this run in it: every result new)"
    for r in s.results:  # saved into it, or not judged: it is named as it is
        r.verdicts = {}
    assert _baseline_cell(s) == "baselines/h200.json"
    s.baseline_path = None
    assert _baseline_cell(s) == "-"

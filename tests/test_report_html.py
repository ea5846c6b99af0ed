"""The HTML report: --gpuperf-html on a run, `gpuperf report` merging runs of several GPUs,
bad inputs, and what a person sees in a real browser (headless Chromium)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gpuperf.__main__ import main
from pytest_gpuperf.outputs import RunSummary, SchemaError
from pytest_gpuperf.outputs.html import build_html

from .gateproject import FAST, saved

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "docs" / "evidence"
# real H200 results committed with the repository: a 40 GB-emulated QLoRA sweep, the smoke
# tier, the dtype and generation modules, and a compared multi-GPU session
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
    for heading in (
        "Fine-tuning: tokens/s and memory per batch size",
        "Generation: tokens/s as new tokens grow",
        "Dtypes: matmul and cast throughput",
        "History: the baseline",
        "Largest batch that fits",
        "Cost and energy",
    ):
        assert heading in text
    assert "H200 as a100-40gb" in text  # the emulated run says so
    assert "speed of the real card, memory of the emulated one" in text
    assert "$4/h (h200, cloud on-demand rate, May 2026" in text  # the dated default price
    assert len(text.encode()) < 1_000_000


def test_the_scale_tier_and_its_compiled_decoder_are_charted(tmp_path, capsys):
    """Real H200 runs of the scale tier: the graph-only and the compiled 7B decoder are
    lines (and time-to-first-token bars) of their own, and the 13B and 70B nf4 runs are
    charted. (The lease3 run's step was compiled with max-autotune, under the id
    "-compiled" it had before "-autotuned" existed: the chart follows the id.)"""
    lease = EVIDENCE / "h200x2-2026-11-30-d"
    later = EVIDENCE / "h200x2-2026-11-30-e" / "lease4"
    out = tmp_path / "report.html"
    runs = [lease / "lease1" / "scale-7b-bf16-b1.json", lease / "lease3" / "scale-7b-compiled.json",
            later / "scale-13b-nf4.json", later / "scale-70b.json"]  # fmt: skip
    assert main(["report", *map(str, runs), "-o", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "llama2-7b bf16 b1 static" in text
    assert "llama2-7b bf16 b1 compiled" in text
    assert "llama2-7b bf16 b1 compiled · H200" in text  # its time to first token, apart
    assert "llama2-13b nf4 b8 static" in text
    assert "llama2-70b nf4 b1 static" in text


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
    assert f"left out: {other_schema}: schema 'someone-else/1' is not 'pytest-gpuperf/results-1'" in err
    assert f"left out: results file {not_json}:" in err
    text = out.read_text()  # written for what is valid
    assert "from 3 run(s)" in text and "A100-SXM4-80GB" in text
    assert "profile &#x27;h200&#x27; names runs of different GPUs" in text
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
    s = RunSummary.from_payload(data, "emu.json")
    assert s.emulated == ("a100-40gb", None) and s.profile == "h200"
    again = RunSummary.from_payload(json.loads(json.dumps(s.payload())), "again.json")
    assert [r.to_dict() for r in again.results] == [r.to_dict() for r in s.results]
    with pytest.raises(SchemaError, match=r"x.json: results\[0\]: "):
        RunSummary.from_payload({**data, "results": [{"nodeid": 3}]}, "x.json")


def test_legacy_recorded_figures_are_read():
    data = _payload(H200_RUNS[1])
    data["metrics"] = [{"key": "benchmarks/test_finetune.py::test_qlora_max_batch[llama2-7b]::max_batch",
                        "value": 31.0, "unit": "samples", "higher_is_better": True,
                        "emulated": "rtx-6000-ada"}]  # fmt: skip
    s = RunSummary.from_payload(data, "old.json")
    r = s.results[-1]
    assert (r.kind, r.metric, r.value, r.emulated) == ("recorded", "max_batch", 31.0, "rtx-6000-ada")
    assert "Largest batch that fits" in build_html([s])


# ------------------------------------------------------------------ in a real browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (.ci/run does)")
        pytest.skip("Debian's chromium and chromium-driver are not installed")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,900"):  # fmt: skip
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def test_the_report_as_a_person_sees_it(tmp_path):
    """Opened from a file (as from a CI artifact), offline: no console error, every chart
    drawn, the verdict filter works; a screenshot is kept."""
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
    assert "tiny nf4 b2" in out.read_text()  # the scale tier's CPU run in the generation chart
    driver = _browser()
    try:
        driver.get(out.as_uri())
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


def test_compiled_decoder_runs_are_their_own_series():
    """Each compile mode is a series of its own (inductor's default "-compiled", max-autotune
    "-autotuned"); neither may vanish from the chart for want of a matching id."""
    runs = []
    for suffix in ("-compiled", "-autotuned"):
        s = RunSummary.from_payload(_payload(H200_RUNS[1]), f"smoke{suffix}.json")
        bench_like = [r for r in s.results if "test_generate_static" in r.nodeid]
        assert bench_like
        for r in bench_like:
            r.nodeid = r.nodeid.replace("256tok]", f"256tok{suffix}]")
        runs.append(s)
    text = build_html(runs[:1])
    assert "llama-1b b1 compiled ·" in text  # the legend names the compiled decoder
    assert "b1 autotuned" not in text
    text = build_html(runs[1:])
    assert "llama-1b b1 autotuned ·" in text


def test_history_comes_from_the_baseline_the_run_was_judged_against(tmp_path, capsys):
    """An emulated run was judged against h200@a100-40gb.json: its history must not come from
    the real card's h200.json, which may hold the same keys."""
    from pytest_gpuperf.outputs.html import baseline_name

    s = RunSummary.from_payload(_payload(H200_RUNS[0]), "emu.json")
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
    result.stdout.fnmatch_lines([f"gpuperf: NOT WRITTEN: --gpuperf-html {out}: the charts need matplotlib*"])
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
    assert f"left out: {bad}: benchmarks/test_dtype.py::test_matmul[bf16] throughput: ci_low is -1.0" in err
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

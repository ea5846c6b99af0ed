"""`gpuperf report`'s HTML (outputs/html.py) of hostile results files, names and sizes."""

import copy
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gpuperf.cli.main import main
from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.outputs import RunSummary, write_files

from . import reportdata as rd
from .gateproject import FAST
from .reportdata import JSON, paths, replaced

SCRIPT = 'x"><script>alert(9)</script>'
NODE = "benchmarks/test_finetune.py::test_lora_step"


def valid_run():
    """Two points of one parametrized test (a line chart), a recorded figure, a verdict."""
    results = [
        rd.measured(f"{NODE}[b{b}]", 100.0 * b, {"preset": "tiny", "batch": b}, peak_gib=b)
        for b in (1, 2)
    ]
    results.append(rd.recorded(f"{NODE}[b2]", "max_batch", 8, "samples", {"batch": 2},
                               note="the search limit"))  # fmt: skip
    results[0].verdicts = {"throughput": from_json({
        "status": "inconclusive", "change": 0.01, "worse": -0.01, "uncertainty": 0.2,
        "tolerance": 0.03, "reason": "wide", "mde": 0.2, "sessions_needed": 3, "advice": "wait",
    })}  # fmt: skip
    doc = rd.payload(results)
    doc["missing"] = [f"{NODE}[b4]"]
    return doc


def report(tmp_path, *docs, title=None, name="r.json"):
    """`gpuperf report` of these documents: (exit status, HTML or None)."""
    files = [rd.write(tmp_path / f"{i}-{name}", doc) for i, doc in enumerate(docs)]
    out = tmp_path / "out.html"
    out.unlink(missing_ok=True)
    args = ["report", *map(str, files), "-o", str(out)] + (["--title", title] if title else [])
    rc = main(args)
    return rc, (out.read_text() if out.exists() else None)


def only_its_own_script(text):
    page = rd.parse(text)
    assert page.scripts == 1, "a script element came from the input"
    assert page.handlers == []  # no on* attribute, no javascript: URL
    return page


# ------------------------------------------------------------------ 5: injection


def hostile(doc, keep=("schema", "status", "outcome", "kind", "bound", "direction")):
    """Every string of a results file with script in front of it (values stay distinct, so
    the charts are drawn), the keys of params too; the fields that name a state are kept."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if k in keep and isinstance(v, str):
                out[k] = v
            elif k == "params" and isinstance(v, dict):
                out[k] = {SCRIPT + pk: SCRIPT + pv if isinstance(pv, str) else pv
                          for pk, pv in v.items()}  # fmt: skip
            else:
                out[k] = hostile(v, keep)
        return out
    if isinstance(doc, list):
        return [hostile(v, keep) for v in doc]
    return SCRIPT + doc if isinstance(doc, str) else doc


def test_script_in_every_text_field_of_a_results_file_stays_text(tmp_path, capsys):
    doc = hostile(valid_run())
    assert doc["results"][0]["verdicts"]["throughput"]["reason"].startswith(SCRIPT)
    bad_name = tmp_path / f'{SCRIPT.replace("/", "")}.json'
    bad_name.write_text("{not json")
    out = tmp_path / "out.html"
    good = rd.write(tmp_path / "r.json", doc)
    rc = main(["report", str(good), str(bad_name), "-o", str(out), "--title", SCRIPT])
    assert rc == 2  # the broken file was left out
    page = only_its_own_script(out.read_text())
    assert any(SCRIPT in cell for cell in page.cells)  # shown, as text
    assert len([h for h in page.headings if SCRIPT in h]) >= 1  # a chart of the hostile test
    chart = next(c for c in page.charts if SCRIPT in c.title)
    assert any(SCRIPT in t for t in chart.texts)  # the legend and labels: SVG text


@pytest.mark.parametrize(
    ("where", "value", "error"),
    [
        ("status", SCRIPT, "status must be one of regressed, failed"),
        ("status", 5, "status must be one of"),
        ("status", None, "status must be one of"),
        ("status", True, "status must be one of"),
        ("change", "abc", "change must be a finite number or null, got 'abc'"),
        ("tolerance", "x", "tolerance must be a finite number or null, got 'x'"),
        ("reason", ["a"], "reason must be a string or null"),
        ("sessions_needed", 1.5, "sessions_needed must be a whole number or null"),
        (None, "a string", "must be an object, got 'a string'"),
        (None, ["a", "list"], "must be an object, got ['a', 'list']"),
    ],
)
def test_a_bad_verdict_is_one_clear_error_naming_the_file_and_field(tmp_path, capsys, where, value, error):
    doc = valid_run()
    if where is None:
        doc["results"][0]["verdicts"]["throughput"] = value
    else:
        doc["results"][0]["verdicts"]["throughput"][where] = value
    rc, text = report(tmp_path, doc)
    err = capsys.readouterr().err
    assert rc == 2 and text is None
    where = f"results file {tmp_path / '0-r.json'}: results[0]: result '{NODE}[b1]'"
    assert f"{where} verdicts['throughput']: {error}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("missing", 1, "'missing' must be a list of test ids"),
        ("missing", [1], "'missing' must be a list of test ids"),
        ("confidence", "high", "'confidence' must be a fraction, got 'high'"),
        ("emulated", ["a100-40gb", "big"], "'emulated' must be [profile, GiB or null]"),
        ("describe", 3, "'describe' must be a string or null, got 3"),
        ("device", {"gpus": [{"name": 5}]}, "device gpus[0] 'name' must be a string or null"),
        ("device", {"packages": {"torch": 2}}, "device 'packages' must be an object of version"),
    ],
)
def test_a_bad_top_level_field_is_one_clear_error(tmp_path, capsys, field, value, error):
    doc = valid_run()
    doc[field] = value
    rc, text = report(tmp_path, doc)
    err = capsys.readouterr().err
    assert rc == 2 and text is None and f"results file {tmp_path / '0-r.json'}: {error}" in err


# ------------------------------------------------------------------ 6: `$` is a dollar sign

DOLLARS = ["$\\frac{a}{b}$", "$HOME_$USER", "a$b"]


def test_dollar_signs_in_gpu_names_params_and_titles_are_plain_text(tmp_path, capsys):
    doc = valid_run()
    doc["device"]["gpus"][0]["name"] = "$HOME_$USER"
    for r, name in zip(doc["results"], DOLLARS, strict=True):
        r["params"]["preset"] = "$\\frac{a}{b}$"
        r["nodeid"] = r["nodeid"].replace("[", f"[{name}")
    rc, text = report(tmp_path, doc, title="$\\frac{a}{b}$ $HOME_$USER")
    assert rc == 0, capsys.readouterr().err
    assert "<h1>$\\frac{a}{b}$ $HOME_$USER</h1>" in text
    page = only_its_own_script(text)
    chart = page.chart("test_finetune.py::test_lora_step: by batch")
    assert "$HOME_$USER" in chart.texts and "1" in chart.texts  # the run's label, as written


BENCH = """
import pytest
from vclock import spin

@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name", ["$\\\\frac{a}{b}$", "$HOME_$USER"], ids=["$\\\\frac{a}{b}$", "$HOME_$USER"])
def test_dollar(gpu_benchmark, name, batch):
    gpu_benchmark(lambda: spin(0.001 * batch), work=batch, unit="samples")
"""


def test_dollar_signs_in_test_ids_lose_no_output_of_a_run(project, monkeypatch):
    """A compared run with `$` in its ids: history charts and parameter charts are drawn,
    and the JSON, the step summary and the HTML are all written (exit 0)."""
    project.makepyfile(test_dollar=BENCH)
    for _ in range(2):
        project.runpytest(*FAST, "test_dollar.py", "--gpuperf-baseline=save").assert_outcomes(passed=4)
    step = project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    out, js = project.path / "r.html", project.path / "r.json"
    result = project.runpytest(*FAST, "test_dollar.py", f"--gpuperf-html={out}", f"--gpuperf-json={js}")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines([f"gpuperf: wrote {js}", f"gpuperf: wrote {out} (* KiB)"])
    assert json.loads(js.read_text())["results"] and "$HOME" in step.read_text()
    page = only_its_own_script(out.read_text())
    history = page.chart("History: the baseline's saved sessions and this run")
    assert any("$HOME_$USER" in t for t in history.texts)
    chart = page.chart("test_dollar.py::test_dollar: by batch")
    assert "name=$\\frac{a}{b}$ · CPU" in chart.texts


def test_an_output_that_fails_loses_no_other_output(tmp_path, monkeypatch):
    """Whatever breaks one output (here the HTML), the JSON and the step summary are written
    and the failure is named; the caller fails the run."""
    import pytest_gpuperf.outputs.report.html as html

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the report")

    monkeypatch.setattr(html, "build_html", broken)
    s = RunSummary(device=rd.device(None), describe="cpu", profile="cpu", baseline_path=None,
                   baseline_found=False, baseline_mode="off", baseline_note=None,
                   comparing=False, warn_only=False, emulated=None,
                   results=[rd.measured("t.py::t", 10.0, {})], missing=[])  # fmt: skip
    paths_ = {k: tmp_path / f"out.{k}" for k in ("json", "html", "md")}
    notes, failed = write_files(s, json_path=paths_["json"], html_path=paths_["html"],
                                step_summary=paths_["md"])  # fmt: skip
    assert failed
    assert notes[-1] == (f"gpuperf: NOT WRITTEN: --gpuperf-html {paths_['html']}: "
                         "RuntimeError: a bug in the report")  # fmt: skip
    assert json.loads(paths_["json"].read_text())["results"][0]["nodeid"] == "t.py::t"
    assert "t.py::t" in paths_["md"].read_text() and not paths_["html"].exists()


# ------------------------------------------------------------------ 7: no quadratic work


def test_a_400_kb_node_id_reports_in_bounded_time(tmp_path, capsys):
    """The id once made the generation chart's regex backtrack (2.2 s at 84 KB, 46.6 s at
    420 KB). No id is matched any more: well under a second; 20 s is the bound."""
    doc = valid_run()
    long_id = "benchmarks/test_generate.py::" + "test_generate_static[a-b1-" * 16_000 + "x]"
    assert len(long_id) > 400_000
    for r in doc["results"]:
        r["nodeid"] = long_id + r["nodeid"][-3:]
    start = time.process_time()
    rc, text = report(tmp_path, doc)
    assert rc == 0, capsys.readouterr().err
    assert time.process_time() - start < 20
    assert any(long_id in cell for cell in rd.parse(text).cells)


def test_a_file_with_thousands_of_tests_is_charted_within_the_limits(tmp_path, capsys):
    """Charts are bounded whatever the file holds: at most 24, the rest named."""
    results = []
    for t in range(200):
        for b in (1, 2):
            results.append(rd.measured(f"t.py::test_{t}[{b}]", 10.0 * b, {"batch": b}))
    start = time.process_time()
    rc, text = report(tmp_path, rd.payload(results))
    assert rc == 0, capsys.readouterr().err
    page = rd.parse(text)
    assert sum(1 for h in page.headings if h.endswith(": by batch")) == 24
    assert "176 more chart(s) left out (at most 24, 3,000 points in all)" in text
    assert time.process_time() - start < 120  # about 10 s on a loaded 2-core runner


@pytest.mark.slow
def test_charts_are_bounded_in_points(tmp_path, capsys):
    """Tests with many lines of many points: the report draws at most 3,000 points."""
    results = []
    for t in range(9):
        for series in range(13):
            for b in range(1, 71):
                node = f"t.py::test_{t}[{series}-{b}]"
                results.append(rd.measured(node, 10.0 * b, {"batch": b, "series": f"s{series}"}))
    start = time.process_time()
    rc, text = report(tmp_path, rd.payload(results))
    assert rc == 0, capsys.readouterr().err
    page = rd.parse(text)
    drawn = [c for c in page.charts if c.title.endswith(": by batch")]
    assert len(drawn) == 7 and "2 more chart(s) left out" in text  # 7 x 384 points
    # 13 lines of 70 points: 12 lines at most, 64 points a line, 400 points a chart
    assert "7 more line(s) of throughput; 78 point(s) beyond 64 a line" in text
    assert time.process_time() - start < 120


# ------------------------------------------------------------------ 8: property test

HOSTILE_TEXT = st.sampled_from(
    [SCRIPT, "$\\frac{a}{b}$", "$HOME_$USER", "\x1b[31m", "a" * 5000, "]", "[", "::", "",
     "\ud800", "nan", "1e999"]
)  # fmt: skip
VALUES = JSON | HOSTILE_TEXT | st.integers(min_value=-(2**63), max_value=2**63)
SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                            HealthCheck.too_slow])  # fmt: skip


def deleted(doc, path):
    """The document without the key or item at `path`."""
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    del node[path[-1]]
    return out


def mutants():
    """A valid run with one value replaced (wrong kinds, hostile strings) or removed."""
    valid = valid_run()
    places = list(paths(valid))
    replace = st.tuples(st.sampled_from(places), VALUES).map(lambda pv: replaced(valid, *pv))
    remove = st.sampled_from([p for p in places if p]).map(lambda p: deleted(valid, p))
    return replace | remove


@pytest.mark.slow
@SETTINGS
@given(doc=mutants())
def test_a_mutated_results_file_gives_a_report_or_one_clear_error(tmp_path, capsys, doc):
    capsys.readouterr()
    start = time.process_time()
    rc, text = report(tmp_path, copy.deepcopy(doc))
    err = capsys.readouterr().err
    assert time.process_time() - start < 20
    if rc == 0:
        only_its_own_script(text)
    else:
        assert rc == 2 and text is None
        lines = err.strip().splitlines()
        assert lines[0].startswith(f"gpuperf report: left out: results file {tmp_path / '0-r.json'}")
        assert lines[1:] == ["gpuperf report: no readable results: nothing written"]


@SETTINGS
@given(doc=JSON)
def test_arbitrary_json_gives_one_clear_error(tmp_path, capsys, doc):
    capsys.readouterr()
    rc, text = report(tmp_path, doc)
    err = capsys.readouterr().err
    assert rc == 2 and text is None and f"results file {tmp_path / '0-r.json'}" in err


def test_the_valid_run_is_valid(tmp_path, capsys):
    """The mutation tests start from a file that gives a report with a chart."""
    rc, text = report(tmp_path, valid_run())
    assert rc == 0, capsys.readouterr().err
    page = only_its_own_script(text)
    assert page.chart("test_finetune.py::test_lora_step: by batch").lines.count(2) >= 1


def test_the_history_chart_has_one_legend_under_its_panels_not_one_over_each():
    pytest.importorskip("matplotlib")
    from pytest_gpuperf.outputs.report.plot import history_svg

    hist = [{"median": 100.0 + i, "ci_low": 99.0 + i, "ci_high": 101.0 + i} for i in range(3)]
    picks = [(f"t.py::t{i} throughput", status, "tokens/s", hist, {"median": 90.0})
             for i, status in enumerate(("regressed", "unchanged", "improved", "unchanged"))]  # fmt: skip
    svg = history_svg(picks)
    # a legend inside each panel (matplotlib's "best" place) covered the points it explains
    assert svg.count('id="legend_') == 1, svg.count('id="legend_')
    for label in ("saved sessions", "this run: regressed", "this run: unchanged", "this run: improved"):
        assert label in svg

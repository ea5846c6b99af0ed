"""The history dashboard (`gpuperf history DIR -o SITE`, history/site.py and svg.py) on
made-up nightly histories: a static site that fetches nothing, the newest changes first with
their commit ranges (linked through --repo-url), a page per benchmark with each profile's
chart (the interval band, runs left out, saved sessions, steps and creep drawn); a directory
of someone else's files is never written into. The browser test (slow) opens it in headless
Chromium, as the HTML report's does."""

import json
import os
import re
from pathlib import Path

import pytest

from pytest_gpuperf.cli.main import main
from pytest_gpuperf.core.verdict import from_json
from pytest_gpuperf.history.cache import read_cached
from pytest_gpuperf.history.importer import import_files
from pytest_gpuperf.history.record import dumps, restarts_of
from pytest_gpuperf.history.store import read_history
from pytest_gpuperf.history.svg import thinned

from .gateproject import saved
from .historydata import commit, noisy, record, write_dashboard, write_series
from .inputs import browser, need_a_browser, schema_validator
from .reportdata import measured

COMPARE = "https://github.com/o/r/compare/{last_good}...{first_bad}"


def self_contained(text):
    """Nothing the page fetches as it opens: no script, stylesheet, image, frame, font or
    CSS url() (a link to a range's commits is followed only when clicked)."""
    assert not re.search(r"<(script|img|link|iframe|object|embed|image|use)\b", text)
    assert not re.search(r"\b(src|srcset|xlink:href)=", text)
    assert "@import" not in text and "url(" not in text and "@font-face" not in text


@pytest.fixture
def dashboard(tmp_path):
    hist = tmp_path / "hist"
    hist.mkdir()
    write_dashboard(hist)
    site = tmp_path / "site"
    assert main(["history", str(hist), "-o", str(site), "--repo-url", COMPARE]) == 0
    return hist, site


def pages(site):
    return {p.name: p.read_text(encoding="utf-8") for p in (site / "b").glob("*.html")}


def test_the_index_opens_offline_with_the_newest_change_first_and_its_range_linked(dashboard):
    _, site = dashboard
    index = (site / "index.html").read_text(encoding="utf-8")
    self_contained(index)
    assert "<script" not in index and "@font-face" not in index
    # h200's copy stepped at night 60 (newest), h100's LoRA step crept over nights 40-50
    copy = index.index("test_copy[bf16]</a> throughput")
    creep = index.index("test_lora_step[7b]</a> throughput")
    assert copy < creep
    assert f'href="https://github.com/o/r/compare/{commit(59)}...{commit(60)}"' in index
    assert f'href="https://github.com/o/r/compare/{commit(40)}...{commit(50)}"' in index
    # every figure of both profiles has its small chart, those that changed first
    cards = re.findall(r'<a class="fig" href="b/([^"#]+)#([^"]+)"', index)
    assert len(cards) == 6 and len(re.findall(r"<polyline", index)) == 6
    assert cards[0][1] == "f-h200--throughput" and "copy" in cards[0][0]
    assert all(name in pages(site) for name, _ in cards)


def test_a_benchmarks_page_draws_band_left_out_saved_step_and_creep(dashboard):
    _, site = dashboard
    (copy,) = (t for n, t in pages(site).items() if n.startswith("test_dtype.py_test_copy"))
    (lora,) = (t for n, t in pages(site).items() if n.startswith("test_finetune.py_test_lora"))
    self_contained(copy)
    assert "gpuperf bisect --good 0059cccccccc --bad 0060cccccccc" in copy
    # a chart per profile, each with its interval band and the shared-GPU night as a ring
    assert copy.count('<svg width="760"') == 2 and copy.count("<polygon") >= 2
    assert copy.count("<title>left out: gpu-shared</title>") == 2
    assert copy.count("<title>a saved baseline session</title>") == 6  # nights 0, 30, 60 x 2
    step = re.findall(r"<rect [^>]*fill=\"#d62728\"[^>]*><title>step slower -4", copy)
    assert len(step) == 1
    assert re.search(r'<path d="M[\d.]+ [\d.]+H[\d.]+M[\d.]+ [\d.]+H[\d.]+" stroke="#d62728"', copy)
    assert re.search(r'<line [^>]*stroke-dasharray="5 3"><title>creep slower', lora)
    assert re.search(r"creep slower -[45]\.\d+% ±[\d.]+%: -0\.[45]\d% a run over 1\d runs", lora)


def test_a_rebuild_replaces_its_own_pages_and_nothing_else(dashboard, tmp_path):
    hist, site = dashboard
    stale = site / "b" / "gone-00000000.html"
    stale.write_text("an old benchmark's page")
    assert main(["history", str(hist), "-o", str(site)]) == 0
    assert not stale.exists() and (site / "index.html").is_file()
    assert "compare/" not in (site / "index.html").read_text()  # no template: no links


@pytest.mark.parametrize(
    "args, said",
    [
        (["-o", "{other}"], "holds files of something else (no .gpuperf-site)"),
        (["-o", "{hist}"], "is the history directory; give the site its own"),
        (["-o", "{site}", "--repo-url", "javascript:alert(1)//{{last_good}}"],
         "must start with http:// or https://"),
        (["-o", "{site}", "--repo-url", "https://x/{{commit}}"], "unknown placeholder {commit}"),
        (["--repo-url", COMPARE.replace("{", "{{").replace("}", "}}")], "give -o SITE"),
    ],
)  # fmt: skip
def test_a_site_where_it_cannot_go_is_one_line_and_writes_nothing(tmp_path, capsys, args, said):
    hist = tmp_path / "hist"
    hist.mkdir()
    write_series(hist, noisy(8, 0.005, 1))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    where = {"hist": hist, "other": other, "site": tmp_path / "site"}
    argv = [a.format(**where) for a in args]
    assert main(["history", str(hist), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    assert not (tmp_path / "site").exists()


def test_names_from_the_history_are_escaped(tmp_path):
    hist = tmp_path / "hist"
    hist.mkdir()
    test = 'b.py::test_x[<script>alert("x")</script>]'
    for i, v in enumerate(noisy(8, 0.005, 2)):
        rec = record(i, [(test, "throughput", v, "GB/s", "higher", "bandwidth", ())])
        rec["commit"] = f'"><img src=x onerror=alert({i})>'
        (hist / f"n{i}.json").write_text(dumps(rec))
    site = tmp_path / "site"
    assert main(["history", str(hist), "-o", str(site)]) == 0
    for text in [(site / "index.html").read_text(), *pages(site).values()]:
        assert "<script" not in text and "<img" not in text
        self_contained(text)
    assert "&lt;script&gt;" in (site / "index.html").read_text()


NOTE = "history restarted on 2026-06-11: the new kernel is the norm"


def test_an_accepted_restart_is_recorded_and_marked_where_its_note_first_appears(tmp_path):
    """A run judged against a restarted history records the figure's note (the verdict's
    `restarted`); the dashboard draws one mark, at the first run carrying it."""
    r = measured("b.py::test_x", 1000.0, {})
    r.verdicts = {"throughput": from_json({"status": "unchanged", "change": 0.0,
                                           "tolerance": 0.03, "restarted": NOTE})}  # fmt: skip
    assert restarts_of([r]) == [{"test": "b.py::test_x", "figure": "throughput", "note": NOTE}]
    hist = tmp_path / "hist"
    hist.mkdir()
    for i, v in enumerate(noisy(20, 0.004, 9)):
        rec = record(i, [("b.py::test_x", "throughput", v, "GB/s", "higher", "bandwidth", ())])
        if i >= 10:  # judged against the restarted history from night 10 on
            rec["restarts"] = restarts_of([r])
        (hist / f"n{i:02d}.json").write_text(dumps(rec))
    assert list(schema_validator("history").iter_errors(rec)) == []
    for _ in range(2):  # read, then through the cache it wrote
        s = read_cached(hist).series[("h200", "b.py::test_x", "throughput")]
        assert s.restarts == {i: NOTE for i in range(10, 20)}
    site = tmp_path / "site"
    assert main(["history", str(hist), "-o", str(site)]) == 0
    (page,) = pages(site).values()
    assert page.count(f"<title>{NOTE}</title>") == 1
    x = re.search(r'<path d="M([\d.]+) \d+V\d+" stroke="#756bb1"', page)
    assert x and 70 + 9 * 680 / 19 < float(x[1]) < 70 + 11 * 680 / 19  # at night 10


def test_an_imported_baselines_restart_is_marked_at_its_session(project, tmp_path):
    base = saved(project)
    path = project.path / "baselines" / "cpu.json"
    for entry in base["entries"].values():  # two saves within one second are a tie: a
        for m in entry["metrics"].values():  # day apart, the first is first
            m["history"][0]["date"] = "2026-01-01T00:00:00+00:00"
    items = base["entries"]["test_b.py::test_spin"]["metrics"]["throughput"]["history"]
    items[-1]["restart"] = {"date": items[-1]["date"], "reason": "accepted", "commit": None,
                            "who": "ci"}  # fmt: skip
    path.write_text(json.dumps(base))
    hist = tmp_path / "hist"
    assert len(import_files(hist, [path])[0]) == 2
    s = read_history(hist).series[("cpu", "test_b.py::test_spin", "throughput")]
    assert s.restarts == {1: f"history restarted on {items[-1]['date'][:10]}: accepted"}
    assert read_history(hist).series[("cpu", "test_b.py::test_other", "throughput")].restarts == {}


def test_a_sparkline_keeps_each_pixel_columns_lowest_and_highest():
    xs = [i / 10 for i in range(30)]  # 30 runs in 3 pixel columns
    ys = [5.0] * 30
    ys[4], ys[7], ys[25] = 9.0, 1.0, 0.5  # a spike and a dip in column 0, a dip in column 2
    pts = thinned(xs, ys)
    assert pts == [(0.4, 9.0), (0.7, 1.0), (1.0, 5.0), (2.0, 5.0), (2.5, 0.5)]


# ------------------------------------------------------------------ in a real browser


@pytest.mark.slow
def test_the_dashboard_as_a_person_sees_it(tmp_path):
    """Opened from files (as from a CI artifact), offline: no console error, every figure's
    small chart drawn, a figure opens its benchmark's page with a chart per profile, the
    step drawn; a screenshot of the index is kept (GPUPERF_SCREENSHOT: where)."""
    need_a_browser()
    from selenium.webdriver.common.by import By

    hist = tmp_path / "hist"
    hist.mkdir()
    write_dashboard(hist)
    site = tmp_path / "site"
    assert main(["history", str(hist), "-o", str(site), "--repo-url", COMPARE]) == 0
    driver = browser()
    try:
        driver.set_window_size(1000, 760)
        driver.get((site / "index.html").as_uri())
        sparks = driver.find_elements(By.CSS_SELECTOR, "a.fig svg")
        assert len(sparks) == 6
        for svg in sparks:
            assert svg.size["width"] >= 140 and svg.size["height"] >= 30
            assert svg.find_elements(By.CSS_SELECTOR, "polyline")
        links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "td.range a")]
        assert links[0] == f"https://github.com/o/r/compare/{commit(59)}...{commit(60)}"
        shot = Path(os.environ.get("GPUPERF_SCREENSHOT", tmp_path / "dashboard.png"))
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        driver.find_elements(By.CSS_SELECTOR, "a.fig")[0].click()
        assert "test_copy" in driver.current_url
        charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")
        assert len(charts) == 2
        for svg in charts:
            assert svg.size["width"] > 700 and svg.size["height"] > 200
            assert svg.find_elements(By.CSS_SELECTOR, "polyline") and svg.find_elements(By.CSS_SELECTOR, "polygon")
        assert driver.find_elements(By.XPATH, "//*[local-name()='rect']/*[local-name()='title'][starts-with(., 'step slower')]")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        driver.quit()

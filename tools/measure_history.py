"""Time reading a nightly history (docs/performance.md, "Reading the history").

Writes RUNS run files of FIGURES figures each (pytest_gpuperf/history/record.py's format,
the figures a real run records: median, interval, count, unit, class, flags and a verdict
with its rule) into DIR, then reads them back in a fresh process with
pytest_gpuperf.history.store.read_history and prints the wall time and the peak resident
memory of that process. The default is the issue's scale: 2,000 runs x 500 figures.

    python tools/measure_history.py [--runs 2000] [--figures 500] [--dir DIR] [--detect] [--cached]
        [--incremental]
    python tools/measure_history.py --runs 365 --figures 500 --site SITE

--detect also times `gpuperf history`'s change detection over every series read; --cached
the read through the cache (`gpuperf history`'s): the first, which writes it, and one after
a run is added; --incremental the detection through its cache (`gpuperf history`'s): a
first look, one with nothing new, after a new run of every figure and of one in ten. --site builds the dashboard (`gpuperf history DIR -o SITE`, one figure in
ten given a 5% step) in a fresh process, timed, then opens its index in headless Chromium
(selenium, /usr/bin/chromium): the time until the page is loaded and painted, three times."""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pytest_gpuperf.history.record import dumps

READ = """
import resource, sys, time
from pathlib import Path
from pytest_gpuperf.history.store import read_history
t = time.perf_counter()
h = read_history(Path(sys.argv[1]))
read_s = time.perf_counter() - t
points = sum(len(s.runs) for s in h.series.values())
detect_s = None
if sys.argv[2] == "1":
    from pytest_gpuperf.history.changes import find_changes
    t = time.perf_counter()
    found = find_changes(h)
    detect_s = time.perf_counter() - t
cached = ""
if sys.argv[3] == "1":  # through the cache: a first read (writes it), then one new run
    import json, shutil
    from pytest_gpuperf.history.cache import read_cached
    t = time.perf_counter()
    read_cached(Path(sys.argv[1]))
    cold = time.perf_counter() - t
    last = sorted(Path(sys.argv[1]).glob("*.json"))[-1]
    data = json.loads(last.read_text())
    data["session_id"], data["date"] = "new", "2099-01-01T00:00:00+00:00"
    (Path(sys.argv[1]) / "zz-new.json").write_text(json.dumps(data))
    t = time.perf_counter()
    h2 = read_cached(Path(sys.argv[1]))
    warm = time.perf_counter() - t
    cached = (f"through the cache: first read {cold:.2f} s, then with one new run "
              f"{warm:.2f} s ({len(h2.runs)} runs), ")
if sys.argv[4] == "1":  # detection through its cache: cold, nothing new, a new run of all
    import json  # the figures, a new run of one figure in ten
    from pytest_gpuperf.history.cache import read_cached
    from pytest_gpuperf.history.detectcache import find_changes_cached
    d = Path(sys.argv[1])
    last = json.loads(sorted(d.glob("*.json"))[-1].read_text())
    said = []
    for what, keep, day in (("first", None, None), ("again, nothing new", None, None),
                            ("a new run of every figure", len(last["figures"]["test"]), 2),
                            ("a new run of one figure in ten",
                             len(last["figures"]["test"]) // 10, 3)):
        if keep is not None:
            new = {**last, "session_id": f"new{day}", "date": f"2099-01-0{day}T00:00:00+00:00",
                   "figures": {c: v[:keep] for c, v in last["figures"].items()}}
            (d / f"zz-new{day}.json").write_text(json.dumps(new))
        hd = read_cached(d)
        t = time.perf_counter()
        _, memo = find_changes_cached(d, hd)
        said.append(f"{what} {time.perf_counter() - t:.2f} s ({memo.misses} examined, "
                    f"{memo.hits} from the cache)")
    cached += "detection through its cache: " + "; ".join(said) + ", "
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{len(h.runs)} runs, {len(h.series)} series, {points} points: read {read_s:.2f} s, "
      + (f"detection {detect_s:.2f} s, " if detect_s is not None else "")
      + cached + f"peak RSS {rss:.0f} MiB")
"""


SITE = """
import sys, time
from pathlib import Path
from pytest_gpuperf.history.cache import read_cached
from pytest_gpuperf.history.changes import find_changes
from pytest_gpuperf.history.site import write_site
t = time.perf_counter()
h = read_cached(Path(sys.argv[1]))
read_s = time.perf_counter() - t
t = time.perf_counter()
found = find_changes(h)
detect_s = time.perf_counter() - t
t = time.perf_counter()
pages = write_site(h, found, Path(sys.argv[2]), Path(sys.argv[1]),
                   "https://github.com/o/r/compare/{last_good}...{first_bad}")
site_s = time.perf_counter() - t
print(f"read {read_s:.2f} s, detection {detect_s:.2f} s ({len(found.changes)} changes), "
      f"site {site_s:.2f} s ({pages} pages)")
"""


def open_in_chromium(page: Path, times: int = 3) -> list[float]:
    """Seconds from asking headless Chromium for `page` until it is loaded and painted
    (two animation frames after the load event), each in a fresh tab of one browser."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    out = []
    try:
        for _ in range(times):
            driver.get("about:blank")
            t = time.perf_counter()
            driver.get(page.as_uri())  # returns after the load event
            driver.execute_async_script(
                "const done = arguments[0];"
                "requestAnimationFrame(() => requestAnimationFrame(() => done(1)));"
            )
            out.append(time.perf_counter() - t)
    finally:
        driver.quit()
    return out


def generate(directory: Path, runs: int, figures: int, seed: int = 1, steps: bool = False) -> int:
    """Write the run files; the bytes written. steps: one figure in ten moves 5% slower
    from a night of its own on."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)
    total = 0
    levels = [rng.uniform(10, 5000) for _ in range(figures)]
    at = {j: rng.randrange(runs // 4, runs) for j in range(0, figures, 10)} if steps else {}
    for i in range(runs):
        commit = f"{rng.getrandbits(160):040x}"
        medians = [level * (1 + rng.gauss(0, 0.01)) * (0.95 if i >= at.get(j, runs) else 1)
                   for j, level in enumerate(levels)]  # fmt: skip
        figs = {"test": [f"benchmarks/test_m{j // 4}.py::test_w[{j}]" for j in range(figures)],
                "metric": [None] * figures, "figure": ["throughput"] * figures, "median": medians,
                "ci_low": [m * 0.995 for m in medians], "ci_high": [m * 1.005 for m in medians],
                "n": [60] * figures, "unit": ["GB/s"] * figures, "direction": ["higher"] * figures,
                "noise_class": ["bandwidth"] * figures, "flags": [[] for _ in range(figures)],
                "verdict": ["unchanged"] * figures,
                "change": [rng.gauss(0, 0.01) for _ in range(figures)],
                "tolerance": [0.03] * figures, "rule": ["ladder"] * figures,
                "stage": ["stage 1"] * figures}  # fmt: skip
        date = (start + timedelta(days=i)).isoformat(timespec="seconds")
        record = {"schema": "pytest-gpuperf/history-run", "version": 1, "date": date,
                  "commit": commit, "dirty": False, "session_id": f"s{i:06d}", "profile": "h200",
                  "saved": False, "source": "run", "origin": None,
                  "card": {"name": "NVIDIA H200", "uuid": "GPU-0", "driver": "580.159.04",
                           "cuda": "13.0", "torch": "2.11.0", "host": "node1"},
                  "figures": figs}  # fmt: skip
        text = dumps(record)
        name = f"{date.replace('-', '').replace(':', '')[:15]}-{commit[:12]}-s{i:06d}.json"
        (directory / name).write_text(text)
        total += len(text)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--figures", type=int, default=500)
    ap.add_argument(
        "--dir", type=Path, default=None, help="keep the history here (default: a temporary folder)"
    )
    ap.add_argument("--detect", action="store_true", help="time the change detection too")
    ap.add_argument("--cached", action="store_true",
                    help="also read through the cache (history/cache.py): a first read, then "
                    "one with a new run")  # fmt: skip
    ap.add_argument("--incremental", action="store_true",
                    help="also time the detection through its cache (history/detectcache.py): "
                    "a first look, one with nothing new, then after a new run of every figure "
                    "and of one figure in ten")  # fmt: skip
    ap.add_argument("--site", type=Path, default=None,
                    help="build the dashboard here and time opening it in Chromium")  # fmt: skip
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        size = generate(directory, args.runs, args.figures, steps=args.site is not None)
        print(f"wrote {args.runs} runs x {args.figures} figures ({size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t:.1f} s")  # fmt: skip
        if args.site is not None:
            argv = [sys.executable, "-c", SITE, str(directory), str(args.site)]
            out = subprocess.run(argv, capture_output=True, text=True, check=False)
            print(out.stdout.strip() or out.stderr.strip())
            index = args.site / "index.html"
            pages = sorted((args.site / "b").glob("*.html"))
            print(f"index {index.stat().st_size / 2**20:.2f} MiB, a benchmark's page "
                  f"{pages[0].stat().st_size / 2**10:.0f} KiB")  # fmt: skip
            for page in (index, pages[0]):
                took = ", ".join(f"{s:.2f}" for s in open_in_chromium(page))
                print(f"{page.name}: opened (loaded and painted) in {took} s")
            return out.returncode
        argv = [sys.executable, "-c", READ, str(directory), str(int(args.detect)),
                str(int(args.cached)), str(int(args.incremental))]  # fmt: skip
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
        print(out.stdout.strip() or out.stderr.strip())
        return out.returncode


if __name__ == "__main__":
    sys.exit(main())

"""The history's columnar cache (history/cache.py): a read through it is the read of every
file (runs, series, left-out points, order), reads only the files added since, and falls
back to reading everything where a file it read was removed or changed or the cache itself
cannot be read."""

import os

import pytest

from pytest_gpuperf.history import store
from pytest_gpuperf.history.cache import CACHE, read_cached
from pytest_gpuperf.history.record import dumps
from pytest_gpuperf.history.store import read_history

from .historydata import noisy, record, write_series


def same(a, b):
    assert [vars(r) for r in a.runs] == [vars(r) for r in b.runs]
    assert a.series.keys() == b.series.keys()
    for key, s in a.series.items():
        t = b.series[key]
        for name in ("runs", "median", "status"):
            assert list(getattr(s, name)) == list(getattr(t, name)), (key, name)
        assert (s.left, s.tolerance, s.unit, s.higher, s.noise_class, s.metric) == (
            t.left, t.tolerance, t.unit, t.higher, t.noise_class, t.metric)  # fmt: skip
    assert (a.duplicates, a.seen) == (b.duplicates, b.seen)


@pytest.fixture
def reads(monkeypatch):
    """The names of the files the store parses."""
    seen = []
    real = store._load

    def spy(path):
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(store, "_load", spy)
    return seen


def test_a_cached_read_is_the_full_read_and_reads_only_new_files(tmp_path, reads):
    write_series(tmp_path, noisy(12, 0.005, 3), flags={4: ("gpu-shared",)},
                 verdicts={5: "regressed"})  # fmt: skip
    first = read_cached(tmp_path)
    assert len(reads) == 12 and (tmp_path / CACHE).is_file()
    same(first, read_history(tmp_path))
    reads.clear()
    same(read_cached(tmp_path), first)
    assert reads == []  # nothing new: the cache alone
    late = record(20, [("b.py::test_x", "throughput", 990.0, "GB/s", "higher", "bandwidth", ())])
    early = record(-1, [("b.py::test_y", "latency", 2.0, "s", "lower", "model", ())])
    (tmp_path / "late.json").write_text(dumps(late))
    (tmp_path / "early.json").write_text(dumps(early))  # older than every run: read first
    reads.clear()
    cached = read_cached(tmp_path)
    assert sorted(reads) == ["early.json", "late.json"]
    full = read_history(tmp_path)
    same(cached, full)
    assert cached.runs[0].name == "early.json" and cached.runs[-1].name == "late.json"


def test_a_changed_or_removed_file_or_a_broken_cache_reads_everything(tmp_path, reads):
    write_series(tmp_path, noisy(8, 0.005, 4))
    read_cached(tmp_path)
    path = tmp_path / "night0003.json"
    path.write_text(path.read_text().replace('"saved": false', '"saved": true'))
    os.utime(path, ns=(1, 1))  # a changed file: its size or time differs
    reads.clear()
    same(read_cached(tmp_path), read_history(tmp_path))
    assert len(reads) == 8 + 8  # everything again (then the full read to compare)
    (tmp_path / "night0007.json").unlink()
    reads.clear()
    assert len(read_cached(tmp_path).runs) == 7 and len(reads) == 7
    (tmp_path / CACHE).write_bytes(b"not a cache")
    reads.clear()
    same(read_cached(tmp_path), read_history(tmp_path))
    assert len(reads) == 14


def test_detection_reexamines_only_the_series_a_new_run_changed(tmp_path, monkeypatch):
    """history/detectcache.py: the changes of a series the new run did not measure are the
    cache's; the result is always what find_changes finds on the whole history."""
    from pytest_gpuperf.history import changes as changes_module
    from pytest_gpuperf.history import detectcache
    from pytest_gpuperf.history.changes import find_changes

    from .historydata import write_dashboard

    write_dashboard(tmp_path, nights=40)  # two profiles, 3 figures each, h200's copy steps at 30
    examined = []
    real = changes_module.series_changes

    def spy(s, runs):
        examined.append((s.profile, s.test))
        return real(s, runs)

    monkeypatch.setattr(changes_module, "series_changes", spy)

    def look():
        examined.clear()
        hist = read_cached(tmp_path)
        found, memo = detectcache.find_changes_cached(tmp_path, hist)
        assert found == find_changes(hist)  # the same as a full look (which adds to examined)
        return memo.hits, memo.misses

    assert look() == (0, 6) and (tmp_path / detectcache.DETECT_CACHE).exists()
    assert look() == (6, 0)
    rec = record(40, [("benchmarks/test_dtype.py::test_copy[bf16]", "throughput", 3800.0, "GB/s",
                       "higher", "bandwidth", ())], profile="h200")  # fmt: skip
    (tmp_path / "h200-night0040.json").write_text(dumps(rec))
    assert look() == (5, 1)  # only h200's copy was measured again
    assert examined[0] == ("h200", "benchmarks/test_dtype.py::test_copy[bf16]")
    older = record(-1, [("benchmarks/test_dtype.py::test_copy[bf16]", "throughput", 3800.0,
                         "GB/s", "higher", "bandwidth", ())], profile="h100")  # fmt: skip
    (tmp_path / "h100-old.json").write_text(dumps(older))  # run indexes move: all again
    assert look() == (0, 6)
    (tmp_path / detectcache.DETECT_CACHE).write_text("{not json")
    assert look() == (0, 6)
    assert look() == (6, 0)
    monkeypatch.setattr(detectcache, "DETECT_VERSION", 2)  # other code: all again
    assert look() == (0, 6)
    (tmp_path / detectcache.DETECT_CACHE).unlink()
    from pytest_gpuperf.cli.main import main as gpuperf_main

    assert gpuperf_main(["history", str(tmp_path)]) == 0  # gpuperf history keeps the cache
    assert look() == (6, 0)

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

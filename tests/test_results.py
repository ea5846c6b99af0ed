"""One result type for measured and recorded figures (results.py): printing a throughput."""


def test_progress_shows_a_range_not_a_ci_for_a_few_samples():
    from pytest_gpuperf.core.results import Throughput

    t = Throughput("tokens/s", 2022.0, 1857.0, 2434.0)
    assert t.format(False, 3) == "2,022 tokens/s (range of 3 samples 1,857-2,434)"
    assert t.format(False, 1) == "2,022 tokens/s (1 sample)"
    assert "95% CI" in t.format(True, 30)

"""Table rows and cells shared by the renderers (outputs/text.py): escaping, intervals."""

import textwrap
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.verdict import amend, from_json
from pytest_gpuperf.outputs.text import markdown_table, md_cell, plain, table

from .gateproject import FAST


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


def test_intervals_say_when_there_is_none_or_it_is_noise():
    from pytest_gpuperf.core.results import Result, Throughput
    from pytest_gpuperf.core.stats import summarize
    from pytest_gpuperf.outputs.text import interval_text

    r = Result(nodeid="t", metric=None, unit="tokens", work_per_call=1)
    r.time = summarize([0.01], 0.95)
    r.throughput = Throughput("tokens/s", 100.0, 100.0, 100.0)
    assert interval_text(r) == "none (n=1)"  # not "±0.00% (range)"
    r.time = summarize([0.01 * (1 + i % 7) for i in range(30)], 0.95)
    r.throughput = Throughput("tokens/s", 100.0, 10.0, 678.0)
    assert interval_text(r) == "unusable noise"  # not "±578%"
    r.throughput = Throughput("tokens/s", 100.0, 99.0, 101.0)
    assert interval_text(r) == "±1.00%"


def test_a_change_without_an_interval_detects_nothing_it_can_name():
    """One saved session: `+2212.08%` with no interval beside `3.0% (3.0%)` claimed a
    detection limit the verdict did not have."""
    from pytest_gpuperf.core.results import Result, Throughput
    from pytest_gpuperf.outputs.text import verdict_rows

    r = Result("t.py::a", None, "tokens", 1.0)
    r.outcome, r.throughput = "ok", Throughput("tokens/s", 10.0, 9.9, 10.1)
    r.time = types.SimpleNamespace(n=10)  # type: ignore[assignment]
    r.verdicts = {"throughput": from_json({
        "status": "inconclusive", "change": 22.1208, "uncertainty": None, "tolerance": 0.03,
        "mde": 0.03, "reason": "one session"})}  # fmt: skip
    (row,) = verdict_rows([r], [])
    assert row[4] == "+2212.08% faster" and row[5] == "- (3.0%)"
    r.verdicts["throughput"] = amend(r.verdicts["throughput"], None, uncertainty=0.05)
    (row,) = verdict_rows([r], [])
    assert row[5] == "3.0% (3.0%)"


@pytest.mark.parametrize(
    ("name", "direction", "change", "word"),
    [
        ("throughput", "higher", 2.75, "faster"),  # +275% throughput: faster
        ("throughput", "higher", -0.091, "slower"),
        ("latency", "lower", 31.4, "slower"),  # +3140% latency: slower, never "faster"
        ("latency", "lower", -0.02, "faster"),
        ("latency_per_clock", "lower", 0.05, "slower"),
        ("throughput_kernels", "higher", -0.05, "slower"),
        ("peak_allocated", "lower", 0.10, "worse"),  # memory: better or worse
        ("peak_allocated", "lower", -0.10, "better"),
        ("value", "higher", 0.10, "better"),  # a recorded figure by its own direction
        ("value", "lower", 0.10, "worse"),
    ],
)
def test_a_change_says_in_a_word_what_it_means(name, direction, change, word):
    """A latency and a throughput shared a column whose signs meant opposite things
    (+3140% worse, +275% better): the sign stays the figure's own, the word says which."""
    from pytest_gpuperf.outputs.text import change_text

    worse = -change if direction == "higher" else change
    v = from_json({"status": "inconclusive", "change": change, "worse": worse, "uncertainty": 0.01})
    # a change of several times: its interval printed by its bounds (interval_text)
    unc = {2.75: "[+271.27%, +278.77%]", 31.4: "[+3107.76%, +3172.56%]"}.get(change, "±1.00%")
    assert change_text(name, v) == f"{change * 100:+.2f}% {unc} {word}"
    assert change_text(name, amend(v, None, worse=None), direction) == f"{change * 100:+.2f}% {unc} {word}"


@given(st.floats(min_value=-0.9, max_value=5.0), st.floats(min_value=0.0, max_value=3.0))
def test_a_printed_interval_is_the_verdicts_within_what_it_rounds_to(change, half):
    """interval_text prints change ± half only where those bounds are the log interval's
    within a quarter of half (and 0.5 points); else the bounds, which are exactly it."""
    import math

    from pytest_gpuperf.judging.verdict import interval_text

    d = math.log1p(change)
    lo, hi = math.expm1(d - half), math.expm1(d + half)
    text = interval_text(change, half)
    if text.startswith(" ["):
        got = [float(x.strip(" []%")) / 100 for x in text.split(",")]
        for g, want in zip(got, (lo, hi), strict=True):  # three digits past 10,000% (_bound)
            assert g == pytest.approx(want, abs=6e-5) if abs(want) < 99.99 else \
                g == pytest.approx(want, rel=5e-3)
    else:
        assert text == f" ±{half * 100:.2f}%"
        slack = max(0.25 * half, 0.005) + 1e-12
        assert abs(lo - (change - half)) <= slack and abs(hi - (change + half)) <= slack
    assert lo - 1e-12 <= change <= hi + 1e-12  # the change lies in its interval


def test_a_regressed_verdict_prints_an_interval_that_excludes_no_change():
    """The break-it pass's `gpuperf ab` row: REGRESSED, -32.67% ±35.17% (log half-width)."""
    import math

    from pytest_gpuperf.judging.verdict import interval_text, worse_text

    change, half = -0.3267, 0.3517
    assert interval_text(change, half) == " [-52.63%, -4.29%]"
    assert math.log1p(change) + half < 0  # the upper bound is still a slowdown
    assert worse_text(-change, half, change) == "32.67% [4.29%, 52.63%] slower"
    assert worse_text(0.02, 0.005, -0.02) == "2.00% ±0.50% slower"  # symmetric enough


def test_a_change_that_rounds_to_zero_or_is_unknown_has_no_word():
    from pytest_gpuperf.outputs.text import change_text

    def v(**d):  # change_text reads no status
        return from_json({"status": "unchanged", **d})

    zero = {"change": -0.0, "worse": 0.0, "uncertainty": 0.0}
    assert change_text("peak_allocated", v(**zero)) == "-0.00% ±0.00%"
    assert change_text("latency", v(**{**zero, "change": 0.00004, "worse": 0.00004})) == "+0.00% ±0.00%"
    assert change_text("latency", v(change=None)) == "-"
    assert change_text("latency", v(change=0.1, worse=None, uncertainty=None)) == "+10.00%"

"""Numbers in the outputs (outputs/text.py, terminal, markdown): with their units, never raw."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.results import format_figure, format_value
from pytest_gpuperf.judging.judge import judge_run
from pytest_gpuperf.outputs.markdown import markdown
from pytest_gpuperf.outputs.terminal import terminal_lines

from . import reportdata as rd

RAW = re.compile(r"\d\.\d{4,}|\de[+-]\d")  # five significant digits or an exponent


def _summary(results):
    from pytest_gpuperf.outputs import RunSummary

    return RunSummary(
        device=rd.device(), describe="NVIDIA H200, test run", profile="h200",
        baseline_path=None, baseline_found=False, baseline_mode="off", baseline_note=None,
        comparing=False, warn_only=False, emulated=None, results=results, missing=[],
    )  # fmt: skip


def test_recorded_bytes_and_fractions_print_with_units_in_the_terminal():
    s = _summary(
        [
            rd.recorded("t.py::test_a", "peak", 8663810.0, "bytes", {}),
            rd.recorded("t.py::test_b", "ratio", 3.10044, "fraction", {}),
            rd.recorded("t.py::test_c", "max_batch", 31.0, "samples", {}),
        ]
    )
    text = "\n".join(terminal_lines(s, verbosity=1))
    assert "t.py::test_a::peak: 8.3 MiB" in text
    assert "t.py::test_b::ratio: 3.10 fraction" in text
    assert "t.py::test_c::max_batch: 31 samples" in text
    assert not RAW.search(text), text


def test_recorded_figures_in_markdown_and_the_headline():
    r = rd.recorded("t.py::test_a", "peak", 8663810.0, "bytes", {})
    r.device = "H200"
    assert "8.3 MiB" in markdown(_summary([r]))
    assert r.headline() == "8.3 MiB on H200"
    frac = rd.recorded("t.py::test_b", "ratio", 3.10044, "fraction", {})
    assert frac.headline().startswith("3.10 fraction")


def test_the_gates_reason_for_a_zero_baseline_names_the_figure_with_its_unit():
    entry = {
        "environment": {},
        "metrics": {
            "value": {"unit": "bytes", "direction": "higher", "median": 0.0, "gate": True,
                      "history": [{"median": 0.0, "session": "s1"}]},
        },
    }  # fmt: skip
    r = rd.recorded("t.py::test_a", None, 8663810.0, "bytes", {})
    judge_run([r], {r.key: entry}, {})
    reason = r.verdicts["value"].reason
    assert "now 8.3 MiB" in reason and not RAW.search(reason), reason


@given(
    st.floats(min_value=1e-4, max_value=1e12, allow_nan=False),
    st.sampled_from(["bytes", "fraction", "tokens/s", "ms"]),
)
def test_no_figure_prints_raw(value, unit):
    for text in (format_value(value, unit), format_figure(value, unit)):
        assert "e+" not in text and "e-" not in text, text
        assert (
            text.endswith("iB") or text.endswith(" B") if unit == "bytes" else text.endswith(unit)
        )

"""The project's gate simulator (tools/gate_sim_project.py, tools/gatesim/) drives the
project's own judge: a tiny simulation checks what load cannot change. Every cell asked is
there; with no noise an A/A run raises no alarm and a 5% slowdown is caught, by its figure
and as a whole class; on the fitted noise a 50% slowdown is caught in every run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "gate_sim_project", ROOT / "tools" / "gate_sim_project.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gate_sim_project", mod)
    spec.loader.exec_module(mod)
    return mod


def test_zero_noise_cells_no_alarm_and_every_slowdown_caught():
    cells = _tool().main(["--runs", "1", "--det-runs", "1", "--ks", "3,5,10", "--zero-noise"])
    assert [k for k, *_ in cells] == [3, 5, 10]
    for _, aa, det, cls in cells:
        assert aa["runs"] == 1 and aa["run_fa"] == 0 and not aa["figs"]
        assert aa["decided"] == aa["speed"] > 0  # nothing in doubt without noise
        assert det["tries"] > 0 and det["caught"] == det["tries"]
        assert cls["class_tries"] > 0 and cls["class_all"] == cls["runs"] == 1


def test_a_huge_regression_is_caught_on_the_fitted_noise():
    [(k, aa, det, cls)] = _tool().main(["--runs", "1", "--det-runs", "1", "--ks", "3",
                                        "--slow", "0.5"])  # fmt: skip
    assert k == 3 and aa["runs"] == 1
    assert det["tries"] > 0 and det["caught"] == det["tries"]
    assert cls["class_tries"] > 0 and cls["class_caught"] == cls["class_tries"]


def test_bad_options_say_what_is_wrong(capsys):
    import pytest

    with pytest.raises(SystemExit):
        _tool().parse(["--slow", "5"])
    assert "--slow 5.0: a fraction between 0 and 1" in capsys.readouterr().err


def test_the_fit_reads_process_effects_and_the_same_card_table():
    sys.path.insert(0, str(ROOT / "tools"))
    from gatesim.fit_rounds import anova, same_card

    # two process pairs 10% apart, rounds within 0.1% of their pair's: per process
    d = [0.0, 0.001, -0.001, 0.1, 0.101, 0.099]
    fit = anova(d, [0, 0, 0, 1, 1, 1])
    assert fit is not None and fit["p"] < 0.01 and 0.05 < fit["process"] < 0.1
    assert fit["within"] < 0.002 < fit["spread"]
    assert anova(d, [0] * 6) is None  # one pair: no screen
    text = "== a\n  x   1 figures  rho 0.10\n== b\n  model   21 figures  sd 0.4%  rho 0.38\n"
    assert same_card(text) == {"model": 0.38}

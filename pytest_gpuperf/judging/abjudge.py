"""The A/B judge: the rounds of `gpuperf ab` (base and head measured interleaved on one
GPU) -> one paired verdict per metric (verdict.paired), under the run's false-alarm
budget. Pure: no git, no processes, no files; `pytest_gpuperf.cli.ab` runs the rounds and
writes the report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.settings import MIN_FALSE_ALARM
from ..core.verdict import Rule, amend, make, to_json
from .verdict import INCOMPARABLE, INCONCLUSIVE, NEW, paired, per_metric_confidence

SIDES = ("base", "head")
Figure = tuple[float, str, bool]  # a metric's median, unit, and whether higher is better
Round = dict[tuple[str, str], Figure]  # (benchmark key, metric) -> figure, one pytest run


class ABError(Exception):
    """Bad input or a failed run: exit 2 with this message."""


AB = Rule.AB


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _float(x: float) -> float:
    try:
        return float(x)
    except OverflowError:  # an integer beyond any float: as good as infinite
        return math.inf if x > 0 else -math.inf


def _checked_rounds(figures: Any) -> dict[str, list[Round]]:
    """The rounds of both sides, or ABError saying what is malformed."""
    if not isinstance(figures, Mapping) or any(side not in figures for side in SIDES):
        raise ABError("the A/B figures must give the rounds of the base and of the head")
    out: dict[str, list[Round]] = {}
    for side in SIDES:
        rounds = figures[side]
        if not isinstance(rounds, Sequence) or isinstance(rounds, str):
            raise ABError(f"the {side}'s rounds must be a list, got {type(rounds).__name__}")
        out[side] = []
        for i, fig in enumerate(rounds, 1):
            if not isinstance(fig, Mapping):
                raise ABError(f"{side} round {i}: figures must be a mapping")
            for k, v in fig.items():
                pair = isinstance(k, tuple) and len(k) == 2
                if not (pair and all(isinstance(x, str) for x in k)):
                    raise ABError(f"{side} round {i}: {k!r} is not a (benchmark, metric) pair")
                if not (isinstance(v, tuple | list) and len(v) == 3 and _number(v[0])
                        and isinstance(v[1], str) and isinstance(v[2], bool)):  # fmt: skip
                    raise ABError(
                        f"{side} round {i}: {k[0]} {k[1]}: {v!r} is not (median, unit, "
                        "higher is better)"
                    )
            out[side].append({k: (_float(v[0]), v[1], v[2]) for k, v in fig.items()})
    if len(out["base"]) != len(out["head"]):
        raise ABError(
            f"paired rounds differ in number: {len(out['base'])} base, {len(out['head'])} head"
        )
    return out


def _what_differs(base: list[Figure], head: list[Figure]) -> str | None:
    """Why base and head figures of one metric cannot be compared, or None: another unit or
    direction (between the sides, or between the rounds of one side). Never converted."""
    for what, i, show in (
        ("unit", 1, repr),
        ("direction", 2, lambda h: "higher is better" if h else "lower is better"),
    ):
        b = sorted({f[i] for f in base})
        h = sorted({f[i] for f in head})
        if len(b) == 1 and len(h) == 1 and b != h:
            return (
                f"{what} differs: base {show(b[0])}, head {show(h[0])}; figures in another "
                f"{what} are never converted"
            )
        for side, seen in (("base", b), ("head", h)):
            if len(seen) > 1:
                return f"{what} differs between the {side}'s rounds: " + ", ".join(
                    show(x) for x in seen
                )
    return None


def judge_rounds(figures: Any, tolerance: Any, false_alarm: Any) -> dict[str, Any]:
    """The verdict of each metric from the base's and the head's rounds: pure, no I/O.

    `figures` is {"base": [round, ...], "head": [round, ...]}, round i of each side a
    mapping (benchmark key, metric) -> (median, unit, higher is better). Returns the
    confidence, the verdict dicts per key and metric, the figures judged and the keys
    measured at the base only. A metric whose unit or direction differs between base and
    head (or between the rounds of one side) is incomparable, never converted; one missing
    from some rounds is inconclusive; a value that is not finite and positive is
    inconclusive (verdict.paired). Malformed input raises ABError, one line."""
    if not (_number(tolerance) and 0 < tolerance < 1):
        raise ABError(f"--tolerance must be between 0 and 1, got {tolerance!r}")
    if not (_number(false_alarm) and MIN_FALSE_ALARM <= false_alarm < 1):
        raise ABError(
            f"--false-alarm must be between {MIN_FALSE_ALARM:g} and 1, got {false_alarm!r}"
        )
    sides = _checked_rounds(figures)
    n = len(sides["base"])
    seen = {side: set().union(*sides[side]) for side in SIDES}
    counts = {side: {k: sum(k in f for f in sides[side]) for k in seen[side]} for side in SIDES}
    verdicts: dict[str, dict[str, Any]] = {}
    judged: dict[tuple[str, str], tuple[list[Figure], list[Figure]]] = {}
    for k in sorted(seen["base"] & seen["head"]):
        nb, nh = counts["base"][k], counts["head"][k]
        base = [f[k] for f in sides["base"] if k in f]
        head = [f[k] for f in sides["head"] if k in f]
        if why := _what_differs(base, head):
            v, advice = make(INCOMPARABLE, None, None, None, tolerance, why, rule=AB), None
        elif nb < n or nh < n:
            why = f"measured in {nb} of {n} base and {nh} of {n} head rounds"
            advice = "see why the benchmark gave no figure in the other rounds"
            v = make(INCONCLUSIVE, None, None, None, tolerance, why, rule=AB)
        else:
            judged[k] = base, head
            continue
        verdicts.setdefault(k[0], {})[k[1]] = to_json(amend(v, None, advice=advice))
    confidence = per_metric_confidence(false_alarm, len(judged))
    values: dict[str, dict[str, Any]] = {}
    for (key, metric), (base, head) in judged.items():
        a = [x[0] for x in base]
        b = [x[0] for x in head]
        _, unit, higher = head[-1]
        v = paired(a, b, higher_is_better=higher, tolerance=tolerance, confidence=confidence)
        if v.status == INCONCLUSIVE:
            v = amend(v, None, advice=_more_rounds(a, b, confidence, tolerance, higher))
        verdicts.setdefault(key, {})[metric] = to_json(v)
        values.setdefault(key, {})[metric] = {"unit": unit, "base": a, "head": b}
    for key, metric in sorted(seen["head"] - seen["base"]):
        new = make(NEW, None, None, None, tolerance, "not measured at the base", rule=AB)
        verdicts.setdefault(key, {})[metric] = to_json(new)
    return {
        "confidence": confidence,
        "verdicts": verdicts,
        "values": values,
        "missing": sorted({k for k, _ in seen["base"] - seen["head"]}),
    }


def _more_rounds(base: list[float], head: list[float], confidence: float, tolerance: float,
                 higher: bool = True) -> str:  # fmt: skip
    """The advice for an inconclusive A/B figure: the paired stage's for the same rounds
    (pairedrounds.settle_advice, asked for with --rounds), so one figure gets one advice."""
    from .pairedrounds import AB_ROUNDS, PairedFigure, settle_advice

    fig = PairedFigure("", "", "", higher, tuple(base), tuple(head), (0,) * len(base))
    return (settle_advice(fig, tolerance, confidence, asked=AB_ROUNDS)
            or "run more rounds (--rounds): fewer than 2 rounds gave a figure")  # fmt: skip

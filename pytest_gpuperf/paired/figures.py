"""The paired stage's figures from its rounds (stage.py measures and judges them): each
round's figures of both builds, each re-measured figure's rounds, and a figure's rounds over
both looks of the stage (the asked rounds, then more rounds of the tests the first look left
undecided: `second_look`, `undecided_tests`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.results import Result
    from ..judging.pairedrounds import PairedFigure
    from ..judging.verdict import Verdict

SIDES = ("base", "head")


def round_figures(measured: Any) -> dict[str, list[dict[tuple[str, str], tuple[float, float]]]]:
    """Each side's figures per round: (result key, metric) -> (median, the relative
    half-width of the round's own interval; 0 where it recorded none)."""
    from ..core.figures import metrics_of
    from ..core.results import Result as R

    def figures(side: str, i: int) -> dict[tuple[str, str], tuple[float, float]]:
        out = {}
        for d in measured.rounds[side][i]:
            r = R.from_dict(d)
            for name, m in metrics_of(r).items():
                med, lo, hi = float(m["median"]), m.get("ci_low"), m.get("ci_high")
                half = 0.0
                if isinstance(lo, int | float) and isinstance(hi, int | float) and med != 0:
                    half = (hi - lo) / 2 / abs(med)
                out[(r.key, name)] = (med, half)
        return out

    return {s: [figures(s, i) for i in range(len(measured.pair))] for s in SIDES}


def _in_every_round(per: dict[str, list[dict[tuple[str, str], Any]]], k: tuple[str, str],
                    n: int) -> bool:  # fmt: skip
    return all(k in per[s][i] for s in SIDES for i in range(n))


def paired_figures(todo: Sequence[tuple[Result, str, str]], measured: Any) -> list[PairedFigure]:
    """The stage's figures: each re-measured one, and beside a compute-bound throughput its
    per-clock twin where every round has it (judged together, as stage 1 judges them); a
    figure missing from a round has no rounds (undecided, never judged)."""
    from ..core.figures import CLOCK, TIMED, per_clock_name
    from ..judging.pairedrounds import PairedFigure

    per, n = round_figures(measured), len(measured.pair)
    out = []
    for r, metric, cls in todo:
        names = [(metric, cls)] + ([(per_clock_name(metric), CLOCK)] if metric in TIMED else [])
        for name, c in names:
            k = (r.key, name)
            if _in_every_round(per, k, n):
                out.append(PairedFigure(r.key, name, c, r.higher_is_better,
                                        tuple(per["base"][i][k][0] for i in range(n)),
                                        tuple(per["head"][i][k][0] for i in range(n)),
                                        tuple(measured.pair),
                                        tuple(per["base"][i][k][1] for i in range(n))))  # fmt: skip
            elif name == metric:
                out.append(PairedFigure(r.key, name, c, r.higher_is_better, (), (), ()))
    return out


def extended(figures: Sequence[PairedFigure], measured: Any) -> list[PairedFigure]:
    """Each of `figures` with the rounds of `measured` (the second look's, of their tests
    alone) after its own, where every one of those rounds has it; a figure missing from one
    of them is left out (its first look's verdict stands)."""
    per, n = round_figures(measured), len(measured.pair)
    out = []
    for f in figures:
        k = (f.key, f.metric)
        if not n or not _in_every_round(per, k, n):
            continue
        out.append(replace(
            f,
            base=f.base + tuple(per["base"][i][k][0] for i in range(n)),
            head=f.head + tuple(per["head"][i][k][0] for i in range(n)),
            pair=f.pair + tuple(measured.pair),
            # 0: a round that recorded no interval (settle_advice leaves those out)
            within=(f.within or (0.0,) * len(f.base)) + tuple(per["base"][i][k][1]
                                                             for i in range(n)),
        ))  # fmt: skip
    return out


def written(r: Result, metric: str, verdicts: Mapping[tuple[str, str], Verdict]) -> Verdict:
    """The verdict the stage writes for the figure `metric` of `r`: a compute-bound
    throughput's decided by its time with its per-clock twin's veto (judge.clocked: a
    time changed where the cycles decidedly are not is power-state); else the figure's
    own."""
    from ..core.figures import TIMED, per_clock_name
    from .judge import clocked

    v = verdicts[(r.key, metric)]
    twin = verdicts.get((r.key, per_clock_name(metric))) if metric in TIMED else None
    if twin is not None and r.bound == "compute":
        v = clocked(v, twin)
    return v


def second_look(todo: Sequence[tuple[Result, str, str]], figures: Sequence[PairedFigure],
                verdicts: Mapping[tuple[str, str], Verdict]) -> list[PairedFigure]:  # fmt: skip
    """The figures the second look takes: of each item of `todo` whose written verdict the
    first look left inconclusive and whose own figure has usable rounds, that figure and
    its per-clock twin (judged together again). An item the first look decided, through its
    twin too, is not measured again."""
    from ..core.figures import per_clock_name

    by_key = {(f.key, f.metric): f for f in figures if f.usable()}
    out = []
    for r, metric, _ in todo:
        if (r.key, metric) in by_key and written(r, metric, verdicts).status == "inconclusive":
            out += [by_key[k] for k in ((r.key, metric), (r.key, per_clock_name(metric)))
                    if k in by_key]  # fmt: skip
    return out


def first_look(todo: Sequence[tuple[Result, str, str]], measured: Any, false_alarm: float,
               ) -> tuple[dict[str, float], list[PairedFigure],
                          dict[tuple[str, str], Verdict], float]:  # fmt: skip
    """The first look: each key's tolerance, the stage's figures from the asked rounds
    (`paired_figures`), their verdicts at `false_alarm` (the look's share) over all of them,
    and the confidence each was judged at. stage.py `_apply` judges with it, and
    `undecided_tests` picks the second look's tests with it, so the two agree."""
    from ..judging.judge import tolerances
    from .judge import judge_paired

    tol = {r.key: tolerances(r, None, None)[0] for r, _, _ in todo}
    figures = paired_figures(todo, measured)
    verdicts, confidence = judge_paired(figures, tol, false_alarm)
    return tol, figures, verdicts, confidence


def undecided_tests(todo: Sequence[tuple[Result, str, str]], measured: Any,
                    false_alarm: float) -> list[str]:  # fmt: skip
    """The tests of the second look's figures (`second_look`) after the first look at
    `false_alarm` (its share)."""
    _, figures, verdicts, _ = first_look(todo, measured, false_alarm)
    keys = {f.key for f in second_look(todo, figures, verdicts)}
    return sorted({r.nodeid for r, _, _ in todo if r.key in keys})

"""What the paired stage's first look can afford, priced before any round was measured
(run/paired.py leaves the rest to the first stage, saying so): each test's rounds at its own
time in the first stage. On the H200 the stage started rounds of two QLoRA batch sweeps (87
s each in the first stage) in a budget of 200 s and spent all of it before the head's first
round answered; a test whose rounds cannot fit is now left out up front."""

from __future__ import annotations

from typing import Any

from .rounds import MIN_PER_PAIR, STOP_S

START_GUESS_S = 10.0  # a process pair's start before one was measured (H200: 1.7-7.9 s)


def first_need(cost_s: float, pairs: int) -> float:
    """The seconds a first look takes at the least, priced before any round was measured:
    `pairs` process pairs, each its start (START_GUESS_S), MIN_PER_PAIR rounds of both
    builds at `cost_s` a side (the tests' own time in the first stage: a round builds their
    models, warms up and measures as that run did) and its end."""
    return pairs * (START_GUESS_S + MIN_PER_PAIR * 2 * cost_s + STOP_S)


def fit(costs: dict[str, float], worth: dict[str, tuple[int, int]], budget_s: float,
        pairs: int) -> tuple[list[str], list[str]]:  # fmt: skip
    """The tests a first look re-measures within `budget_s`, and those it leaves to the
    first stage (their rounds would not fit: `first_need`). `costs`: each test's seconds
    in the first stage (setup, call and teardown; a test missing costs nothing); `worth`:
    each test's (checked figures, figures). Tests with a checked figure come first (a
    first-stage verdict the stage must bear out or take back), then the cheapest per
    figure; each is taken where the look still fits with it."""

    def rank(t: str) -> tuple[bool, float, str]:
        checked, n = worth.get(t, (0, 1))
        return (checked == 0, max(costs.get(t, 0.0), 0.0) / max(n, 1), t)

    kept: list[str] = []
    left: list[str] = []
    total = 0.0
    for t in sorted(worth, key=rank):
        c = max(costs.get(t, 0.0), 0.0)
        if first_need(total + c, pairs) <= budget_s:
            kept.append(t)
            total += c
        else:
            left.append(t)
    return sorted(kept), left


def left_said(left: list[str], costs: dict[str, float], figures: int, budget_s: float,
              pairs: int, *, some_kept: bool) -> str:  # fmt: skip
    """Why the tests `left` (with `figures` figures) are not re-measured, in words: the
    dearest three by their first-stage time, and what the cheapest alone would need."""
    dearest = sorted(left, key=lambda t: -costs.get(t, 0.0))
    named = ", ".join(f"{t.split('::')[-1]} {costs.get(t, 0.0):.0f} s" for t in dearest[:3])
    more = f" and {len(left) - 3} more" if len(left) > 3 else ""
    least = first_need(min(costs.get(t, 0.0) for t in left), pairs)
    said = (f"their rounds would not fit the budget of {budget_s:.0f} s (each round priced "
            f"at a test's time in the first stage: {named}{more}; the cheapest of them alone "
            f"needs about {least:.0f} s, --gpuperf-paired-budget)")  # fmt: skip
    if some_kept:
        return f"{figures} figure(s) of {len(left)} test(s) left to the first stage: {said}"
    return said


def affordable(todo: list[tuple[Any, str, str]], tests: list[str], costs: dict[str, float],
               budget_s: float, pairs: int) -> tuple[list[Any], list[str], str]:  # fmt: skip
    """Of the stage's (result, metric, class) figures `todo` and their `tests`, those a
    first look can afford (`fit`, a figure the first stage found regressed or improved
    counted as checked), and why it leaves the rest to the first stage ("" if none)."""
    worth: dict[str, tuple[int, int]] = {}
    for r, m, _ in todo:
        k, n = worth.get(r.nodeid, (0, 0))
        worth[r.nodeid] = (k + (r.verdicts[m].get("status") in ("regressed", "improved")), n + 1)
    kept, left = fit({t: costs.get(t, 0.0) for t in tests}, worth, budget_s, pairs)
    if not left:
        return todo, tests, ""
    said = left_said(left, costs, sum(worth[t][1] for t in left), budget_s, pairs,
                     some_kept=bool(kept))  # fmt: skip
    keep = set(kept)
    return [t for t in todo if t[0].nodeid in keep], kept, said

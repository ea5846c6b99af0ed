"""What the paired stage's first look can afford, priced before any round was measured
(stage.py leaves the rest to the first stage, saying so): each test's round at its own
time in the first stage, less the sampling and the kernel-time pass a round caps (`price`).
A test whose rounds cannot fit is left out up front, before it spends the budget that the
others' rounds need (docs/evidence/paired-stage-notes.md)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable
from typing import Any

from ..core.figures import KERNEL_FIGURES
from ..core.units import format_size
from ..judging.verdict import CHANGED

MIN_PER_PAIR = 2  # rounds a process pair measures at the least: its own spread needs two
STOP_S = 5.0  # seconds a process pair is given to end, in the plan (rounds.plan)
ROUND_MAX_TIME = 0.5  # seconds of sampling a round's measurement takes at most
START_GUESS_S = 10.0  # a process pair's start before one was measured (H200: 1.7-7.9 s)


def round_cap(config: Any) -> float:
    """The seconds a round's measurement samples for at most: ROUND_MAX_TIME, or the run's
    own max_time when smaller (its command line over its ini file, "300ms" or "0.3s"
    alike), never under the least its command line or ini file asks of a measurement
    (`run_minimum`): a cap under it would contradict it, and every round would stop at that
    setting error."""
    if getattr(config, "getoption", None) is None:
        return ROUND_MAX_TIME
    given = run_setting(config, "max_time")
    cap = min(given, ROUND_MAX_TIME) if given is not None else ROUND_MAX_TIME
    return max(cap, run_minimum(config))


def run_minimum(config: Any) -> float:
    """The most of the run's min_time and min_sample_time (`run_setting`); 0 where neither
    is set."""
    asked = (run_setting(config, name) for name in ("min_time", "min_sample_time"))
    return max((x for x in asked if x is not None), default=0.0)


def run_setting(config: Any, name: str) -> float | None:
    """The run's own setting `name` (max_time, min_time, ...) in seconds, from its command
    line over its ini file, parsed as the plugin parses them ("1s" or "500ms" alike); None
    where neither sets it, or where it does not parse (the run says what is wrong)."""
    from ..core.settings import SettingError, parse_layer

    raw = config.getoption(f"gpuperf_{name}", None)
    if raw is None:
        with contextlib.suppress(ValueError, AttributeError):
            raw = config.getini(f"gpuperf_{name}") or None
    if raw is None:
        return None
    with contextlib.suppress(SettingError, TypeError, ValueError):
        return float(parse_layer({name: raw}, "the run")[name])
    return None


def saved(measure_s: float, kernel_s: float, chunks: int, cap_s: float) -> float:
    """What a round saves on one measurement against the first stage: its sampling
    `measure_s` beyond the cap `cap_s`, and its kernel-time pass `kernel_s` (of `chunks`
    chunks) beyond what a round's pass takes: whole chunks until the cap is passed, one at
    the least (measure/kernels.profile_chunks)."""
    one_chunk = kernel_s / chunks if chunks > 0 else kernel_s
    in_round = kernel_s  # a pass within the cap: a round runs all of it
    if kernel_s > cap_s:  # then cap_s / one_chunk < chunks: finite
        in_round = min(kernel_s, one_chunk * max(1, math.ceil(cap_s / one_chunk)))
    return max(0.0, measure_s - cap_s) + max(0.0, kernel_s - in_round)


def price(duration_s: float, saved_s: Iterable[float]) -> float:
    """A round of a test, one side: its first-stage `duration_s` (setup, call, teardown:
    the models it builds, its warm-up, the profiler's passes), less what a round saves on
    each of its measurements (`saved_s`, each `saved`). A model built in a fixture the test
    shares with others is charged to the first test that used it in the first stage, and
    here too only to that one, although every round process of a test builds it: a price
    can be low."""
    return max(0.0, duration_s - sum(saved_s))


def first_need(cost_s: float, pairs: int) -> float:
    """The seconds a first look takes at the least, priced before any round was measured:
    `pairs` process pairs, each its start (START_GUESS_S), MIN_PER_PAIR rounds of both
    builds at `cost_s` a side (the tests' `price`s: a round builds their models and warms
    up as the first stage did, its sampling and kernel pass capped) and its end."""
    return pairs * (START_GUESS_S + MIN_PER_PAIR * 2 * cost_s + STOP_S)


def fit(costs: dict[str, float], worth: dict[str, tuple[int, int]], budget_s: float,
        pairs: int) -> tuple[list[str], list[str]]:  # fmt: skip
    """The tests a first look re-measures within `budget_s`, and those it leaves to the
    first stage (their rounds would not fit: `first_need`). `costs`: each test's `price` a
    round, one side (a test missing costs nothing); `worth`:
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


def left_said(left: list[str], costs: dict[str, float], worth: dict[str, tuple[int, int]],
              budget_s: float, pairs: int, *, some_kept: bool,
              kernels: dict[str, int] | None = None) -> str:  # fmt: skip
    """Why the tests `left` are not re-measured, in words: their figures (and how many of
    them are checked figures: `kernels`, each test's checked kernel-time figures, now
    inconclusive, the other checked ones keeping the first stage's verdict:
    stage._leave), the dearest three by their price a round, and the budget every test
    of the stage would need."""
    dearest = sorted(left, key=lambda t: -costs.get(t, 0.0))
    named = ", ".join(f"{t.split('::')[-1]} {costs.get(t, 0.0):.0f} s" for t in dearest[:3])
    more = f" and {len(left) - 3} more" if len(left) > 3 else ""
    every = first_need(sum(costs.get(t, 0.0) for t in worth), pairs)
    said = (f"their rounds would not fit the budget of {budget_s:.0f} s (a round priced at "
            f"a test's time in the first stage, its sampling and kernel pass capped as a "
            f"round's, a side, the base's at the baseline's saved time: {named}"
            f"{more}; all the stage's tests would need about {every:.0f} s, "
            "--gpuperf-paired-budget)")  # fmt: skip
    checked = sum(worth[t][0] for t in left)
    k = sum((kernels or {}).get(t, 0) for t in left)
    unchecked = (f", {k} of them checked kernel-time figures, inconclusive unchecked (a "
                 "first-stage kernel-time change is not trusted alone)" if k else "")
    if checked > k:
        unchecked += (f", {checked - k} of them checked figures whose first-stage verdict "
                      "stands unchecked")  # fmt: skip
    if some_kept or checked:
        figures = sum(worth[t][1] for t in left)
        return (f"{figures} figure(s) of {len(left)} test(s) not re-measured (left to the "
                f"first stage){unchecked}: {said}")  # fmt: skip
    return said


def round_cap_of(r: Any, cap_s: float, run_max_s: float | None) -> float:
    """The sampling budget a round gives measurement `r`: the round's cap `cap_s`, given on
    its command line, unless `r`'s test set a max_time of its own (its marker or a keyword
    of the call, which outrank the command line), so that its rounds sample as its first
    stage did (priced at the cap, a long step's rounds overran it:
    docs/evidence/paired-stage-notes.md). A measurement names the settings its test set
    (`set_by_test` in `r.config`), so a marker's max_time equal to the run's is the
    test's own too; where a result predates that, a resolved max_time other than the run's
    own `run_max_s` is taken for the test's."""
    cfg = getattr(r, "config", None) or {}
    own, by_test = cfg.get("max_time"), cfg.get("set_by_test")
    if not isinstance(own, int | float) or isinstance(own, bool):
        return cap_s
    if isinstance(by_test, list):
        return float(own) if "max_time" in by_test else cap_s
    if run_max_s is None or own == run_max_s:
        return cap_s
    return float(own)


def own_minimum(r: Any, cap_s: float) -> float | None:
    """The least sampling `r`'s test asks of itself where it is above the round's cap
    `cap_s`, which its rounds get on their command line: the test's fixture checks its
    marker's min_time and min_sample_time against it (`marker_sampling`), unless its marker
    set a max_time; then its call checks what the marker and the call's keywords resolved
    to (`set_by_test`), unless either set a max_time. Above the cap, each of its rounds
    would stop at that setting error; else None (and None for a result that names no
    settings of its test, written before they were recorded)."""
    cfg = getattr(r, "config", None) or {}
    by_test, marker = cfg.get("set_by_test"), cfg.get("marker_sampling") or {}
    if not isinstance(by_test, list) or not isinstance(marker, dict):
        return None
    asked = []
    if "max_time" not in marker:
        asked += [marker.get(k) for k in ("min_time", "min_sample_time")]
    if "max_time" not in by_test:
        asked += [cfg.get(k) for k in ("min_time", "min_sample_time") if k in by_test]
    numbers = (float(v) for v in asked if isinstance(v, int | float) and not isinstance(v, bool))
    least = max(numbers, default=0.0)
    return least if least > cap_s else None


def held_twice(tests: Iterable[str], results: Iterable[Any], have: int | None) -> dict[str, int]:
    """Of `tests`, those whose two builds cannot hold their GPU memory at once, each with
    what one build needs: a round keeps one process a side alive (rounds.py), both
    holding the test's models, so 2 x a build's need must fit in `have` (the GPU's bytes, or
    an emulated card's). A build's need is the most of what the test's gpu_requires_vram
    marker asks (`vram_asked` in its results' config: what it says it needs, so a test
    asking more than half the card is left out whatever it held) and what its measurements
    held (their resident bytes less another test's, plus the timed calls' reserved peak,
    else their allocated one: a floor, for building a model may take more; what a test
    held alone can fit twice where what it asks cannot:
    docs/evidence/paired-stage-notes.md). Empty where `have` is unknown."""
    if not have:
        return {}
    need = dict.fromkeys(tests, 0)
    for r in results:
        if getattr(r, "nodeid", None) in need:
            own = max(0, (r.resident_allocated or 0) - (r.foreign_allocated or 0))
            held = own + (r.peak_reserved or r.peak_allocated or 0)
            asked = (getattr(r, "config", None) or {}).get("vram_asked")
            asked = asked if isinstance(asked, int) and not isinstance(asked, bool) else 0
            need[r.nodeid] = max(need[r.nodeid], held, asked)
    return {t: n for t, n in need.items() if 2 * n > have}


def affordable(todo: list[tuple[Any, str, str]], tests: list[str], results: Iterable[Any],
               durations: dict[str, float], cap_s: float, budget_s: float, pairs: int,
               base_durations: dict[str, float] | None = None, run_max_s: float | None = None,
               gpu_bytes: int | None = None,
               ) -> tuple[list[Any], list[str], str]:  # fmt: skip
    """Of the stage's (result, metric, class) figures `todo` and their `tests`, those a
    first look can afford (`fit` at each test's `price` from its first-stage `durations`
    and its `results`' sampling, a figure the first stage found regressed or improved
    counted as checked), and why it leaves the rest to the first stage ("" if none).

    A round measures both builds: a test's cost a side is the mean of the head's price and the
    base's, from `base_durations` (the test's seconds when the baseline was saved at the base's
    commit, `duration_s` in its entries) less the same savings; without one the base costs what
    the head does (an older base can be far dearer than the head:
    docs/evidence/paired-stage-notes.md). A measurement whose test set a max_time of its own is
    capped at that in its rounds (`round_cap_of`, against the run's own max_time `run_max_s`); a
    test that asks more sampling of itself than the cap allows is left out (`own_minimum`), as
    is one whose two builds cannot hold their GPU memory at once on a GPU of `gpu_bytes`
    (`held_twice`)."""
    worth: dict[str, tuple[int, int]] = {}
    kernels: dict[str, int] = {}  # each test's checked kernel-time figures
    for r, m, _ in todo:
        k, n = worth.get(r.nodeid, (0, 0))
        changed = r.verdicts[m].status in CHANGED
        worth[r.nodeid] = (k + changed, n + 1)
        kernels[r.nodeid] = kernels.get(r.nodeid, 0) + (changed and m in KERNEL_FIGURES)
    savings: dict[str, list[float]] = {t: [] for t in tests}
    clash: dict[str, float] = {}
    for r in results:
        if r.nodeid in savings and r.kind == "measured":
            if (least := own_minimum(r, cap_s)) is not None:
                clash[r.nodeid] = max(least, clash.get(r.nodeid, 0.0))
            kt = getattr(r, "kernel_time", None)
            savings[r.nodeid].append(saved(float(r.measure_s or 0.0),
                                           float(getattr(r, "kernel_s", 0.0) or 0.0),
                                           kt.n if kt is not None else 0,
                                           round_cap_of(r, cap_s, run_max_s)))  # fmt: skip
    clash_said = (f"{len(clash)} test(s) asking more sampling of themselves than a round's "
                  f"cap of {cap_s:g} s allows (each round would stop at the setting error), "
                  "left out: "
                  + ", ".join(f"{t.split('::')[-1]} {m:g} s" for t, m in sorted(clash.items()))
                  if clash else "")  # fmt: skip
    big = held_twice([t for t in tests if t not in clash], results, gpu_bytes)
    big_said = (f"{len(big)} test(s) whose two builds cannot hold their GPU memory at once "
                f"(a round keeps a process of each build alive; this GPU has "
                f"{format_size(gpu_bytes)}), left out: "
                + ", ".join(f"{t.split('::')[-1]} {format_size(n)} a build"
                            for t, n in sorted(big.items()))
                if big else "")  # fmt: skip
    out = {**clash, **big}
    tests = [t for t in tests if t not in out]
    todo = [t for t in todo if t[0].nodeid not in out]
    worth = {t: w for t, w in worth.items() if t not in out}  # `fit` ranks what it holds
    first = "; ".join(x for x in (clash_said, big_said) if x)
    costs = {}
    for t in tests:
        head = price(durations.get(t, 0.0), savings[t])
        base = (price(base_durations[t], savings[t]) if base_durations and t in base_durations
                else head)  # fmt: skip
        costs[t] = (head + base) / 2
    kept, left = fit(costs, worth, budget_s, pairs)
    if not left:
        return todo, tests, first
    said = left_said(left, costs, worth, budget_s, pairs, some_kept=bool(kept), kernels=kernels)
    keep = set(kept)
    return ([t for t in todo if t[0].nodeid in keep], kept,
            "; ".join(x for x in (first, said) if x))  # fmt: skip

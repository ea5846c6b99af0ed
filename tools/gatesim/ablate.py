"""Stage 1 with one of its refinements switched off, for measuring what each is worth
(issue 60, point 1): `variant(name)` is a context manager that patches the shipped judge
(pytest_gpuperf/judging/judge.py, figure.py) for the duration of a `with` block only, so
the package itself is never changed and every other call judges as shipped.

    shipped      nothing switched off
    no-offsets   (a) no class offsets at all: each figure judged against its own baseline
                 sessions with the raw noise model (NoiseModel.fit(offsets=False): the
                 sessions' class offsets kept in the spread, no run offset removed); with no
                 offsets there are no class lines, and the whole budget goes to the figures
    no-clamp     (b) run offsets removed whole (clamp_offsets is the identity), and no
                 bounded_by_class_line (Rule.CLASS_BOUND)
    no-offset-alone  (c) never_by_the_offset (Rule.OFFSET_ALONE) off
    no-shared    (d) shared_by_the_class off
    no-lines     (e) no class-wide lines: the whole budget to the figures (SHIFT_SHARE 0);
                 bounded_by_class_line kept, so a figure decided only by a bounded offset
                 reads inconclusive ("class line not judged"), as shipped code does for a
                 class with no line

Stage-1-only and paired-stage-off variants (f, g in the issue) are the driver's business:
these patches touch only stage 1 (judge_run and so the confirmation that calls it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from pytest_gpuperf.judging import figure, judge
from pytest_gpuperf.judging.noise import NoiseModel

VARIANTS = ("shipped", "no-offsets", "no-clamp", "no-offset-alone", "no-shared", "no-lines")


def _raw_models(results: Any, entries: Any, exclude_session: Any) -> tuple[Any, Any, Any]:
    """judge._fit_models with the raw model (offsets kept in the spread) for both."""
    figures, _, raw = _SHIPPED_FIT(results, entries, exclude_session)
    assert isinstance(raw, NoiseModel) and not raw.use_offsets
    return figures, raw, raw


def _no_line_budget(false_alarm: float, n_gated: int, n_shift: int) -> tuple[float, None]:
    confidence, _ = _SHIPPED_CONFIDENCES(false_alarm, n_gated, 0)
    return confidence, None


_SHIPPED_FIT = judge._fit_models
_SHIPPED_CONFIDENCES = judge._confidences


def _nothing(*_args: Any, **_kw: Any) -> None:
    return None


PATCHES: dict[str, list[tuple[Any, str, Any]]] = {
    "shipped": [],
    "no-offsets": [(judge, "_fit_models", _raw_models)],
    "no-clamp": [
        (judge, "clamp_offsets", lambda removed, _items, _model: dict(removed)),
        (judge, "bounded_by_class_line", _nothing),
    ],
    "no-offset-alone": [(figure, "never_by_the_offset", lambda v, _it: v)],
    "no-shared": [(judge, "shared_by_the_class", _nothing)],
    "no-lines": [
        (judge, "_class_lines", lambda *_a, **_k: []),
        (judge, "_confidences", _no_line_budget),
    ],
}


@contextmanager
def variant(name: str) -> Iterator[None]:
    """The shipped judge with refinement `name` switched off inside the block."""
    if name not in PATCHES:
        raise ValueError(f"unknown stage-1 variant {name!r}: one of {', '.join(VARIANTS)}")
    with ExitStack() as stack:
        for mod, attr, new in PATCHES[name]:
            assert hasattr(mod, attr), f"{mod.__name__}.{attr} is gone: update ablate.py"
            stack.enter_context(mock.patch.object(mod, attr, new))
        yield

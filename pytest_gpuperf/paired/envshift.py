"""The paired stage's reading of the environment (stage.py): whether a baseline entry
was saved with other software than this run's (the figures the first stage found changed are
then not checked against the baseline's commit: both builds run on this run's software), and
the class lines that moved while the paired stage measured their figures unchanged, a shift
of the environment, not of the code, named by the versions that changed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.results import Result
    from ..core.verdict import Verdict


MACHINE = ("gpu", "mig_profile", "memory", "gpus", "interconnect", "emulated")  # not software


def software_changed(key: str, entries: dict[str, dict[str, Any]], env: dict[str, Any]) -> bool:
    """Whether the baseline entry `key` was saved with other software than this run's
    environment `env`: any recorded key but the machine's (MACHINE) that both name and that
    differs (a driver, CUDA, python, torch, a version a pytest_gpuperf_environment hook
    added)."""
    saved = (entries.get(key) or {}).get("environment") or {}
    return any(name not in MACHINE for name, _, _ in differences(saved, env, saved))


def differences(saved: dict[str, Any], env: dict[str, Any],
                 names: Iterable[str]) -> Iterator[tuple[str, Any, Any]]:  # fmt: skip
    """(name, saved value, this run's) of each of `names` both environments record and
    that differs."""
    for name in names:
        old, new = saved.get(name), env.get(name)
        if old is not None and new is not None and old != new:
            yield name, old, new


def environment_shifts(
    shifts: list[Any], results: list[Result], entries: dict[str, dict[str, Any]],
    env: dict[str, Any],
) -> list[str]:  # fmt: skip
    """A class line that moved (regressed or improved) while the paired stage measured its
    figures unchanged against the baseline's commit on this machine: the code did not move
    the class, so the environment did (a driver, torch, the machine). Its verdict becomes
    inconclusive, naming the versions that differ from the baseline's; the lines to show.
    `shifts` (the judgement's class lines) is updated in place."""
    from dataclasses import replace

    from ..core.verdict import Rule, amend
    from ..judging.explain import borne_out
    from ..judging.verdict import CHANGED, INCONCLUSIVE, REGRESSED, UNCHANGED

    by_key = {r.key: r for r in results}
    lines = []
    for i, line in enumerate(shifts):
        if line.verdict.status not in CHANGED:
            continue
        figs = [v for k in line.keys if k in by_key for v in _of_class(by_key[k], line.cls)]
        # re-measured: the stage's verdict (its first stage's kept), or stage 1's borne out
        paired = [v for v in figs if v.paired and (v.stage1 is not None or borne_out(v))]
        # the code did not move the class: most of its figures re-measured, every one of
        # them unchanged, and none of the class's figures regressed
        if (
            len(paired) < max(2, (line.metrics + 1) // 2)
            or any(v.status != UNCHANGED for v in paired)
            or any(v.status == REGRESSED for v in figs)
        ):
            continue
        changed = _versions_changed(line.keys, entries, env)
        why = (
            f"a shift of the environment, not of the code: the paired stage measured "
            f"{len(paired)} of its figures unchanged against the baseline's commit on this "
            f"machine; {changed or 'no recorded version differs (the machine itself)'}"
        )
        shifts[i] = replace(line, verdict=amend(
            line.verdict, Rule.ENVIRONMENT,
            "paired stage", figures={"unchanged": len(paired)}, status=INCONCLUSIVE,
            reason=why))  # fmt: skip
        lines.append(shifts[i].line())
    return lines


def _of_class(r: Result, cls: str) -> list[Verdict]:
    """The verdicts of `r`'s figures of noise class `cls` (its GPU kernel time is in a
    class of its own, never beside its wall time)."""
    from ..core.figures import metrics_of

    figs = metrics_of(r)
    return [v for m, v in r.verdicts.items()
            if (figs.get(m) or {}).get("noise_class") == cls]  # fmt: skip


VERSIONS = ("driver", "cuda", "torch", "transformers", "peft", "bitsandbytes", "nccl")


def _versions_changed(keys: Iterable[str], entries: dict[str, dict[str, Any]],
                      env: dict[str, Any]) -> str:  # fmt: skip
    """ "torch 2.10.0 -> 2.11.0, driver ... -> ..." between the entries' saved environment
    and this run's ("" when none differ)."""
    seen: dict[str, str] = {}
    for k in keys:
        saved = (entries.get(k) or {}).get("environment") or {}
        for name, old, new in differences(saved, env, VERSIONS):
            seen.setdefault(name, f"{name} {old} -> {new}")
    return "versions changed: " + ", ".join(seen.values()) if seen else ""

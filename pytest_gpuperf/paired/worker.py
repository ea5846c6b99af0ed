"""The pytest plugin each process of the paired stage runs (`-p gpuperf_rounds_worker`, a
copy of this file in the stage's temporary directory, so that a base build whose own
pytest_gpuperf predates it runs it too: it imports nothing of pytest_gpuperf).

Such a process collects the tests named in the file ROUNDS_SELECT (and only those), then
waits on the pipe named in ROUNDS_FDS ("<read fd>,<write fd>"): it answers "ready", and
on each "go <round> more|last" runs every selected test once through pytest's own protocol
(fixtures of a wider scope, a model built once, stay up between rounds; a test's own are set
up anew each round, one selected test too), writes the
results that gpu_benchmark attached to the reports (`report.gpuperf`, the plugin's channel
to pytest-xdist's controller as well) to ROUNDS_OUT/round-<round>.json, and answers
"done <round>". "stop", or the pipe closed, ends the loop and the session ends as usual.
So each process builds its models once however many rounds it measures.

Where ROUNDS_WARM names seconds (the rounds of a CUDA run), the process loads the GPU for
that long right before a test's call where the GPU may have idled: before its first test,
and before a test whose call starts IDLE_S or more after the previous one of its round
ended (a model built in its setup): a call on a card that idled reads faster than one on a
card the other build's round just loaded (docs/evidence/paired-stage-notes.md). Each
side's process warms alike, so neither build gains.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

FDS = "GPUPERF_ROUNDS_FDS"
OUT = "GPUPERF_ROUNDS_OUT"
SELECT = "GPUPERF_ROUNDS_SELECT"
OWN = "GPUPERF_ROUNDS_OWN"  # a JSON list of the base worktree's modules: where each came from
NAME = "gpuperf_rounds_worker"  # the name it is given with -p
WARM = "GPUPERF_ROUNDS_WARM"  # seconds of GPU load before a call after idling (CUDA rounds)
IDLE_S = 1.0  # a gap between two calls of a round this long may have let the card idle


class Worker:
    """The loop of one process: rounds on request, their results in files."""

    def __init__(self, rfd: int, wfd: int, out: Path, select: set[str] | None,
                 warm_s: float = 0.0) -> None:  # fmt: skip
        self.warm_s = warm_s
        self.first_call = True  # no call yet in this process: its GPU idled while it started
        self.call_ended: float | None = None  # when this round's last call ended
        self.warmed = 0.0  # seconds this round spent warming the GPU
        self.reader = os.fdopen(rfd, "r", encoding="utf-8")
        self.writer = os.fdopen(wfd, "w", encoding="utf-8")
        self.out = out
        self.select = select
        self.round: list[dict[str, Any]] = []
        self.outcomes: dict[str, str] = {}
        self.seconds: dict[str, float] = {}  # each test's setup + call + teardown this round

    def say(self, line: str) -> None:
        self.writer.write(line + "\n")
        self.writer.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        if self.select is None:
            return
        keep = [i for i in items if i.nodeid in self.select]
        gone = [i for i in items if i.nodeid not in self.select]
        if gone:
            config.hook.pytest_deselected(items=gone)
        items[:] = keep

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool:
        if session.testsfailed:  # a collection error: nothing to measure
            self.say(f"error collection failed ({session.testsfailed} error(s))")
            return True
        items = list(session.items)
        self.say(f"ready {len(items)}")
        while True:
            line = self.reader.readline().split()
            if not line or line[0] == "stop":
                return True
            if line[0] != "go" or len(line) != 3:
                self.say(f"error unknown request {' '.join(line)!r}")
                return True
            self.run_round(session, items, int(line[1]), last=line[2] == "last")
            if session.shouldstop or session.shouldfail:
                self.say(f"error stopped: {session.shouldstop or session.shouldfail}")
                return True

    def run_round(self, session: Any, items: list[Any], i: int, *, last: bool) -> None:
        self.round, self.outcomes, self.seconds = [], {}, {}
        self.call_ended, self.warmed = None, 0.0
        for n, item in enumerate(items):
            nextitem: Any = items[n + 1] if n + 1 < len(items) else (None if last else items[0])
            if len(items) == 1 and not last:  # one test: as its own next item pytest would
                # keep its setup, and the next round would report this round's figures
                # again without running it; its parent keeps only what outlives a test
                nextitem = item.parent
            item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        payload = {"results": self.round, "outcomes": self.outcomes, "modules": _origins(),
                   "seconds": self.seconds, "warmed": self.warmed}  # fmt: skip
        (self.out / f"round-{i}.json").write_text(json.dumps(payload), encoding="utf-8")
        self.say(f"done {i}")

    def should_warm(self, now: float) -> bool:
        """Whether a call starting at `now` warms the GPU first (WARM asked): the process's
        first call, or one IDLE_S or more after the previous call of its round ended."""
        if self.warm_s <= 0:
            return False
        return self.first_call or (self.call_ended is not None
                                   and now - self.call_ended >= IDLE_S)  # fmt: skip

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        if self.should_warm(time.monotonic()):
            self.warmed += warm(self.warm_s)
        self.first_call = False
        try:
            yield
        finally:
            self.call_ended = time.monotonic()

    def pytest_runtest_logreport(self, report: Any) -> None:
        took = getattr(report, "duration", 0.0) or 0.0
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + float(took)
        if report.when == "call":
            # the plugin's channel (fresh/workers.RESULTS_ATTR), spelled here: this file
            # imports nothing of pytest_gpuperf, whose base build may predate the constant
            self.round.extend(getattr(report, "gpuperf", None) or [])
        if report.failed or (report.when == "call" and not report.passed):
            lines = str(getattr(report, "longreprtext", "") or "").splitlines()
            said = [x[1:].strip() for x in lines if x.startswith("E ")] or lines[-1:]
            error = f": {said[-1].strip()[:160]}" if said and said[-1].strip() else ""
            self.outcomes[report.nodeid] = f"{report.outcome} in {report.when}{error}"


def warm(seconds: float) -> float:
    """Load the GPU for `seconds` with bf16 matmuls (counted from the first, after CUDA is
    up), then hand their memory back to the driver (torch.cuda.empty_cache): the seconds
    it took in all; 0 where there is no CUDA, and 0 where it failed (a warm-up is best
    effort and never stops the rounds)."""
    if seconds <= 0:
        return 0.0
    began = time.monotonic()
    try:
        import torch

        if not torch.cuda.is_available():
            return 0.0
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        t0 = time.monotonic()
        while True:
            for _ in range(8):
                a @ a
            torch.cuda.synchronize()
            if time.monotonic() - t0 >= seconds:
                break
        del a
        torch.cuda.empty_cache()
    except Exception:  # a warm-up that fails measures nothing wrong
        return 0.0
    return time.monotonic() - began


def warm_asked(raw: str) -> float:
    """WARM's seconds; 0 where it is unset or not a finite number of seconds above 0."""
    try:
        asked = float(raw)
    except ValueError:
        return 0.0
    return asked if 0 < asked < float("inf") else 0.0


def _origins() -> dict[str, str | None]:
    """The file each of OWN's modules was imported from (None: no file); those not
    imported are left out."""
    import sys

    try:
        names = set(json.loads(Path(os.environ[OWN]).read_text(encoding="utf-8")))
    except (KeyError, OSError, ValueError, TypeError):
        return {}
    return {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items()) if n in names}


def pytest_configure(config: Any) -> None:
    fds = os.environ.get(FDS)
    out = os.environ.get(OUT)
    if not fds or not out:
        return
    rfd, wfd = (int(x) for x in fds.split(","))
    for fd in (rfd, wfd):  # a process a test starts must not hold the pipe open
        os.set_inheritable(fd, False)
    select_file = os.environ.get(SELECT)
    select = set(json.loads(Path(select_file).read_text())) if select_file else None
    worker = Worker(rfd, wfd, Path(out), select, warm_asked(os.environ.get(WARM, "")))
    config.pluginmanager.register(worker, "gpuperf-rounds-loop")

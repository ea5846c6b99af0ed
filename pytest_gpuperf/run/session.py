"""Per-run state: the options (run/options.py), the profile registry and the device snapshot.

Everything here is lazy. Nothing touches NVML or torch until a test, fixture or option
needs to know the device, so a run with no GPU tests pays nothing for the plugin.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.ids import strip_group
from ..fresh.workers import worker_count
from .baseline import RunBaseline, not_passed
from .history import levels_since, record_history  # history/: only where one is given
from .items import GATE_NODEID, SAVE_NODEID, fail_item, strict_gate
from .options import AUTO, Options

if TYPE_CHECKING:  # imported when first needed: a run without GPU tests never loads them
    from ..core.results import Result
    from ..hardware.device import DeviceSnapshot
    from ..hardware.profiles import Profile, Registry
    from ..outputs import RunSummary

__all__ = ["GATE_NODEID", "GpuPerfSession", "Outputs"]


class GpuPerfSession:
    """The per-run state, registered as a plugin (hashable by identity)."""

    def __init__(self, options: Options, pyproject: Path | None) -> None:
        self.options = options
        self.pyproject = pyproject
        self.ini_layer: dict[str, Any] = {}
        self.cli_layer: dict[str, Any] = {}
        self.layer_error: str | None = None
        self.results: list[Result] = []  # measured and recorded, from reports of all workers
        # tests that did not pass every phase (nodeid: why): reported, never saved
        self.left_out: dict[str, str] = {}
        self.durations: dict[str, float] = {}  # seconds per test (setup + call + teardown)
        self.interrupted = False
        self.started = time.time()
        self.save_failed = False  # a requested baseline save that did not happen
        self.saved = False  # this run's results entered the baseline file
        self.output_failed = False  # a requested output file that could not be written
        from ..core.ids import new_session_id

        self.session_id = new_session_id()  # saved with each history item
        self.base = RunBaseline(options, self.session_id)  # the baseline file, verdicts, save
        self.collected: set[str] = set()
        self.locations: dict[str, tuple[str, int | None]] = {}  # test id -> file, line
        self.emulation_applied = False
        self.finish_notes: list[str] = []
        self._registry: Registry | None = None
        self._snapshot: DeviceSnapshot | None = None
        self.config: pytest.Config | None = None  # for the users' hooks (hookspec.py)
        self._environment: dict[str, dict[str, Any]] = {}
        self.host: DeviceSnapshot | None = None  # in a pytest-xdist worker: its host's GPUs
        self.deferred: set[str] = set()  # the controller's: tests the workers deferred

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from ..hardware.profiles import ProfileError, load_registry

            try:
                self._registry = load_registry(self.pyproject)
            except ProfileError as exc:
                raise pytest.UsageError(f"gpuperf: {exc}") from None
        return self._registry

    def snapshot(self) -> DeviceSnapshot:
        if self._snapshot is None:
            from ..hardware.device import detect

            self._snapshot = detect()
        return self._snapshot

    def set_snapshot(self, snap: DeviceSnapshot) -> None:
        """Replace detection (tests of the plugin, and callers that detect via torch)."""
        self._snapshot = snap

    def detected_profile(self) -> Profile | None:
        return self.registry.match(self.snapshot())

    def profile(self) -> Profile | None:
        """The profile results belong to: the one asked for, or the detected one."""
        if self.options.profile == AUTO:
            return self.detected_profile()
        return self.registry.get(self.options.profile, self.snapshot)

    def check_profile(self) -> None:
        """Validate --gpu-profile: known name, and matching the device unless allowed."""
        if self.options.profile == AUTO:
            return
        from ..hardware.profiles import ProfileError

        try:
            wanted = self.registry.get(self.options.profile, self.snapshot)
        except ProfileError as exc:
            raise pytest.UsageError(f"{self.options.profile_source}: {exc}") from None
        if self.options.allow_mismatch:
            return
        snap = self.snapshot()
        detected = self.registry.match(snap)
        if detected is None or detected.name != wanted.name:
            got = detected.name if detected else "no known profile"
            raise pytest.UsageError(
                f"--gpu-profile={wanted.name} does not match this machine: detected "
                f"{snap.describe()} (profile: {got}). Run on a {wanted.description}, use "
                f"--gpu-profile=auto, or pass --gpuperf-allow-mismatch to compare anyway."
            )

    # ------------------------------------------------------------ pytest-xdist workers

    def check_workers(self, workers: int) -> None:
        from ..fresh.workers import WorkerError, check_count

        try:
            check_count(self.snapshot(), workers)
        except WorkerError as exc:
            raise pytest.UsageError(str(exc)) from None

    def assign_worker_gpu(self, workerid: str, workers: int) -> None:
        """In a pytest-xdist worker, before anything initialises CUDA: worker gwN gets the
        N-th visible GPU alone, through CUDA_VISIBLE_DEVICES."""
        snap = self.snapshot()
        if snap.kind != "cuda":
            return
        from ..fresh.workers import WorkerError, gpu_for

        torch = sys.modules.get("torch")
        started = torch is not None and torch.cuda.is_initialized()
        try:
            gpu = gpu_for(snap, workerid, workers, started)
        except WorkerError as exc:
            raise pytest.UsageError(str(exc)) from None
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu.uuid or str(gpu.index)
        self.host = snap  # gpu_requires_gpus is judged on the host (deferred.py)
        self._snapshot = dataclasses.replace(snap, gpus=(gpu,))

    # --------------------------------------------------------------------- emulation

    def emulated_profile(self) -> Profile | None:
        from ..hardware.emulation import emulated

        return emulated(self.registry, self.options.emulate)

    def vram_cap(self) -> int | None:
        """Bytes of GPU memory the emulated card has, or None when not emulating."""
        from ..hardware.emulation import cap_bytes

        return cap_bytes(self.emulated_profile())

    def check_emulation(self) -> None:
        if not self.options.emulate:  # every pytest run asks: no device detection for it
            return
        from ..hardware.emulation import EmulationError, check

        try:
            check(self.registry, self.options.emulate, self.snapshot())
        except EmulationError as exc:
            raise pytest.UsageError(str(exc)) from None

    def apply_emulation(self) -> None:
        if self.emulation_applied or not self.options.emulate:
            return
        import torch

        from ..hardware.emulation import apply

        self.emulation_applied = apply(self.vram_cap(), torch)

    # --------------------------------------------------------------------- baselines

    def prepare_baseline(self) -> None:
        """Find and validate this profile's baseline file (at collection, before any test).
        A bad file stops the run with a usage error naming it (baselines.locate)."""
        if self.base.ready or self.options.baseline_mode == "off":
            return
        from ..baseline.schema import BaselineError

        prof = self.profile()
        try:
            self.base.prepare(prof.name if prof else None, self.snapshot().describe())
        except BaselineError as exc:
            raise pytest.UsageError(f"gpuperf: {exc}") from None

    def environment(self, emulated: str | None = None) -> dict[str, Any]:
        """What the results depend on besides the code, with the fields users' hooks add
        (pytest_gpuperf_environment), computed once per run."""
        key = emulated or ""
        if key not in self._environment:
            from ..baseline.history import environment

            env = environment(self.snapshot().to_dict(), emulated)
            if self.config is not None:
                self.config.hook.pytest_gpuperf_environment(config=self.config, environment=env)
                for name, value in env.items():
                    ok = isinstance(value, str | int | float | bool | None)
                    if not isinstance(name, str) or not ok:
                        raise pytest.UsageError(
                            f"gpuperf: pytest_gpuperf_environment: environment[{name!r}] is "
                            f"a {type(value).__name__}: use a string, a number, a boolean "
                            "or None"
                        )
            self._environment[key] = env
        return dict(self._environment[key])

    def incomparable(self, baseline_env: dict[str, Any], current_env: dict[str, Any]) -> str | None:
        """Why a baseline entry must not be compared with a result: the users' hook
        (pytest_gpuperf_incomparable), else the built-in rule."""
        from ..baseline.history import incomparable_reason

        if self.config is None:
            return incomparable_reason(baseline_env, current_env)
        reason = self.config.hook.pytest_gpuperf_incomparable(
            config=self.config, baseline_env=baseline_env, current_env=current_env
        )
        return reason or None

    def judge(self, config: pytest.Config) -> None:
        """Judge the whole run against the baseline (the noise model needs all of it), then
        re-measure a suspected regression in a fresh process before it may fail the run."""
        env = self.environment(self.options.emulate)
        judgement = self.base.judge(self.results, env, self.options.allow_mismatch)
        if judgement is None or self.options.warn_only or not self.options.confirm:
            return
        from ..fresh.confirm import ENV_FLAG, INTERRUPTED, confirmation_run
        from ..judging.confirmation import flagged_tests

        flagged = flagged_tests(self.results, judgement)
        if not flagged or os.environ.get(ENV_FLAG):  # a confirmation run confirms nothing
            return

        again, failure = confirmation_run(config, flagged, self.results, self.durations)
        if failure == INTERRUPTED:  # Ctrl-C while it ran: the run ends as interrupted
            self.interrupted = True
        self.finish_notes.append(
            f"gpuperf: re-measured {len(flagged)} test(s) with a suspected regression in a "
            "fresh process" + (f": {failure}" if failure else "")
        )
        self.base.confirm(self.results, again, env, self.options.allow_mismatch, failure)

    def paired_stage(self, config: pytest.Config) -> None:
        """Stage 2 unless interrupted (paired/stage.py after_judgement: what stage 1 left
        inconclusive or found changed, re-measured); then unconfirmed improvements marked."""
        if self.base.paired_wanted() and not self.interrupted:
            from ..hardware.marks import usable_memory
            from ..paired.stage import after_judgement

            notes, stopped = after_judgement(
                config, self.base, self.results, self.options, self.durations,
                self.environment(self.options.emulate), self.run_max_time(),
                usable_memory(self.snapshot().primary, self.vram_cap()))  # fmt: skip
            self.finish_notes += notes
            self.interrupted = self.interrupted or stopped
        self.base.after_stages(self.results)

    def run_max_time(self) -> float | None:
        """The run's own max_time: its ini file and command line over the backend's
        default (a test's marker or keyword may set its own); None where they contradict."""
        from ..core.settings import SettingError, resolve

        backend = "cuda" if self.snapshot().kind == "cuda" else "cpu"
        try:
            return resolve(backend, self.ini_layer, self.cli_layer).max_time
        except SettingError:
            return None

    def save_baseline(self, session: pytest.Session) -> str | None:
        """Merge this run's results into the profile's baseline file (save mode)."""
        if self.options.baseline_mode != "save" or not self.results:
            return None
        self.prepare_baseline()  # under pytest-xdist the controller collected nothing
        detected = self.detected_profile()
        note, self.save_failed = self.base.save(
            stopped=bool(session.shouldstop or session.shouldfail or self.interrupted),
            results=self.results,
            detected=detected.name if detected else None,
            describe=self.snapshot().describe(),
            left_out=self.left_out,
            environment=self.environment(self.options.emulate),
            durations=self.durations,
        )
        self.saved = bool(note and note.startswith("saved"))
        return note

    # ------------------------------------------------------------ hooks (registered plugin)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from ..fresh.workers import NODEID_ATTR, RESULTS_ATTR

        nodeid = getattr(report, NODEID_ATTR, report.nodeid)  # as baselines know it
        why = not_passed(report)
        if why:  # one reason a phase: "failed, error in teardown"
            before = self.left_out.get(nodeid)
            self.left_out[nodeid] = f"{before}, {why}" if before else why
        if report.when in ("setup", "call", "teardown"):  # a model built in setup counts
            self.durations[nodeid] = self.durations.get(nodeid, 0.0) + float(report.duration)
        if report.when != "call" or not getattr(report, RESULTS_ATTR, None):
            return
        from ..core.results import Result

        if not self.base.ready and self.options.baseline_mode != "off":
            try:  # the xdist controller collects nothing: load the baseline on first result
                self.prepare_baseline()
            except pytest.UsageError as exc:  # the workers stopped on it too
                self.base.note = str(exc)
                self.base.ready = True
        self.results.extend(Result.from_dict(d) for d in getattr(report, RESULTS_ATTR))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker finished: the tests it left for after the workers (deferred.py)."""
        from ..fresh.deferred import DEFERRED_KEY

        output = getattr(node, "workeroutput", None) or {}
        self.deferred.update(output.get(DEFERRED_KEY) or [])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The controller's view of what was selected, without the '@group' that
        --dist loadgroup appends (a last '@' followed by no ']', '::' or '/'); the workers."""
        self.options.xdist_workers = max(self.options.xdist_workers, worker_count(node))
        if getattr(node.config.option, "dist", None) == "loadgroup":
            ids = [strip_group(i) for i in ids]
        self.collected.update(ids)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.interrupted = True

    def summary(self) -> RunSummary:
        from ..outputs import RunSummary

        prof = self.profile()
        emu = self.emulated_profile()
        commit, dirty = self.base.code_state()  # the code measured (baseline accept reads it)
        started = datetime.fromtimestamp(self.started, UTC)
        return RunSummary(
            device=self.snapshot().to_dict(),
            describe=self.snapshot().describe(),
            profile=prof.name if prof else None,
            baseline_path=str(self.base.path) if self.base.path else None,
            baseline_found=self.base.file is not None,
            baseline_mode=self.options.baseline_mode,
            baseline_note=self.base.note,
            comparing=self.base.comparing,
            warn_only=self.options.warn_only,
            emulated=(emu.name, emu.memory_gib) if emu is not None else None,
            results=list(self.results),
            missing=self.base.missing((r.key for r in self.results), self.collected),
            confidence=self.base.judgement.confidence if self.base.judgement else None,
            shifts=[s.line() for s in self.base.judgement.shifts] if self.base.judgement else [],
            session_id=self.session_id, since=self.base.since,
            saved=self.saved,
            selected=sorted(self.collected),
            rerun=self.base.rerun(), xdist_workers=self.options.xdist_workers,
            blind=self.base.blindness(self.results, self.collected),
            commit=commit, dirty=dirty, date=started.isoformat(timespec="seconds"),
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if not self.results:  # the notes still show (deferred tests not run, say)
            for line in self.finish_notes:
                tr.write_line(line)
            return
        tr.write_sep("=", "gpuperf results")
        from ..outputs.terminal import terminal_lines

        verbosity = tr.config.getoption("verbose", 0)
        for line in terminal_lines(self.summary(), verbosity):
            if line.startswith("--- "):
                tr.write_sep("-", line[4:])
            else:
                tr.write_line(line)
        from ..measure.hostload import busy_line, xdist_cpu_warning

        warning = xdist_cpu_warning(self.options.xdist_workers, self.results)  # workers started
        busy = busy_line(self.results)  # once per run, never once per test
        for line in [*self.finish_notes, *(x for x in (warning, busy) if x)]:
            tr.write_line(line)
        if self.options.warn_only and self.base.judgement is not None:
            # otherwise they are the failure text of the failed test GATE_NODEID
            for line in self.base.failure_lines(self.results):
                tr.write_line(f"{line} (--gpuperf-warn-only: not failing)")
        blind = self.base.blindness(self.results, self.collected)  # the last line: where blind
        for line in blind.lines(verbosity) if blind is not None else []:
            tr.write_line(line)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Judge the run (before JUnit XML and the terminal summary are written): a
        regression is reported as the failed test GATE_NODEID, whose failure text is the
        regression lines, so it shows wherever failed tests show."""
        from ..fresh.workers import is_worker

        if is_worker(session.config):
            return  # the controller judges, from the workers' reports
        if self.deferred:  # the tests the workers left for after them
            from ..fresh.deferred import run_deferred

            run_deferred(self, session)
        if not self.results:  # none measured: a strict gate is blind to its baseline's tests
            return strict_gate(session, self) if self.options.baseline_mode != "save" else None
        if self.options.baseline_mode == "save" or self.interrupted:
            return
        if not self.base.ready:
            self.prepare_baseline()
        self.judge(session.config)
        self.paired_stage(session.config)
        if self.interrupted:  # Ctrl-C during the confirmation: the verdicts show, unconfirmed
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            return
        self.base.since = levels_since(session.config, self)  # where a history is given
        strict_gate(session, self)
        judgement = self.base.judgement
        if judgement is None or not judgement.failing(self.results) or self.options.warn_only:
            return
        text = "\n".join(self.base.failure_lines(self.results))
        fail_item(session, GATE_NODEID, "performance gate", text)  # a performance regression
        if os.environ.get("GITHUB_ACTIONS") == "true":  # on the pull request's diff too
            from ..outputs.github import error_annotations

            self.finish_notes += error_annotations(text.splitlines(), self.locations)

    def finish_outputs(self, session: pytest.Session) -> None:
        """Save (save mode) and write the outputs asked for: last of the run's sessionfinish
        hooks (Outputs below)."""
        from ..fresh.workers import is_worker

        if is_worker(session.config):
            return  # the controller saves and reports, from the workers' reports
        note = self.save_baseline(session)
        if note:
            self.finish_notes.append(f"baseline: {note}")
        if note and self.save_failed and not session.testsfailed:  # none failed already:
            fail_item(session, SAVE_NODEID, "baseline save", f"baseline: {note}")  # its own
        if not self.results:
            return
        summary = self.summary()
        loud = self.base.missing_in_ci(session.config.rootpath, dict(os.environ))
        if loud:  # a GitHub Actions warning annotation, and the step summary says it too
            from ..outputs.github import warning_annotation
            self.finish_notes.append(warning_annotation("gpuperf: no baseline", loud))
            summary.baseline_note = loud
        from ..outputs import write_files
        from ..outputs.benchjson import write_benchmark_json

        step = os.environ.get("GITHUB_STEP_SUMMARY")
        notes, failed = write_files(
            summary,
            json_path=self.options.json_path,
            html_path=self.options.html_path,
            markdown_path=self.options.markdown_path,
            step_summary=Path(step) if step else None,
            profiles=self.registry.get,
            baselines={self.base.path.name: self.base.file}
            if self.base.file is not None and self.base.path is not None
            else None,
        )
        self.finish_notes += notes
        self.output_failed = failed
        self.output_failed |= record_history(session.config, summary, self.finish_notes)
        try:
            write_benchmark_json(session.config, summary, self.started)
        except OSError as exc:
            self.output_failed = True
            self.finish_notes.append(f"gpuperf: NOT WRITTEN: --benchmark-json: {exc}")
        from .benchflags import save_when_alone

        try:  # --benchmark-save/--benchmark-autosave with none of pytest-benchmark's own
            saved = save_when_alone(session.config, summary)
        except OSError as exc:
            self.output_failed = True
            saved = f"gpuperf: NOT SAVED: pytest-benchmark storage: {exc}"
        if saved:
            self.finish_notes.append(saved)
        if (self.save_failed or self.output_failed) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an output asked for must not pass


class Outputs:
    """Registered beside the session: its sessionfinish runs last, after every other
    plugin's (the session's own judges first, before JUnit XML is written)."""

    def __init__(self, sess: GpuPerfSession) -> None:
        self.sess = sess

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.sess.finish_outputs(session)

"""This run's baseline: the profile's file found at collection, the whole run judged at the
end against it (`judge`), the save (save mode). No pytest here: a bad file raises
BaselineError, which the session turns into a usage error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import gitcmd

if TYPE_CHECKING:
    from ..core.results import Result
    from ..judging.blind import Blindness
    from ..judging.explain import Rerun
    from ..judging.judge import Judgement


class RunBaseline:
    """The baseline state of one run. `options` (session.Options, read when used: the
    plugin resolves some of them after the session exists) gives the mode (auto, compare,
    save, off), the directory, the emulated card and the run's false-alarm rate."""

    def __init__(self, options: Any, session_id: str | None = None) -> None:
        self.options = options
        self.session_id = session_id  # this run's, saved with each history item
        self.file: Any = None  # schema.BaselineFile once loaded
        self.path: Path | None = None
        self.profile: str | None = None  # the file's profile (name@emulated when emulating)
        self.note: str | None = None
        self.ready = False
        self.judgement: Judgement | None = None
        self._paired: bool | None = None  # paired_possible's answer, once asked
        self._code: tuple[str | None, bool | None] | None = None  # code_state's, once asked
        self.deselected: set[str] = set()  # the test ids -k, -m, --deselect left out
        # (test key, figure) -> since when a regressed figure stands (run/history.py)
        self.since: dict[tuple[str, str], str] = {}

    @property
    def mode(self) -> str:
        return str(self.options.baseline_mode)

    @property
    def comparing(self) -> bool:
        return self.ready and self.mode in ("auto", "compare")

    @property
    def entries(self) -> dict[str, dict[str, Any]]:
        return self.file.entries if self.file is not None else {}

    def prepare(self, profile: str | None, describe: str) -> None:
        """Find and validate the baseline file of `profile` (None: no profile matches the
        device `describe`). Raises BaselineError naming a bad file (store.locate)."""
        if self.ready or self.mode == "off":
            return
        if profile is None:
            self.note = (
                f"no GPU profile matches {describe}: results are not compared or saved; "
                "add a profile in pyproject.toml ([tool.gpuperf.profiles])"
            )
        else:
            from ..baseline.store import locate

            self.path, self.profile, self.file = locate(
                self.options.baseline_dir,
                profile,
                self.options.emulate,
                must_exist=self.mode == "compare",
            )
        self.ready = True

    def line(self) -> str | None:
        """Which baseline file this run compares with, saves to, or looked for."""
        if self.mode == "off":
            return "baselines off"
        if self.path is None:
            return self.note
        if self.mode == "save":
            return f"saving to baseline {self.path} (profile {self.profile})"
        if self.file is None:
            return f"no baseline at {self.path} (profile {self.profile}): results are new"
        n = len(self.file.entries)
        return f"comparing with baseline {self.path} (profile {self.profile}, {n} entries)"

    def missing_in_ci(self, rootdir: Path, environ: dict[str, str]) -> str | None:
        """In CI (CI or GITHUB_ACTIONS set), a run in auto mode that found no baseline file:
        the gate is off, which must be loud (a baseline in the wrong place looks like this).
        The message names the path looked at, the rootdir and how to save one."""
        ci = environ.get("GITHUB_ACTIONS") or environ.get("CI") or ""
        if ci.lower() in ("0", "false", "") or self.mode != "auto":
            return None
        if self.path is None or self.file is not None:
            return None
        return (
            f"no baseline at {self.path} (profile {self.profile}; --gpuperf-baseline-dir "
            f"resolved against the rootdir {rootdir}): nothing was compared, so no regression "
            "can fail this run. Save one on this runner with --gpuperf-baseline=save and "
            "commit it, or use --gpuperf-baseline=compare to fail when it is missing"
        )

    def judge(
        self, results: list[Result], env: dict[str, Any], allow_cross_gpu: bool
    ) -> Judgement | None:
        """Judge the whole run (sets each result's verdicts); None when not comparing."""
        if not self.comparing or self.path is None:
            return None
        self.judgement = self._judge_run(results, env, allow_cross_gpu)  # no file: all new
        return self.judgement

    def _judge_run(
        self, results: list[Result], env: dict[str, Any], allow_cross_gpu: bool,
        offsets: Any = None,
    ) -> Judgement:  # fmt: skip
        """judge_run with this run's baseline entries and options (and, for a confirmation,
        the offsets the first judgement removed from each figure)."""
        from ..judging.judge import judge_run
        from ..paired.stage import STAGE_SHARE

        share = 1.0 - STAGE_SHARE if self.paired_possible() else 1.0
        return judge_run(
            results,
            self.entries,
            env,
            false_alarm=self.options.false_alarm * share,
            allow_cross_gpu=allow_cross_gpu,
            offsets=offsets,
            incomparable=self.options.incomparable,
        )

    def paired_possible(self) -> bool:
        """Whether the paired stage may run after this judgement (its share of the budget is
        then kept from the first stage): comparing, the stage not off, not in a fresh
        process of the gate's own, and a commit an entry recorded present in this clone
        (a shallow CI clone has none: stage 1 keeps the whole budget). Asked once a run."""
        if self._paired is None:
            self._paired = self._paired_check()
        return self._paired

    def paired_wanted(self) -> bool:
        """Whether the paired stage is asked for: comparing, not off, and not in a fresh
        process of the gate's own (it then runs, or says in one line why it cannot)."""
        import os

        from ..fresh.confirm import ENV_FLAG

        return self.comparing and self.options.paired != "off" and not os.environ.get(ENV_FLAG)

    def _paired_check(self) -> bool:
        if not self.paired_wanted():
            return False
        commits = sorted({e["commit"] for e in self.entries.values()
                          if isinstance(e.get("commit"), str) and e["commit"]})  # fmt: skip
        if not commits or self.path is None:
            return False
        where = self.path.parent  # gitcmd asks in its nearest existing folder
        return any(gitcmd.ok(where, "cat-file", "-e", f"{c}^{{commit}}") for c in commits[:20])

    def confirm(self, results: list[Result], again: list[Result] | None, env: dict[str, Any],
                allow_cross_gpu: bool, failure: str | None) -> None:  # fmt: skip
        """Merge a confirmation run's results (judged with the offsets this run removed)."""
        if self.judgement is None:
            return
        from ..judging.confirmation import confirm
        from ..judging.judge import Judgement

        again = again or []
        again_j = (
            self._judge_run(again, env, allow_cross_gpu, offsets=self.judgement.metric_offsets)
            if again
            else Judgement(self.judgement.confidence, 0)
        )
        confirm(results, self.judgement, again, again_j, failure)

    def after_stages(self, results: list[Result]) -> None:
        """After every stage that could re-measure one: each improvement nothing measured
        again marked unconfirmed (judging/confirmation.unconfirmed_improvements)."""
        from ..judging.confirmation import unconfirmed_improvements

        if self.judgement is not None:
            unconfirmed_improvements(results)

    def blindness(self, results: list[Result], collected: set[str]) -> Blindness | None:
        """The gated figures this run's judgement left undecided, and why (None: not
        judged), against the entries it was judged with; an entry of a collected test
        with no result this run among them (a run that measured none of its baseline's
        tests, all skipped, is blind to them too)."""
        missing = self.missing((r.key for r in results), collected)
        if self.judgement is None and not missing:
            return None
        from ..judging.blind import blindness

        return blindness(results if self.judgement is not None else [], self.entries, missing)

    def failure_lines(self, results: list[Result]) -> list[str]:
        from ..judging.explain import failure_lines

        return failure_lines(
            results, self.entries, self.profile or "?", self.judgement, self.rerun(), self.since
        )

    def rerun(self) -> Rerun | None:
        """What the command re-running a verdict of this run names: its profile, the
        baseline file's directory (relative to the rootdir when inside it), its emulation."""
        if self.path is None or self.profile is None:
            return None
        from ..judging.explain import Rerun

        return Rerun.of(self.profile, self.path.parent, self.options.rootdir)

    def code_state(self) -> tuple[str | None, bool | None]:
        """HEAD of the run's checkout (its rootdir's repository) and whether its code
        differs from it (`code_changed`), asked once; (None, None) outside a repository.
        The results file records both (baseline accept restarts at that commit)."""
        if self._code is None:
            root = Path(self.options.rootdir) if self.options.rootdir else Path.cwd()
            self._code = checkout_state(root, self.path.parent if self.path else root)
        return self._code

    def missing(self, keys: Iterable[str], collected: set[str]) -> list[str]:
        """Baseline entries of collected tests that produced no result in this run."""
        if not self.comparing or self.file is None:
            return []
        from ..judging.explain import missing

        return missing(self.entries, keys, collected)

    def orphan_note(self, collected: Iterable[str]) -> str | None:
        """A line naming the entries of the collected test files that no test of those
        files has now (renamed or deleted: never judged again), from every test id the
        collection found; None where there are none."""
        if not self.comparing or self.file is None:
            return None
        from ..judging.explain import orphaned

        keys = orphaned(self.entries, {*collected, *self.deselected})
        if not keys:
            return None
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        return (
            f"gpuperf: {len(keys)} entr{'y' if len(keys) == 1 else 'ies'} of {self.path} "
            f"name{'s' if len(keys) == 1 else ''} a test its file no longer has (renamed or "
            f"deleted?), never judged: {shown}. A renamed test reads NEW until a save "
            "records it under its new name; remove the old entries from the file by hand"
        )

    def save(
        self,
        *,
        stopped: bool,
        results: list[Result],
        detected: str | None,
        describe: str,
        left_out: Mapping[str, str],
        environment: dict[str, Any],
        durations: dict[str, float],
    ) -> tuple[str | None, bool]:
        """Merge this run's results into the file (save mode), less those of the tests in
        `left_out` (a test that did not pass every phase, with why). Returns the line to
        show (None: nothing to say) and whether a save that was asked for did not happen."""
        if self.mode != "save" or not results or self.path is None:
            return None, False
        why = refusal(
            stopped=stopped,
            results=results,
            detected=detected,
            baseline_profile=self.profile,
            describe=describe,
        )
        if why:
            return f"NOT SAVED to {self.path}: {why}", True
        from ..measure.hostload import too_disturbed

        workers = self.options.xdist_workers  # by figure: a test's recorded figures stay
        disturbed = {r.key: w for r in results if (w := too_disturbed(r, workers))}
        line, failed = save_run(
            self.path, self.profile or "?", [r for r in results if r.key not in disturbed],
            left_out, environment, durations, self.session_id,
            save_shared=self.options.save_shared, code_root=self.options.rootdir,
        )  # fmt: skip
        if disturbed:  # refused, not flagged: its figure is the other work's (baselines.md)
            named = "; ".join(f"{n}: {w}" for n, w in sorted(disturbed.items()))
            line += f"; NOT SAVED: {len(disturbed)} test(s) {named}"
        if line.startswith("saved"):  # what the baseline can see now, per figure
            kept = [r for r in results if r.key not in disturbed and r.nodeid not in left_out]
            line += self.unseen(kept, environment)
        return line, failed or bool(disturbed)  # a refused save fails, as a gpu-shared one

    def unseen(self, results: list[Result], environment: dict[str, Any]) -> str:
        """The save line's tail naming each figure the saved baseline cannot yet see at its
        tolerance (judging/blind.unseen_after_save); "" where it sees them all."""
        from ..baseline.schema import BaselineError
        from ..baseline.store import load
        from ..judging.blind import unseen_after_save

        try:  # the file was just written; what it sees is a note, never the save's failure
            saved = load(self.path) if self.path is not None else None
            lines = unseen_after_save(results, saved.entries, environment) if saved else []
        except (BaselineError, OSError, ValueError, KeyError, TypeError):
            return ""
        return (f"\nbaseline: {len(lines)} figure(s) it cannot yet see at their tolerance: "
                + "; ".join(lines)) if lines else ""  # fmt: skip


def key_collisions(results: Iterable[Result]) -> list[str]:
    """Two results of a run under one baseline key (e.g. a parameter id that ends like
    another test's metric): one would silently replace the other."""
    seen: dict[str, Result] = {}
    out = []
    for r in results:
        other = seen.get(r.key)
        if other is not None:
            out.append(
                f"{r.key}: measured twice in one run (by {other.nodeid}"
                f"{' metric ' + repr(other.metric) if other.metric else ''} and by {r.nodeid}"
                f"{' metric ' + repr(r.metric) if r.metric else ''}): give them distinct "
                "metric names"
            )
        else:
            seen[r.key] = r
    return out


def refusal(
    *,
    stopped: bool,
    results: list[Result],
    detected: str | None,
    baseline_profile: str | None,
    describe: str,
) -> str | None:
    """Why this run's results must not be saved, or None."""
    if stopped:
        return "the run was interrupted or stopped early; nothing was saved"
    clashes = key_collisions(results)
    if clashes:
        return "; ".join(clashes)
    if baseline_profile and (detected is None or detected != baseline_profile.split("@")[0]):
        return (
            f"results measured on {describe} (profile {detected or 'none'}) never enter the "
            f"baseline of profile {baseline_profile!r}, whatever --gpuperf-allow-mismatch says"
        )
    return None


def save_run(
    path: Path,
    profile: str,
    results: list[Result],
    left_out: Mapping[str, str],
    environment: dict[str, Any],
    durations: dict[str, float],
    session_id: str | None = None,
    save_shared: bool = False,
    code_root: Path | None = None,
) -> tuple[str, bool]:
    """Merge the results of the tests that passed into the baseline file: a test in
    `left_out` (nodeid: why, e.g. "skipped", "xfailed", "error in teardown") did not pass
    every phase, and its results are named in the line, never saved. A test with a result
    measured while another process used the GPU (gpu-shared) is left out too, and the save
    fails, unless `save_shared` (--gpuperf-save-gpu-shared). Returns the line to show and
    whether a save that was asked for did not happen. Each session records the commit of
    the checkout the run measured, `code_root` (the run's rootdir; the baseline file's
    directory where not given), which the paired stage builds (`code_commit`)."""
    from ..baseline.history import host
    from ..baseline.schema import BaselineError, entries_to_save
    from ..baseline.store import save

    shared = sorted({r.nodeid for r in results if r.gpu_shared and r.nodeid not in left_out})
    refused = bool(shared) and not save_shared
    named = ", ".join(shared)
    tail = (
        f"; NOT SAVED: {len(shared)} test(s) measured while another process used the GPU "
        f"(gpu-shared): {named}; measure them on a GPU of their own, or save them anyway "
        "with --gpuperf-save-gpu-shared"
        if refused
        else f"; saved though measured on a shared GPU (--gpuperf-save-gpu-shared): {named}"
        if shared
        else ""
    )
    kept = set(left_out) | (set(shared) if refused else set())
    now = datetime.now(UTC).isoformat(timespec="seconds")
    commit, no_commit = code_commit(code_root or path.parent, path.parent)
    updates = entries_to_save(
        [r for r in results if r.nodeid not in kept],
        environment,  # one run, one device, one emulation
        date=now,
        commit=commit,
        session=session_id,
        host=host(),
        durations=durations,
    )
    note = not_saved_note(results, left_out) + no_commit + tail
    if not updates:
        return f"nothing saved to {path}{note}", refused
    try:
        save(path, profile, updates, now)
    except BaselineError as exc:
        return f"NOT SAVED: {exc}", True
    except (OSError, ValueError) as exc:  # no directory, no permission, lock timeout
        return f"NOT SAVED: baseline file {path}: {type(exc).__name__}: {exc}", True
    return f"saved {len(updates)} benchmark(s) to {path}{note}", refused


def not_saved_note(results: Iterable[Result], left_out: Mapping[str, str]) -> str:
    """The save line's tail naming the measured tests left out and why ("" when none)."""
    tests = sorted({r.nodeid for r in results if r.nodeid in left_out})
    if not tests:
        return ""
    named = ", ".join(f"{n} ({left_out[n]})" for n in tests)
    return f"; not saved: {len(tests)} test(s) did not pass: {named}"


def not_passed(report: Any) -> str | None:
    """Why a phase's report (a pytest TestReport) keeps the test's results out of the
    baseline (None: it passed): a failure, an error in setup or teardown, a skip, an
    xfail or a strict xpass. A test's results are saved only when each of its phases
    passed (a non-strict xpass is reported as passed, and counts as one)."""
    if report.passed:
        return None
    if report.skipped:
        return "xfailed" if hasattr(report, "wasxfail") else "skipped"
    if report.when != "call":
        return f"error in {report.when}"
    return "xpassed (strict)" if "[XPASS(strict)]" in str(report.longrepr) else "failed"


def code_commit(root: Path, baseline_dir: Path) -> tuple[str | None, str]:
    """The commit of the checkout at `root` that a saved session measured, and the save
    line's clause saying why none is recorded where tracked files of it other than
    `baseline_dir`'s JSON files differ from HEAD (HEAD is not the code measured; the paired
    stage would build the wrong one); none, unsaid, where `root` is in no git repository or has no
    commit yet (a compare run's paired stage says it is off, and why). A baseline
    directory outside the checkout (a nightly job's cache) takes the checkout's commit all
    the same: it used to take its own directory's, none outside a repository."""
    commit, dirty = checkout_state(root, baseline_dir)
    if commit is None:  # no repository, or no commit yet
        return None, ""
    if dirty:
        return None, ("; no commit recorded: the checkout has uncommitted changes other than "
                      "the baseline files (commit them, then save, for the paired stage to "
                      "build this code)")  # fmt: skip
    return commit, ""


def checkout_state(root: Path, baseline_dir: Path) -> tuple[str | None, bool | None]:
    """HEAD of the checkout at `root` and whether its code differs from HEAD
    (`code_changed`); (None, None) where `root` is in no git repository or has no commit."""
    out = (gitcmd.out(root, "rev-parse", "--show-toplevel", "HEAD") or "").splitlines()
    if len(out) != 2:  # no repository, or no commit yet: rev-parse fails as a whole
        return None, None
    top, commit = out
    return commit, code_changed(Path(top), baseline_dir)


def code_changed(top: Path, baseline_dir: Path) -> bool:
    """Whether tracked files of the checkout at `top` differ from HEAD, less the baseline
    files themselves (the JSON files directly in `baseline_dir`): a session saved so
    measured code that no commit holds. The rest of the baseline directory counts (with
    `--gpuperf-baseline-dir=tests` an edited test is code the run measured). An untracked
    Python file git does not ignore counts too: a test may import it, and no commit holds
    it."""
    spec = ["."]
    with contextlib.suppress(ValueError, OSError):  # the baseline's own files: not the code
        rel = baseline_dir.resolve().relative_to(Path(top).resolve())
        files = f"{rel.as_posix()}/*.json" if rel.parts else "*.json"
        spec = [".", f":(exclude,glob){files}"]
    if gitcmd.status(top, "diff", "--quiet", "HEAD", "--", *spec) == 1:
        return True
    new = gitcmd.out(top, "ls-files", "--others", "--exclude-standard", "--", "*.py")
    return bool(new and new.strip())

"""Confirmation: a suspected regression is re-measured in a fresh process before it may
fail the run. The in-process figure shares the process's state (allocator, compiled
kernels, a model left resident, the clock the card settled at); a fresh pytest process with
a cold compile cache does not. Only the flagged tests run, with this run's measurement
settings and without baselines; their results come back through a JSON results file.

The fresh process (the confirmation's and the deferred tests', deferred.py) is started as
the run was: the same interpreter and flags, the run's sys.path as it was before any
conftest was loaded (never the working directory put first), the run's arguments as pytest
read them (the ini file's addopts, PYTEST_ADDOPTS, the command line) with its test paths,
and its collection narrowed to the tests named (SELECT_ENV). It writes nothing of the
run's: every output option is left out wherever it was given (`-o addopts=` and no
PYTEST_ADDOPTS, so none comes back), and it writes the files of the modules it imported
(IMPORTS_ENV), which the run compares with its own."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .provenance import imported_files, other_files, pin_bootstrap, write_pins

if TYPE_CHECKING:
    from ..core.results import Result

ENV_FLAG = "PYTEST_GPUPERF_CONFIRMATION"
SELECT_ENV = "PYTEST_GPUPERF_SELECT"  # a file naming the only tests the fresh process runs
IMPORTS_ENV = "PYTEST_GPUPERF_IMPORTS"  # where it writes the files of the modules it imported
INTERRUPTED = "interrupted (Ctrl-C) before the fresh process finished"
RUN_OPTIONS = ("gpu_profile", "gpuperf_emulate")  # run-wide options the fresh process repeats
SYS_PATH_KEY = pytest.StashKey[list[str]]()  # the run's sys.path before its conftests


# What the fresh process is not given of the run's arguments (the rest, a user's own
# options and the test paths included, it is): pytest-xdist's options (it runs no workers),
# the cache's (it runs with -p no:cacheprovider), every output of pytest, pytest-benchmark
# (its JSON, saves, histograms, profiles) and the plugin (it must not write over the run's),
# coverage (its data file is the run's), and what would keep it from running the tests or
# wait at a prompt.
DROPPED_FLAGS = frozenset({
    "-f", "--looponfail", "-d", "--distload", "--loadscope-reorder", "--no-loadscope-reorder",
    "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--cache-clear",
    "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--sw-reset", "--stepwise-reset",
    "--pdb", "--trace", "--setup-only", "--setup-plan", "--collect-only", "--co",
    "--self-contained-html", "--benchmark-autosave", "--benchmark-save-data", "--cov-append",
    "--cov-branch", "--json-report",
    "--cov-reset", "--no-cov-on-fail", "--gpuperf-plan", "--gpuperf-info", "--gpu-info",
    "--gpuperf-profiles", "--gpu-profiles",
})  # fmt: skip
DROPPED_WITH_VALUE = frozenset({
    "-n", "--numprocesses", "--maxprocesses", "--dist", "--tx", "--px", "--rsyncdir",
    "--rsyncignore", "--max-worker-restart", "--maxworkerrestart", "--maxschedchunk",
    "--lfnf", "--last-failed-no-failures", "--junitxml", "--junit-xml", "--junitprefix",
    "--junit-prefix", "--report-log", "--resultlog", "--result-log", "--basetemp", "--html",
    "--pdbcls", "--benchmark-save", "--benchmark-json", "--cov-report", "--cov-config",
    "--cov-fail-under", "--cov-context", "--alluredir", "-c", "--config-file", "--rootdir",
    "--gpuperf-json", "--gpuperf-html", "--gpuperf-markdown", "--gpuperf-baseline",
    "--log-file", "--pastebin", "--json-report-file", "--csv",
})  # fmt: skip
# value optional (`--cache-show [glob]`): a next word that is no option is its value, as
# argparse reads it
DROPPED_OPTIONAL_VALUE = frozenset(
    {"--cache-show", "--benchmark-histogram", "--benchmark-cprofile-dump", "--cov", "--debug"}
)
# pytest's own options that take a value, kept with it (a value that looks like an option
# is not one)
KEPT_WITH_VALUE = frozenset({
    "-k", "-m", "-p", "-o", "-W", "-r", "--deselect", "--ignore", "--ignore-glob",
    "--confcutdir", "--import-mode", "--tb", "--capture", "--maxfail", "--durations",
    "--pythonwarnings", "--override-ini",
})  # fmt: skip


def given_args(config: Any) -> list[str]:
    """The run's arguments as pytest read them: the ini file's addopts (after `-o`),
    PYTEST_ADDOPTS, then the command line."""
    ini = [str(a) for a in config.getini("addopts")]
    env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return [*ini, *env, *(str(a) for a in config.invocation_params.args)]


def passed_through(config: Any) -> tuple[list[str], list[str]]:
    """The run's arguments (given_args) less what DROPPED_* name, in order, test paths and
    a user's options with their values kept; and the words after a `--` (test paths)."""
    given = given_args(config)
    out: list[str] = []
    i = 0
    while i < len(given):
        a = given[i]
        i += 1
        if a == "--":  # what follows is test paths
            return out, given[i:]
        name = a.split("=", 1)[0] if a.startswith("--") or a.startswith("-n=") else a
        if name in DROPPED_FLAGS:
            continue
        if name in DROPPED_WITH_VALUE:
            if a == name and i < len(given):  # `--opt value`, not `--opt=value`
                i += 1
            continue
        if name in DROPPED_OPTIONAL_VALUE:
            if a == name and i < len(given) and given[i][:1] != "-":
                i += 1
            continue
        if a in KEPT_WITH_VALUE and i < len(given):  # its value, whatever it looks like
            out += [a, given[i]]
            i += 1
            continue
        if a.startswith("-n") and a[2:].isalnum() and not a.startswith("--"):  # -n4, -nauto
            continue
        out.append(a)
    return out, []


def entry(config: Any, pins: Path | None = None) -> list[str]:
    """The interpreter, its flags and a bootstrap that sets the run's sys.path (as it was
    before the run's conftests were loaded: SYS_PATH_KEY), pins the modules listed in
    `pins` to the run's files (provenance.write_pins) and starts pytest through
    pytest.main() (console_main is deprecated): `python -m pytest` would put the working
    directory first and import a local source tree where the run imported an installed
    copy."""
    stash = getattr(config, "stash", None)
    path = stash.get(SYS_PATH_KEY, None) if stash is not None else None
    path = list(sys.path) if path is None else path
    pinned = pin_bootstrap(pins) if pins is not None else ""
    boot = (f"import sys; sys.path[:] = {path!r}\n{pinned}\n"
            "import pytest\nraise SystemExit(pytest.main())")  # fmt: skip
    # -O, -W, -X, -B, ... as multiprocessing's spawn passes them
    flags: list[str] = getattr(subprocess, "_args_from_interpreter_flags", list)()
    return [sys.executable, *flags, "-c", boot]


def start_dir(config: Any) -> Path:
    """Where the run started (pytest's invocation directory), else its rootdir."""
    params = getattr(config, "invocation_params", None)
    start = getattr(params, "dir", None)
    return Path(start) if start is not None and Path(start).is_dir() else Path(config.rootpath)


def command(config: Any, json_path: Path, pins: Path | None = None) -> list[str]:
    """The fresh process's command line: this run's arguments (its own, addopts' and
    PYTEST_ADDOPTS', a user's options and the test paths, less those `passed_through`
    leaves out), settings and plugins, the same ini file and rootdir, no addopts of its
    own, baselines off, results as JSON and every output in its own temporary directory.
    The tests it runs are named in SELECT_ENV's file (`run`)."""
    from ..core.settings import SETTINGS

    kept, tail = passed_through(config)
    args = [*entry(config, pins), *kept, "-q", "-p", "no:cacheprovider"]
    for s in SETTINGS:
        if s.cli and config.getoption(f"gpuperf_{s.name}") is not None:
            args.append(
                f"--gpuperf-{s.name.replace('_', '-')}={config.getoption(f'gpuperf_{s.name}')}"
            )
    for dest in RUN_OPTIONS:
        value = config.getoption(dest)
        if value:
            args.append(f"--{dest.replace('_', '-')}={value}")
    if config.getoption("gpuperf_allow_mismatch"):
        args.append("--gpuperf-allow-mismatch")
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    tmp = json_path.parent
    args += [
        f"--rootdir={config.rootpath}",
        "-o", "addopts=",  # the ini file's were read above, less the outputs
        "-o", "log_file=",  # the ini file's log_file is the run's
        "--gpuperf-baseline=off",
        f"--gpuperf-json={json_path}",
        f"--basetemp={tmp / 'basetemp'}",
    ]  # fmt: skip
    if getattr(config.option, "xmlpath", None):
        args.append(f"--junitxml={tmp / 'junit.xml'}")
    if config.pluginmanager.hasplugin("xdist"):  # no workers, whatever addopts ask for
        args += ["-n", "0", "--dist", "no"]
    return args + (["--", *tail] if tail else [])


def run(
    config: Any, nodeids: list[str], tmp: Path, env: dict[str, str], timeout: float | None = None
) -> tuple[subprocess.CompletedProcess[str] | None, str | None]:
    """Run `nodeids` in a fresh pytest process (`command`) whose files go to `tmp`: its
    results to tmp/results.json, the files of the modules it imported to tmp/imports.json.
    Returns it, or None and why not."""
    select = tmp / "select.json"
    select.write_text(json.dumps(sorted(nodeids)), encoding="utf-8")
    env = {SELECT_ENV: str(select), IMPORTS_ENV: str(tmp / "imports.json"), **env}
    pins = write_pins(tmp / "pins.json")  # the run's build: the files the run imported
    return fresh_process(command(config, tmp / "results.json", pins), config, env, timeout)


def fresh_environment() -> dict[str, str]:
    """This process's environment for a fresh pytest process of the gate's: less what is
    the run's own, pytest-xdist's worker variables, the step summary and PYTEST_ADDOPTS
    (the fresh process's arguments hold the run's addopts)."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST_XDIST") and k not in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS")
    }


def fresh_process(
    args: list[str], config: Any, env: dict[str, str], timeout: float | None = None
) -> tuple[subprocess.CompletedProcess[str] | None, str | None]:
    """Run a fresh pytest process where the run started, with this environment less
    pytest-xdist's worker variables, the step summary and PYTEST_ADDOPTS, plus `env`.
    Returns it, or None and why not."""
    full = {**fresh_environment(), **env}
    from ..measure.memory import release_cached

    release_cached()  # this process's cached GPU memory is the fresh process's to use
    try:
        return subprocess.run(
            args,
            cwd=str(start_dir(config)),
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        ), None
    except subprocess.TimeoutExpired:
        return None, f"the fresh process ran over {timeout:.0f} s and was stopped"
    except KeyboardInterrupt:  # subprocess.run has stopped the child
        return None, INTERRUPTED
    except OSError as exc:
        return None, f"the fresh process could not start: {exc}"


def said(proc: subprocess.CompletedProcess[str]) -> str:
    """The last lines the process printed, on one line."""
    return " / ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])


def gpu_of(results: list[Result], nodeids: list[str]) -> str | None:
    """The GPU the flagged tests ran on, when one (a fresh process on the same card); None
    when a flagged test used more than one GPU (it needs all of them again)."""
    flagged = [r for r in results if r.nodeid in nodeids]
    if any(r.gpus_used > 1 for r in flagged):
        return None
    uuids = {r.gpu_uuid for r in flagged if r.gpu_uuid}
    return uuids.pop() if len(uuids) == 1 else None


def confirmation_run(
    config: Any, nodeids: list[str], results: list[Result], durations: dict[str, float]
) -> tuple[list[Result] | None, str | None]:
    """Run `nodeids` in a fresh pytest process. Returns its results, or None and why not."""
    from ..outputs.runfile import ResultsFileError, read_run

    budget = 120 + 3 * sum(durations.get(n, 60.0) for n in nodeids)
    with tempfile.TemporaryDirectory(prefix="gpuperf-confirm-") as tmp:
        json_path = Path(tmp) / "results.json"
        gpu = gpu_of(results, nodeids)
        proc, failure = run(
            config,
            nodeids,
            Path(tmp),
            {
                ENV_FLAG: "1",
                # a cold compile cache: a compiled step is compiled again, as in a fresh CI job
                "TORCHINDUCTOR_CACHE_DIR": str(Path(tmp) / "inductor"),
                "TRITON_CACHE_DIR": str(Path(tmp) / "triton"),
                **({"CUDA_VISIBLE_DEVICES": gpu} if gpu else {}),
            },
            timeout=budget,
        )
        if proc is None:
            return None, failure
        if not json_path.exists():
            return None, (
                f"the fresh process wrote no results (exit {proc.returncode}: {said(proc)})"
            )
        other = other_files(Path(tmp) / "imports.json")
        if other:  # it measured other code than the run did: its figures confirm nothing
            return None, f"the fresh process imported other files than this run: {other}"
        try:
            return read_run(json_path)[1].results, None
        except ResultsFileError as exc:
            return None, f"the fresh process's results could not be read: {exc}"


# ------------------------------------------------------------ in the fresh process


class FreshSide:
    """Registered in the fresh process (SELECT_ENV or IMPORTS_ENV set, read once and
    taken out of the environment, so that a test's own pytest subprocess does not see
    them): runs only the tests named, and writes the files of the modules it imported."""

    def __init__(self, select: str | None, imports: str | None) -> None:
        self.only: set[str] | None = None
        if select:
            self.only = set(json.loads(Path(select).read_text(encoding="utf-8")))
        self.imports = Path(imports) if imports else None

    @classmethod
    def from_environment(cls) -> FreshSide | None:
        select, imports = os.environ.pop(SELECT_ENV, None), os.environ.pop(IMPORTS_ENV, None)
        return cls(select, imports) if select or imports else None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.only is None:
            return
        # no pytest-xdist here: a node id is as baselines know it (no '@group')
        kept = [i for i in items if i.nodeid in self.only]
        dropped = [i for i in items if i.nodeid not in self.only]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        if self.imports is not None:
            self.imports.write_text(json.dumps(imported_files()), encoding="utf-8")

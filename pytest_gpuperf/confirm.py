"""Confirmation: a suspected regression is re-measured in a fresh process before it may
fail the run. The in-process figure shares the process's state (allocator, compiled
kernels, a model left resident, the clock the card settled at); a fresh pytest process with
a cold compile cache does not. Only the flagged tests run, with this run's measurement
settings and without baselines; their results come back through a JSON results file."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results import Result

ENV_FLAG = "PYTEST_GPUPERF_CONFIRMATION"
INTERRUPTED = "interrupted (Ctrl-C) before the fresh process finished"
RUN_OPTIONS = ("gpu_profile", "gpuperf_emulate")  # run-wide options the fresh process repeats


# What the fresh process is not given of the run's command line (the rest, a user's own
# options included, it is): pytest-xdist's options (it runs no workers), the cache's (it runs
# with -p no:cacheprovider), the run's outputs (it must not write over them), coverage (its
# data file is the run's), and what would keep it from running the tests or wait at a prompt.
DROPPED_FLAGS = frozenset({
    "-f", "--looponfail", "-d", "--distload", "--loadscope-reorder", "--no-loadscope-reorder",
    "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--cache-clear",
    "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--sw-reset", "--stepwise-reset",
    "--pdb", "--trace", "--setup-only", "--setup-plan", "--collect-only", "--co",
    "--self-contained-html", "--benchmark-autosave", "--cov-append", "--cov-branch",
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
    "--gpuperf-json", "--gpuperf-html", "--gpuperf-baseline", "--log-file", "--pastebin",
})  # fmt: skip
# value optional (`--cache-show [glob]`): a next word that is not a test path is its value
DROPPED_OPTIONAL_VALUE = frozenset(
    {"--cache-show", "--benchmark-histogram", "--benchmark-cprofile-dump", "--cov", "--debug"}
)
# pytest's own options that take a value, kept with it (a value that looks like a test path
# is not one)
KEPT_WITH_VALUE = frozenset({
    "-k", "-m", "-p", "-o", "-W", "-r", "--deselect", "--ignore", "--ignore-glob",
    "--confcutdir", "--import-mode", "--tb", "--capture", "--maxfail", "--durations",
    "--pythonwarnings", "--override-ini",
})  # fmt: skip


def passed_through(config: Any) -> list[str]:
    """The run's command line less its test paths and what DROPPED_* name, in order."""
    given = [str(a) for a in config.invocation_params.args]
    paths = {str(a) for a in getattr(config, "args", ())}
    out: list[str] = []
    i = 0
    while i < len(given):
        a = given[i]
        if a == "--":  # what follows is test paths
            break
        name = a.split("=", 1)[0] if a.startswith("--") or a.startswith("-n=") else a
        i += 1
        if a in paths:
            continue
        if name in DROPPED_FLAGS:
            continue
        if name in DROPPED_WITH_VALUE:
            if a == name and i < len(given):  # `--opt value`, not `--opt=value`
                i += 1
            continue
        if name in DROPPED_OPTIONAL_VALUE:
            if a == name and i < len(given) and given[i][:1] != "-" and given[i] not in paths:
                i += 1
            continue
        if a in KEPT_WITH_VALUE and i < len(given):  # its value, whatever it looks like
            out += [a, given[i]]
            i += 1
            continue
        if a.startswith("-n") and a[2:].isalnum() and not a.startswith("--"):  # -n4, -nauto
            continue
        out.append(a)
    return out


def _absolute(root: Path, nodeid: str) -> str:
    """`dir/test_x.py::test[a]` as `<root>/dir/test_x.py::test[a]`."""
    path, sep, rest = nodeid.partition("::")
    return str(Path(root) / path) + sep + rest


def _start_dir(config: Any) -> Path:
    """Where the run started (pytest's invocation directory), else its rootdir."""
    params = getattr(config, "invocation_params", None)
    start = getattr(params, "dir", None)
    return Path(start) if start is not None and Path(start).is_dir() else Path(config.rootpath)


def command(config: Any, nodeids: list[str], json_path: Path) -> list[str]:
    """The fresh process's command line: the flagged tests, this run's options (its own and
    a user's, less those `passed_through` leaves out), settings and plugins, the same ini
    file and rootdir, baselines off, results as JSON."""
    from .settings import SETTINGS

    # it starts where the run started (a test's relative paths, a kept `--ignore=x`), so the
    # tests are named by their absolute paths (node ids are relative to the rootdir)
    tests = [_absolute(config.rootpath, n) for n in nodeids]
    args = [sys.executable, "-m", "pytest", *tests, *passed_through(config)]
    args += ["-q", "-p", "no:cacheprovider"]
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
    args += [
        f"--rootdir={config.rootpath}",
        "--gpuperf-baseline=off",
        f"--gpuperf-json={json_path}",
        # the run's own, wherever they came from (addopts too): its own temporary ones
        f"--basetemp={json_path.parent / 'basetemp'}",
    ]
    if getattr(config.option, "xmlpath", None):
        args.append(f"--junitxml={json_path.parent / 'junit.xml'}")
    if config.pluginmanager.hasplugin("xdist"):  # no workers, whatever addopts ask for
        args += ["-n", "0", "--dist", "no"]
    return args


def fresh_process(
    args: list[str], config: Any, env: dict[str, str], timeout: float | None = None
) -> tuple[subprocess.CompletedProcess[str] | None, str | None]:
    """Run a fresh pytest process where the run started, with this environment less
    pytest-xdist's worker variables and the step summary, plus `env`. Returns it, or None
    and why not."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST_XDIST") and k != "GITHUB_STEP_SUMMARY"  # the run's own
    }
    full.update(env)
    try:
        return subprocess.run(
            args,
            cwd=str(_start_dir(config)),
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


def _gpu_of(results: list[Result], nodeids: list[str]) -> str | None:
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
    from .runfile import ResultsFileError, read_run

    budget = 120 + 3 * sum(durations.get(n, 60.0) for n in nodeids)
    with tempfile.TemporaryDirectory(prefix="gpuperf-confirm-") as tmp:
        json_path = Path(tmp) / "confirm.json"
        gpu = _gpu_of(results, nodeids)
        proc, failure = fresh_process(
            command(config, nodeids, json_path),
            config,
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
        try:
            return read_run(json_path)[1].results, None
        except ResultsFileError as exc:
            return None, f"the fresh process's results could not be read: {exc}"

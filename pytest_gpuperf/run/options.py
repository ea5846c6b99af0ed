"""The run-wide options, resolved from the command line and the ini file once
(plugin/options.py declares and resolves them; the run's state reads them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.settings import FALSE_ALARM, MAX_PAIRED_ROUNDS

AUTO = "auto"
BASELINE_MODES = ("auto", "compare", "save", "off")
PAIRED_MODES = ("auto", "off")  # the paired stage (paired/stage.py): where it can run, or never
# the files a run writes where its command line says, (option, help), declared here for the
# option table (plugin/options.py); Options.output_files gives their paths
OUTPUT_FILES = (
    ("--gpuperf-json", "write results and verdicts as JSON to PATH"),
    ("--gpuperf-html", "write a self-contained HTML report of the run (tables and charts) to PATH"),
    (
        "--gpuperf-markdown",
        "write the verdicts as markdown to PATH, fitted to a GitHub pull-request comment "
        "(worst first, with the commands that reproduce a failure; post it with "
        "gh pr comment PR --body-file PATH)",
    ),
)

# the nightly history's directory (history/record.py): every run given it is recorded there
HISTORY = (
    "--gpuperf-history",
    "record this run (judged or saved) into the nightly history DIR, one file per run, "
    "relative to the rootdir; read it with gpuperf history DIR",
)


class Options:
    """Run-wide options, resolved from the command line and the ini file.

    (Plain classes here, not dataclasses: building dataclasses at import time costs
    milliseconds that every pytest run with the plugin installed would pay.)
    """

    def __init__(
        self,
        profile: str = AUTO,
        allow_mismatch: bool = False,
        baseline_mode: str = "auto",  # auto: compare when the profile's baseline file exists
        baseline_dir: Path = Path("baselines"),
        warn_only: bool = False,
        json_path: Path | None = None,
        html_path: Path | None = None,
        emulate: str | None = None,  # profile whose memory capacity is emulated
    ) -> None:
        self.profile = profile
        self.allow_mismatch = allow_mismatch
        self.baseline_mode = baseline_mode
        self.baseline_dir = baseline_dir
        self.warn_only = warn_only
        self.strict = False  # fail the run on a gated figure left undecided (--gpuperf-strict)
        self.json_path = json_path
        self.html_path = html_path
        self.emulate = emulate
        self.markdown_path: Path | None = None  # --gpuperf-markdown
        self.profile_source = "--gpu-profile"  # where the profile was named, for errors
        self.false_alarm = FALSE_ALARM  # the whole run's false-alarm rate (Bonferroni over metrics)
        self.confirm = True  # re-measure a suspected regression in a fresh process
        self.paired = "auto"  # the paired stage against the baseline's commit (paired/stage.py)
        self.paired_rounds = 6
        self.paired_budget: float | None = None  # seconds; None: the run's test time (paired.py)
        self.paired_setup: str | None = None  # a shell command run in the base worktree first
        self.explicit_dir = False  # the baseline directory was named, not the default
        self.rootdir: Path | None = None  # the run's rootdir (a re-run command names paths by it)
        self.save_shared = False  # save results measured on a GPU another process used
        self.xdist_workers = 0  # pytest-xdist's workers (-n): CPU figures measured side by side
        # why a baseline entry is not comparable (the users' hook); None: the built-in rule
        self.incomparable: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None

    def set_paired(self, rounds: tuple[Any, str], budget: tuple[Any, str],
                   setup: tuple[Any, str] = (None, "")) -> str | None:  # fmt: skip
        """The paired stage's rounds, budget and setup command from their (value, where it
        was given); the problem with one, naming where it was given, or None."""
        (n, n_src), (b, b_src) = rounds, budget
        cmd = setup[0]
        self.paired_setup = (str(cmd).strip() or None) if cmd is not None else None
        self.paired_rounds = int(str(n).strip()) if str(n).strip().isdigit() else -1
        if not 2 <= self.paired_rounds <= MAX_PAIRED_ROUNDS:
            return f"{n_src}={n!r}: must be a whole number from 2 to {MAX_PAIRED_ROUNDS}"
        if b is None or str(b).strip() == "":
            self.paired_budget = None
            return None
        try:
            self.paired_budget = float(str(b).strip())
        except ValueError:
            self.paired_budget = -1.0
        if not 10 <= self.paired_budget < 1e6:
            return f"{b_src}={b!r}: must be a number of seconds from 10 to 999999"
        return None

    def output_files(self) -> list[tuple[str, Path | None]]:
        """(option, path) of each file of OUTPUT_FILES; a None path: not asked for."""
        paths = (self.json_path, self.html_path, self.markdown_path)
        return [(flag, path) for (flag, _), path in zip(OUTPUT_FILES, paths, strict=True)]

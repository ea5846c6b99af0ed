"""Every option of the plugin, declared once: the pytest command line, the ini file and the
`gpuperf` command's arguments are built from OPTIONS (and the measurement settings from
settings.SETTINGS), so a name, a default or a help text is written in one place.

One prefix, `--gpuperf-*`, except `--gpu-profile`, the documented spelling. The old
`--gpu-*` spellings still work, hidden from `--help`, with a deprecation warning naming the
new one (`deprecated` below).

Also here: the per-run session built from the options (get_session). No torch, no NVML."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import (
    FALSE_ALARM,
    SETTINGS,
    SettingError,
    false_alarm_rate,
    fraction,
    parse_layer,
)
from ..run.options import AUTO, BASELINE_MODES, HISTORY, OUTPUT_FILES, PAIRED_MODES, Options
from ..run.session import GpuPerfSession

GROUP = ("gpuperf", "GPU performance regression testing (pytest-gpuperf)")


class GpuperfDeprecationWarning(pytest.PytestDeprecationWarning):
    """An option spelling or a fixture name of pytest-gpuperf that will be removed."""


class Option:
    """One option. `dest` is its name on the pytest command line (config.getoption) and in
    this table; `ini` its ini key, when it has one, whose default is `default`; `cli` its
    spelling in the `gpuperf` command, when it has one; `deprecated` old spellings."""

    __slots__ = ("choices", "cli", "default", "default_text", "deprecated", "dest", "flag",
                 "help", "ini", "ini_type", "metavar", "switch")  # fmt: skip

    def __init__(
        self,
        flag: str,
        help: str,
        *,
        dest: str | None = None,
        default: Any = None,
        switch: bool = False,  # a flag without a value (store_true)
        ini: str | None = None,
        ini_type: str | None = None,
        metavar: str | None = None,
        choices: tuple[str, ...] | None = None,
        cli: str | None = None,
        deprecated: tuple[str, ...] = (),
        default_text: str | None = None,  # for --help, when one value cannot say it
    ) -> None:
        self.flag = flag
        self.dest = dest or flag.lstrip("-").replace("-", "_")
        self.help = help
        self.default = default
        self.switch = switch
        self.ini = ini
        self.ini_type = ini_type
        self.metavar = metavar
        self.choices = choices
        self.cli = cli
        self.deprecated = deprecated
        self.default_text = default_text

    def help_text(self) -> str:
        """The help with its default and ini key, from the declared values (escaped for
        argparse, which expands %-formats in help texts)."""
        extra = []
        if self.default_text:
            extra.append(f"default: {self.default_text}")
        elif self.default is not None and not (self.switch and self.default is False):
            extra.append(f"default: {self.default!r}")
        if self.ini:
            extra.append(f"ini: {self.ini}")
        return _escaped(self.help) + (f" ({'; '.join(extra)})" if extra else "")


OPTIONS: tuple[Option, ...] = (
    Option(
        "--gpu-profile",
        "GPU profile the results belong to (baselines/<profile>.json); 'auto' picks the "
        "profile that matches the detected device. A named profile that does not match the "
        "device is a usage error unless --gpuperf-allow-mismatch",
        default=AUTO,
        ini="gpuperf_profile",
        metavar="NAME|auto",
    ),
    Option(
        "--gpuperf-allow-mismatch",
        "allow --gpu-profile to name a profile other than the detected device's",
        switch=True,
        default=False,
        deprecated=("--gpu-allow-mismatch",),
    ),
    Option(
        "--gpuperf-emulate",
        "cap usable GPU memory to PROFILE's capacity (e.g. a100-40gb on an H200) to answer "
        "'does it fit, and up to which batch'. Results are marked emulated and kept in their "
        "own baseline file; their speed is this GPU's, not the emulated card's",
        metavar="PROFILE",
        deprecated=("--gpu-emulate",),
    ),
    Option(
        "--gpuperf-info",
        "print the device snapshot (GPU, memory, MIG, driver, CUDA, versions) and the "
        "matching profile, then exit",
        switch=True,
        default=False,
        deprecated=("--gpu-info",),
    ),
    Option(
        "--gpuperf-profiles",
        "list the known GPU profiles (built-in and from pyproject.toml), then exit",
        switch=True,
        default=False,
        deprecated=("--gpu-profiles",),
    ),
    Option(
        "--gpuperf-baseline",
        "auto: compare with baselines/<profile>.json when it exists; compare: require it; "
        "save: record this run's results into it (sessions are appended to each benchmark's "
        "history, other entries kept); off: neither",
        default="auto",
        ini="gpuperf_baseline",
        choices=BASELINE_MODES,
    ),
    Option(
        "--gpuperf-baseline-dir",
        "directory of the baseline files, relative to the rootdir",
        default="baselines",
        ini="gpuperf_baseline_dir",
        metavar="DIR",
    ),
    Option(
        "--gpuperf-save-gpu-shared",
        "save results flagged gpu-shared (another process ran on the GPU while they were "
        "measured) into the baseline; without it they are left out and the save fails",
        switch=True, default=False,
    ),
    Option(
        "--gpuperf-warn-only",
        "report regressions without failing",
        switch=True, default=False, ini="gpuperf_warn_only", ini_type="bool", cli="--warn-only",
    ),
    Option(
        "--gpuperf-strict",
        "fail the run on any gated figure it left undecided (figures undecided by design "
        "are listed, not counted): a hard gate, for teams that want one",
        switch=True, default=False, ini="gpuperf_strict", ini_type="bool",
    ),
    *(Option(flag, help, metavar="PATH") for flag, help in OUTPUT_FILES),
    Option(*HISTORY, ini="gpuperf_history", metavar="DIR"),
    Option(
        "--gpuperf-plan",
        "list the selected benchmarks with their expected time (the test durations the "
        "baseline recorded; 'unknown' where none) and the total, then end without running",
        switch=True, default=False,
    ),
    Option(
        "--gpuperf-false-alarm",
        "the whole run's false-alarm rate: each of the m judged baseline metrics is tested "
        "at confidence 1 - RATE/m (Bonferroni), at least 99%",
        default=FALSE_ALARM,
        ini="gpuperf_false_alarm",
        metavar="RATE",
        cli="--false-alarm",
    ),
    Option(
        "--gpuperf-paired",
        "auto: re-measure the throughput figures the baseline's history leaves inconclusive, "
        "and check those it finds changed, against a build of the baseline's commit on this "
        "machine, in paired rounds (the "
        "gate's second stage; it runs where the baseline recorded a commit); off: never",
        default="auto",
        ini="gpuperf_paired",
        choices=PAIRED_MODES,
    ),
    Option(
        "--gpuperf-paired-rounds",
        "paired rounds of the second stage, 2 to 50",
        default=6,
        ini="gpuperf_paired_rounds",
        metavar="N",
    ),
    Option(
        "--gpuperf-paired-budget",
        "seconds the second stage may take, 10 to 999999; fewer rounds measured when the asked "
        "ones do not fit, none under about 50 s (default: the run's own test time, at least 270)",
        default=None,
        ini="gpuperf_paired_budget",
        metavar="SECONDS",
    ),
    Option(
        "--gpuperf-paired-setup",
        "a shell command run in the second stage's worktree of the baseline's commit before "
        "its rounds (e.g. 'git submodule update --init', an in-place build); if it fails, the "
        "first stage's verdicts stand",
        default=None,
        ini="gpuperf_paired_setup",
        metavar="CMD",
    ),
    Option(
        "--gpuperf-no-confirm",
        "fail on a suspected regression without re-measuring it in a fresh process first "
        "(by default the flagged tests are re-measured; ini gpuperf_confirm = false does the "
        "same as this flag)",
        switch=True,
        default=False,
    ),
)
BY_DEST = {o.dest: o for o in OPTIONS}
# ini keys without a command-line option of their own name
INI_ONLY = (("gpuperf_confirm", "re-measure a suspected regression in a fresh process", True),)


def setting_option(name: str) -> Option:
    """The command-line option of a measurement setting (settings.SETTINGS)."""
    s = next(s for s in SETTINGS if s.name == name and s.cli)
    opt = Option(
        "--gpuperf-" + name.replace("_", "-"),
        s.help,
        dest=f"gpuperf_{name}",
        default=s.cuda if s.cuda == s.cpu else None,
        default_text=None if s.cuda == s.cpu else f"{s.cuda!r} on CUDA, {s.cpu!r} on the CPU",
        ini=f"gpuperf_{name}",
        metavar="VALUE",
        cli="--" + name.replace("_", "-") if name in ("tolerance", "memory_tolerance") else None,
    )
    return opt


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(*GROUP)
    for opt in OPTIONS:
        kwargs: dict[str, Any] = {"dest": opt.dest, "help": opt.help_text()}
        if opt.switch:
            kwargs.update(action="store_true", default=None)
        else:
            kwargs.update(action="store", default=None, metavar=opt.metavar)
            if opt.choices:
                kwargs["choices"] = opt.choices
        group.addoption(opt.flag, **kwargs)
        for i, old in enumerate(opt.deprecated):
            hidden = {**kwargs, "dest": _alias_dest(opt, i), "help": argparse.SUPPRESS}
            group.addoption(old, **hidden)
        if opt.ini:
            ini_help = f"default for {opt.flag}"
            if opt.ini_type == "bool":
                parser.addini(opt.ini, ini_help, type="bool", default=opt.default)
            else:
                parser.addini(opt.ini, ini_help, default=opt.default)
    for ini, help, default in INI_ONLY:
        parser.addini(ini, help, type="bool", default=default)
    for setting in SETTINGS:
        if setting.cli:
            opt = setting_option(setting.name)
            group.addoption(
                opt.flag,
                action="store",
                default=None,
                dest=opt.dest,
                metavar=opt.metavar,
                help=opt.help_text(),
            )
            parser.addini(opt.ini or opt.dest, setting.help, default=None)


def _alias_dest(opt: Option, index: int) -> str:
    return f"{opt.dest}__deprecated{index}"


def resolve_aliases(config: pytest.Config) -> list[str]:
    """Copy each deprecated spelling given on the command line onto its new option (the new
    spelling wins when both are given); return one line per spelling used."""
    used = []
    for opt in OPTIONS:
        for i, old in enumerate(opt.deprecated):
            value = config.getoption(_alias_dest(opt, i), None)
            if value is None:
                continue
            used.append(f"{old} is deprecated: use {opt.flag}")
            if config.getoption(opt.dest) is None:
                setattr(config.option, opt.dest, value)
            setattr(config.option, _alias_dest(opt, i), None)  # said once
    return used


def warn_deprecated(config: pytest.Config, lines: list[str]) -> None:
    for line in lines:
        config.issue_config_time_warning(GpuperfDeprecationWarning(f"gpuperf: {line}"), 2)


def add_cli_arguments(
    parser: argparse.ArgumentParser, dests: tuple[str, ...], *, unset: str | None = None
) -> None:
    """The `gpuperf` command's spelling of these options (by dest, or a setting's dest),
    with their declared defaults; `unset`: the number options have no default, and this
    says what leaving them out means."""
    for dest in dests:
        opt = BY_DEST.get(dest) or setting_option(dest.removeprefix("gpuperf_"))
        assert opt.cli is not None, dest
        if opt.switch:
            parser.add_argument(opt.cli, action="store_true", help=_escaped(opt.help))
            continue
        default = None if unset else _number(opt.default)
        text = _escaped(opt.help) + (f" (default: {unset})" if unset else " (default: %(default)r)")
        parse = _cli_rate if dest == "gpuperf_false_alarm" else _cli_fraction
        parser.add_argument(opt.cli, type=parse, default=default, help=text, metavar=opt.metavar)


def _escaped(text: str) -> str:
    return text.replace("%", "%%")


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _cli_fraction(text: str) -> float:
    try:
        return fraction(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cli_rate(text: str) -> float:
    try:
        return false_alarm_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ------------------------------------------------------------------- the run's session

SESSION_KEY = pytest.StashKey[GpuPerfSession]()


def get_session(config: pytest.Config) -> GpuPerfSession:
    if SESSION_KEY not in config.stash:
        resolve_aliases(config)
        config.stash[SESSION_KEY] = _make_session(config)
    return config.stash[SESSION_KEY]


def option_value(config: pytest.Config, dest: str) -> tuple[Any, str]:
    """A value from the command line, else the ini file, and a name for where it came from."""
    opt = BY_DEST[dest]
    value = config.getoption(dest)
    if value is not None or opt.ini is None:
        return value, opt.flag
    return config.getini(opt.ini), ini_source(config, opt.ini)


def ini_source(config: pytest.Config, key: str) -> str:
    """Where an ini value came from, for an error: `-o KEY` when one of the run's `-o` /
    `--override-ini` set it (the command line, addopts or PYTEST_ADDOPTS), else the ini
    file and the key."""
    overrides = getattr(config.option, "override_ini", None) or ()
    if any(str(o).split("=", 1)[0].strip() == key for o in overrides):
        return f"-o {key}"
    return f"{config.inipath}: {key}" if config.inipath is not None else key


def _make_session(config: pytest.Config) -> GpuPerfSession:
    profile, profile_src = option_value(config, "gpu_profile")
    mode = config.getoption("gpuperf_baseline") or config.getini("gpuperf_baseline") or "auto"
    explicit_dir = config.getoption("gpuperf_baseline_dir")
    directory = Path(explicit_dir or config.getini("gpuperf_baseline_dir"))
    json_path = config.getoption("gpuperf_json")
    opts = Options(
        profile=str(profile).strip(),
        allow_mismatch=bool(config.getoption("gpuperf_allow_mismatch")),
        baseline_mode=str(mode).strip(),
        baseline_dir=directory if directory.is_absolute() else config.rootpath / directory,
        json_path=Path(json_path) if json_path else None,
        html_path=Path(html) if (html := config.getoption("gpuperf_html")) else None,
        emulate=(config.getoption("gpuperf_emulate") or "").strip() or None,
    )
    opts.profile_source = profile_src
    opts.markdown_path = Path(md) if (md := config.getoption("gpuperf_markdown")) else None
    opts.explicit_dir = bool(explicit_dir) or directory != Path("baselines")
    opts.rootdir, opts.save_shared = config.rootpath, config.getoption("gpuperf_save_gpu_shared")
    pyproject = Path(config.rootpath, "pyproject.toml")
    sess = GpuPerfSession(opts, pyproject if pyproject.is_file() else None)
    sess.config = config
    opts.incomparable = sess.incomparable  # the baseline's judge asks the users' hook
    sess.layer_error = _option_problem(config, opts) or _output_clash(config, sess)
    if sess.layer_error:
        return sess
    ini_raw = {s.name: config.getini(f"gpuperf_{s.name}") for s in SETTINGS if s.cli}
    cli_raw = {s.name: config.getoption(f"gpuperf_{s.name}") for s in SETTINGS if s.cli}
    ini_raw = {k: v for k, v in ini_raw.items() if v}
    given = {k: ini_source(config, f"gpuperf_{k}") for k in ini_raw}  # -o KEY, or the file's
    try:
        sess.ini_layer = parse_layer(
            ini_raw,
            str(config.inipath or "ini file"),
            {k: where for k, where in given.items() if where.startswith("-o ")},
        )
        sess.cli_layer = parse_layer(
            {k: v for k, v in cli_raw.items() if v is not None}, "command line"
        )
    except SettingError as exc:
        sess.layer_error = str(exc)
    return sess


def _option_problem(config: pytest.Config, opts: Options) -> str | None:
    """What is wrong with the run-wide options, naming where each came from, or None."""
    if not opts.profile:
        return (
            f"{opts.profile_source} is empty: name a GPU profile (see --gpuperf-profiles) or "
            "'auto' for the detected one"
        )
    if opts.baseline_mode not in BASELINE_MODES:
        return (
            f"{ini_source(config, 'gpuperf_baseline')}={opts.baseline_mode!r}: use one of "
            f"{', '.join(BASELINE_MODES)}"
        )
    for dest in ("gpuperf_warn_only", "gpuperf_strict"):
        value = config.getoption(dest)
        if value is None:
            try:
                value = config.getini(dest)
            except (ValueError, pytest.UsageError) as exc:
                return f"{ini_source(config, dest)}: {exc}; use true or false"
        setattr(opts, dest[len("gpuperf_"):], bool(value))
    if config.getoption("gpuperf_no_confirm"):
        opts.confirm = False
    else:
        try:
            opts.confirm = bool(config.getini("gpuperf_confirm"))
        except (ValueError, pytest.UsageError) as exc:
            return f"{ini_source(config, 'gpuperf_confirm')}: {exc}; use true or false"
    named = opts.explicit_dir and opts.baseline_mode in ("auto", "compare")
    if named and not opts.baseline_dir.is_dir():  # a typo must not pass as "no baseline yet"
        return (
            f"--gpuperf-baseline-dir: {opts.baseline_dir} is not a directory (relative paths "
            f"are resolved against the rootdir {config.rootpath}); create it, or save a "
            "baseline there with --gpuperf-baseline=save"
        )
    paired, paired_src = option_value(config, "gpuperf_paired")
    if paired not in PAIRED_MODES:
        return f"{paired_src}={paired!r}: use one of {', '.join(PAIRED_MODES)}"
    opts.paired = str(paired)
    if problem := opts.set_paired(option_value(config, "gpuperf_paired_rounds"),
                                  option_value(config, "gpuperf_paired_budget"),
                                  option_value(config, "gpuperf_paired_setup")):  # fmt: skip
        return problem
    rate, rate_src = option_value(config, "gpuperf_false_alarm")
    try:
        opts.false_alarm = false_alarm_rate(rate)
    except ValueError as exc:
        return f"{rate_src}={rate!r}: {exc}"
    for flag, path in opts.output_files():
        if path is not None and path.is_dir():
            return f"{flag}={path}: is a directory; give a file path"
    return None


def run_outputs(config: pytest.Config, sess: GpuPerfSession) -> list[tuple[str, Any]]:
    """(option, path) of every file this run writes (a None path: not asked for)."""
    import os

    bench = None
    if config.pluginmanager.hasplugin("benchmark"):
        bench = config.getoption("benchmark_json", None)
        bench = getattr(bench, "name", bench)  # pytest-benchmark < 5.3: an open file
    return [*sess.options.output_files(),
            ("--benchmark-json", bench if isinstance(bench, str | os.PathLike) else None),
            ("--junitxml", getattr(config.option, "xmlpath", None)),
            ("GITHUB_STEP_SUMMARY", os.environ.get("GITHUB_STEP_SUMMARY"))]  # fmt: skip


def _output_clash(config: pytest.Config, sess: GpuPerfSession) -> str | None:
    """An output of this run on a baseline file (outputs/paths.py), an input, a path the
    command line names to collect, a source or configuration file, or another output."""
    outputs = run_outputs(config, sess)
    if not any(path for _, path in outputs[:4]):
        return None  # the step summary and JUnit XML are checked beside one of these
    import contextlib

    from ..outputs.paths import first_clash
    names = {sess.options.profile}
    with contextlib.suppress(pytest.UsageError):  # reported at session start, naming it
        names.update(sess.registry.names())
    here = config.invocation_params.dir
    inputs = [("the ini file", config.inipath), ("the profiles file", sess.pyproject),
              *(("the test path", here / a.split("::")[0]) for a in config.args)]  # fmt: skip
    return first_clash(outputs, inputs, [("--gpuperf-baseline-dir", sess.options.baseline_dir,
                                          names)])  # fmt: skip

"""Per-run state: resolved options, the profile registry and the device snapshot.

Everything here is lazy. Nothing touches NVML or torch until a test, fixture or option
needs to know the device, so a run with no GPU tests pays nothing for the plugin.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when first needed: a run without GPU tests never loads them
    from .device import DeviceSnapshot
    from .profiles import Profile, Registry

AUTO = "auto"


BASELINE_MODES = ("auto", "compare", "save", "off")


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
        emulate: str | None = None,  # profile whose memory capacity is emulated
    ) -> None:
        self.profile = profile
        self.allow_mismatch = allow_mismatch
        self.baseline_mode = baseline_mode
        self.baseline_dir = baseline_dir
        self.warn_only = warn_only
        self.json_path = json_path
        self.emulate = emulate


class GpuPerfSession:
    """The per-run state, registered as a plugin (hashable by identity)."""

    def __init__(self, options: Options, pyproject: Path | None) -> None:
        self.options = options
        self.pyproject = pyproject
        self.ini_layer: dict[str, Any] = {}
        self.cli_layer: dict[str, Any] = {}
        self.layer_error: str | None = None
        self.results: list[dict[str, Any]] = []  # from reports, all workers
        self.extra: list[dict[str, Any]] = []
        self.started = time.time()
        self.save_failed = False  # a requested baseline save that did not happen
        self.baseline: Any = None  # baselines.BaselineFile once loaded
        self.baseline_path: Path | None = None
        self.baseline_profile: str | None = None
        self.baseline_note: str | None = None
        self.baseline_ready = False
        self.collected: set[str] = set()
        self.emulation_applied = False
        self.finish_notes: list[str] = []
        self._registry: Registry | None = None
        self._snapshot: DeviceSnapshot | None = None

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from .profiles import ProfileError, load_registry

            try:
                self._registry = load_registry(self.pyproject)
            except ProfileError as exc:
                raise pytest.UsageError(f"gpuperf: {exc}") from None
        return self._registry

    def snapshot(self) -> DeviceSnapshot:
        if self._snapshot is None:
            from .device import detect

            self._snapshot = detect()
        return self._snapshot

    def set_snapshot(self, snap: DeviceSnapshot) -> None:
        """Replace detection (tests of the plugin, and callers that detect via torch)."""
        self._snapshot = snap

    @property
    def snapshot_taken(self) -> bool:
        return self._snapshot is not None

    def detected_profile(self) -> Profile | None:
        return self.registry.match(self.snapshot())

    def profile(self) -> Profile | None:
        """The profile results belong to: the one asked for, or the detected one."""
        if self.options.profile == AUTO:
            return self.detected_profile()
        return self.registry.get(self.options.profile)

    def check_profile(self) -> None:
        """Validate --gpu-profile: known name, and matching the device unless allowed."""
        if self.options.profile == AUTO:
            return
        from .profiles import ProfileError

        try:
            wanted = self.registry.get(self.options.profile)
        except ProfileError as exc:
            raise pytest.UsageError(f"--gpu-profile: {exc}") from None
        if self.options.allow_mismatch:
            return
        snap = self.snapshot()
        detected = self.registry.match(snap)
        if detected is None or detected.name != wanted.name:
            got = detected.name if detected else "no known profile"
            raise pytest.UsageError(
                f"--gpu-profile={wanted.name} does not match this machine: detected "
                f"{snap.describe()} (profile: {got}). Run on a {wanted.description}, use "
                f"--gpu-profile=auto, or pass --gpu-allow-mismatch to compare anyway."
            )

    # --------------------------------------------------------------------- emulation

    def emulated_profile(self) -> Profile | None:
        if not self.options.emulate:
            return None
        return self.registry.get(self.options.emulate)

    def vram_cap(self) -> int | None:
        """Bytes of GPU memory the emulated card has, or None when not emulating."""
        prof = self.emulated_profile()
        if prof is None or prof.memory_gib is None:
            return None
        return int(prof.memory_gib * 2**30)

    def check_emulation(self) -> None:
        """--gpu-emulate needs a known profile with a memory size, smaller than this GPU."""
        if not self.options.emulate:
            return
        from .profiles import ProfileError

        try:
            prof = self.registry.get(self.options.emulate)
        except ProfileError as exc:
            raise pytest.UsageError(f"--gpu-emulate: {exc}") from None
        if prof.memory_gib is None:
            raise pytest.UsageError(
                f"--gpu-emulate={prof.name}: the profile has no memory size to emulate"
            )
        gpu = self.snapshot().primary
        if gpu is None:
            raise pytest.UsageError(
                f"--gpu-emulate={prof.name} caps GPU memory, and this run has no GPU "
                f"({self.snapshot().note or 'CPU only'})"
            )
        cap = self.vram_cap()
        if gpu.memory_total is not None and cap is not None and cap > gpu.memory_total:
            raise pytest.UsageError(
                f"--gpu-emulate={prof.name} ({prof.memory_gib:g} GiB) is larger than this "
                f"GPU ({gpu.name}, {gpu.memory_total / 2**30:.1f} GiB): cannot emulate it"
            )

    def apply_emulation(self) -> None:
        """Cap this process's CUDA allocator to the emulated card's memory, less what is
        already in use here (the CUDA context: the emulated card would have one too)."""
        if self.emulation_applied or not self.options.emulate:
            return
        import torch

        cap = self.vram_cap()
        if cap is None or not torch.cuda.is_available():
            return
        free, total = torch.cuda.mem_get_info()
        usable = cap - (total - free)
        torch.cuda.set_per_process_memory_fraction(max(0.0, min(1.0, usable / total)))
        self.emulation_applied = True

    # --------------------------------------------------------------------- baselines

    @property
    def comparing(self) -> bool:
        return self.baseline_ready and self.options.baseline_mode in ("auto", "compare")

    def prepare_baseline(self) -> None:
        """Find and validate this profile's baseline file (at collection, before any test).

        A file that is unreadable, truncated, of an unknown schema, or holds NaN or
        negative values stops the run with a usage error naming it: nothing is compared
        against it and nothing overwrites it.
        """
        if self.baseline_ready or self.options.baseline_mode == "off":
            return
        from .baselines import BaselineError, baseline_path, load

        prof = self.profile()
        if prof is None:
            self.baseline_note = (
                f"no GPU profile matches {self.snapshot().describe()}: results are not "
                "compared or saved; add a profile in pyproject.toml ([tool.gpuperf.profiles])"
            )
            self.baseline_ready = True
            return
        name = prof.name
        if self.options.emulate:  # emulated results never mix with the card's own
            name = f"{prof.name}@{self.options.emulate}"
        path = baseline_path(self.options.baseline_dir, name)
        self.baseline_path, self.baseline_profile = path, name
        try:
            self.baseline = load(path)
        except BaselineError as exc:
            raise pytest.UsageError(f"gpuperf: {exc}") from None
        if self.baseline is None and self.options.baseline_mode == "compare":
            raise pytest.UsageError(
                f"gpuperf: --gpuperf-baseline=compare, but there is no baseline file {path} "
                f"for profile {prof.name!r}; save one with --gpuperf-baseline=save"
            )
        if self.baseline is not None and self.baseline.profile != name:
            raise pytest.UsageError(
                f"gpuperf: baseline file {path}: belongs to profile "
                f"{self.baseline.profile!r}, not {name!r}"
            )
        self.baseline_ready = True

    def environment(self, emulated: str | None = None) -> dict[str, Any]:
        from .gate import environment

        return environment(self.snapshot().to_dict(), emulated)

    def judge(
        self, key: str, metrics: dict[str, dict[str, Any]], cfg: Any
    ) -> dict[str, dict[str, Any]]:
        """Verdict dicts per metric of one benchmark against the baseline, with the
        tolerances of `cfg` (the test's resolved settings: call > marker > CLI > ini)."""
        if not self.comparing:
            return {}
        from .gate import compare, failed_verdicts, verdict_dict

        entries = self.baseline.entries if self.baseline is not None else {}
        base = entries.get(key)
        if not metrics:
            verdicts = failed_verdicts(base, "the benchmark produced no result")
        else:
            verdicts = compare(
                metrics,
                self.environment(self.options.emulate),
                base,
                tolerance=cfg.tolerance,
                memory_tolerance=cfg.memory_tolerance,
                allow_cross_gpu=self.options.allow_mismatch,
            )
        out = {}
        for name, v in verdicts.items():
            hist = len(base["metrics"].get(name, {}).get("history", [])) if base else 0
            out[name] = verdict_dict(v, hist)
        return out

    def failure_lines(self, results: list[Any], extras: list[dict[str, Any]]) -> list[str]:
        """One readable line per regressed metric of a test's results."""
        from .gate import failure_line, metrics_of, metrics_of_extra
        from .verdict import Verdict

        lines = []
        entries = self.baseline.entries if self.baseline is not None else {}
        items = [(r.key, metrics_of(r), r.verdicts, r.remeasured) for r in results]
        items += [(e["key"], metrics_of_extra(e), e.get("verdicts", {}), 0) for e in extras]
        for key, metrics, verdicts, remeasured in items:
            for name, vd in verdicts.items():
                if vd.get("status") != "regressed" or name not in metrics:
                    continue
                v = Verdict(**{k: vd[k] for k in Verdict.__dataclass_fields__})
                lines.append(
                    failure_line(
                        key,
                        name,
                        v,
                        metrics[name],
                        entries[key],
                        self.baseline_profile or "?",
                        remeasured > 0,
                    )
                )
        return lines

    def save_baseline(self) -> str | None:
        """Merge this run's results into the profile's baseline file (save mode)."""
        if self.options.baseline_mode != "save" or not (self.results or self.extra):
            return None
        self.prepare_baseline()  # under pytest-xdist the controller collected nothing
        if self.baseline_path is None:
            return None
        from datetime import UTC, datetime

        from .baselines import BaselineError, save
        from .gate import entry, metrics_of, metrics_of_extra
        from .results import Result

        now = datetime.now(UTC).isoformat(timespec="seconds")
        commit = _git_commit(self.baseline_path.parent)
        env = self.environment(self.options.emulate)  # one run, one device, one emulation
        updates: dict[str, dict[str, Any]] = {}
        for d in self.results:
            r = Result.from_dict(d)
            metrics = metrics_of(r)
            if not metrics:
                continue
            flags = {
                "launch_bound": r.launch_bound,
                "throttled": r.throttled,
                "emulated": r.emulated,
            }
            updates[r.key] = entry(metrics, env, date=now, commit=commit, flags=flags)
        for e in self.extra:
            updates[e["key"]] = entry(
                metrics_of_extra(e),
                env,
                date=now,
                commit=commit,
                flags={"emulated": e.get("emulated")},
            )
        if not updates:
            return None
        try:
            save(self.baseline_path, self.baseline_profile or "?", updates, now)
        except BaselineError as exc:
            self.save_failed = True
            return f"NOT SAVED: {exc}"
        except (OSError, ValueError) as exc:  # no directory, no permission, lock timeout
            self.save_failed = True
            return f"NOT SAVED: baseline file {self.baseline_path}: {type(exc).__name__}: {exc}"
        return f"saved {len(updates)} benchmark(s) to {self.baseline_path}"

    def missing(self) -> list[str]:
        """Baseline entries of collected tests that produced no result in this run."""
        if not self.comparing or self.baseline is None:
            return []
        measured = {d["key"] for d in self.results} | {e["key"] for e in self.extra}
        out = []
        for key in self.baseline.entries:
            node = key.split("::")
            for cut in range(len(node), 0, -1):
                if "::".join(node[:cut]) in self.collected:
                    if key not in measured:
                        out.append(key)
                    break
        return out

    # ------------------------------------------------------------ hooks (registered plugin)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for r in getattr(report, "gpuperf", None) or ():
            self.results.append(r)
        for r in getattr(report, "gpuperf_extra", None) or ():
            self.extra.append(r)

    def json_payload(self) -> dict[str, Any]:
        snap = self.snapshot()
        prof = self.profile()
        return {
            "schema": "pytest-gpuperf/results-1",
            "device": snap.to_dict(),
            "describe": snap.describe(),
            "profile": prof.name if prof else None,
            "baseline": str(self.baseline_path) if self.baseline_path else None,
            "baseline_mode": self.options.baseline_mode,
            "results": list(self.results),
            "metrics": list(self.extra),
            "missing": self.missing(),
        }

    def _verdict_table(self) -> list[list[str]]:
        from .report import verdict_rows
        from .results import Result

        return verdict_rows([Result.from_dict(r) for r in self.results], self.extra, self.missing())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results and not self.extra:
            return
        from .report import RESULT_HEADER, VERDICT_HEADER, result_rows, table
        from .results import Result

        tr = terminalreporter
        prof = self.profile()
        tr.write_sep("=", "gpuperf results")
        tr.write_line(
            f"device: {self.snapshot().describe()}; profile: {prof.name if prof else 'unknown'}"
        )
        emu = self.emulated_profile()
        if emu is not None:
            tr.write_line(
                f"EMULATING {emu.name}: GPU memory capped to {emu.memory_gib:g} GiB; memory "
                "fits and batch limits are the emulated card's, speed figures this GPU's"
            )
        results = [Result.from_dict(r) for r in self.results]
        for line in table(RESULT_HEADER, result_rows(results)):
            tr.write_line(line)
        for m in self.extra:
            note = f" ({m['note']})" if m.get("note") else ""
            tr.write_line(f"{m['key']}: {m['value']:g} {m['unit']}{note}")
        for r in results:
            for note in r.notes:
                tr.write_line(f"  {r.key}: {note}")
        if self.baseline_note:
            tr.write_line(f"baseline: {self.baseline_note}")
        if self.comparing:
            rows = self._verdict_table()
            where = self.baseline_path if self.baseline is not None else "none yet"
            tr.write_sep("-", f"gpuperf verdicts against baseline {where}")
            for line in table(VERDICT_HEADER, rows):
                tr.write_line(line)
            for r in results:
                for name, v in r.verdicts.items():
                    if v.get("advice"):
                        tr.write_line(f"  {r.key} {name}: inconclusive; to settle: {v['advice']}")
            if self.options.warn_only and any(row[0] == "REGRESSED" for row in rows):
                tr.write_line("regressions reported only (--gpuperf-warn-only): not failing")
        for line in self.finish_notes:
            tr.write_line(line)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # the controller saves and reports, from the workers' reports
        note = self.save_baseline()
        if note:
            self.finish_notes.append(f"baseline: {note}")
        if self.save_failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a save asked for must not pass
        self.write_benchmark_json(session.config)
        self.write_reports()

    def write_reports(self) -> None:
        if not self.results and not self.extra:
            return
        from .report import VERDICT_HEADER, json_safe, markdown_table

        if self.options.json_path is not None:
            path = Path(self.options.json_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(json_safe(self.json_payload()), indent=2, default=str))
            self.finish_notes.append(f"gpuperf: wrote {path}")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            prof = self.profile()
            rows = self._verdict_table() if self.comparing else []
            text = [
                f"## gpuperf: {self.snapshot().describe()}",
                f"profile `{prof.name if prof else 'unknown'}`, baseline "
                f"`{self.baseline_path or 'none'}`",
                "",
            ]
            if rows:
                text.append(markdown_table(VERDICT_HEADER, rows))
            else:
                from .report import RESULT_HEADER, result_rows
                from .results import Result

                text.append(
                    markdown_table(
                        RESULT_HEADER, result_rows([Result.from_dict(r) for r in self.results])
                    )
                )
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write("\n".join(text) + "\n\n")

    def write_benchmark_json(self, config: pytest.Config) -> None:
        """Put our results into pytest-benchmark's --benchmark-json file.

        pytest-benchmark writes that file only when one of its own benchmarks ran, and our
        pytest_benchmark_update_json hook adds a "gpuperf" section then. When none of its
        benchmarks ran, we write the file in its layout, with its machine and commit info
        from its public hooks, so --benchmark-json always holds the GPU results.
        """
        option = (
            config.getoption("benchmark_json", None)
            if config.pluginmanager.hasplugin("benchmark")
            else None
        )
        if not option or not (self.results or self.extra) or hasattr(config, "workerinput"):
            return
        from .report import json_safe

        # pytest-benchmark >= 5.3 passes a path; older versions an open binary file, closed
        # once it has written to it
        if hasattr(option, "write"):
            if getattr(option, "closed", False):
                return  # it wrote the file, with our section from pytest_benchmark_update_json
            data = self._benchmark_json_skeleton(config)
            data["gpuperf"] = json_safe(self.json_payload())
            option.write(json.dumps(data, indent=2, default=str).encode())
            option.close()
            return
        from pathlib import Path as _Path

        target = _Path(option)
        if target.is_file() and target.stat().st_mtime >= self.started:
            try:
                if "gpuperf" in json.loads(target.read_text(encoding="utf-8")):
                    return
            except ValueError:
                pass
        data = self._benchmark_json_skeleton(config)
        data["gpuperf"] = json_safe(self.json_payload())
        target.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")

    @staticmethod
    def _benchmark_json_skeleton(config: pytest.Config) -> dict[str, Any]:
        """pytest-benchmark's JSON layout, with its machine and commit info (public hooks)."""
        from datetime import UTC, datetime
        from importlib.metadata import version

        hook = config.hook
        machine_info = hook.pytest_benchmark_generate_machine_info(config=config)
        hook.pytest_benchmark_update_machine_info(config=config, machine_info=machine_info)
        commit_info = hook.pytest_benchmark_generate_commit_info(config=config)
        hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
        return {
            "machine_info": machine_info,
            "commit_info": commit_info,
            "benchmarks": [],
            "datetime": datetime.now(UTC).isoformat(),
            "version": version("pytest-benchmark"),
        }


def _git_commit(where: Path) -> str | None:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where if where.exists() else None,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None

"""Does the CPU default see on a busy machine? Issue 64's point 2, tried as a user would.

Beside N busy loops (`python -c "while True: pass"` x N) or beside this repository's
`pytest tests -n 2` (restarted while the trial runs), each try, in a fresh temporary
directory:

- example: README.md's "From a benchmark to a failing regression" (test_example.py): 3
  saves (accepted: exit 0, nothing "NOT SAVED"), an A/A run (UNCHANGED, its exit code, and
  the smallest change the baseline can detect: the verdict's `mde`), SLOW=2 (exit 1?);
- user: a small user file (a 256x256 layernorm+gelu, a tiny transformer encoder layer
  forward, a 32-channel conv), 3 saves, then 25% more work in each (5 calls for 4): failed?
- sleep: `gpu_benchmark(lambda: time.sleep(0.004), work=1, unit="calls")` beside
  --sleep-loops busy loops (load 2-3 on 2 cores): 3 saves accepted? twice the sleep fails?

With --git each try's directory is a git checkout with its test file committed before the
saves, so the paired stage re-measures what the sessions left undecided against a build of
that commit; the slower code is then an edit of the file (the environment variable's
default), not the variable, which both builds would see (a change outside the code).

Prints one table: per target, how many of the tries met it, and the load average seen
(min-max of /proc/loadavg's 1-minute figure, read at each pytest run). Run from the
repository root with the environment the plugin is installed in:

    python tools/cpu_gate_trial.py --tries 10 --loops 8
    python tools/cpu_gate_trial.py --tries 10 --beside-tests
    python tools/cpu_gate_trial.py --tries 10 --loops 0 --targets example --git
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXAMPLE = '''
import os

import torch

SLOW = int(os.environ.get("SLOW", "1"))  # SLOW=2 does the work twice: a 50% slowdown


def test_matmul(gpu_benchmark):
    a = torch.randn(256, 256, device=gpu_benchmark.device)  # the GPU when there is one

    def step():
        for _ in range(SLOW):
            a @ a

    gpu_benchmark(step, work=2 * 256**3, unit="flop")  # measured and reported in TFLOP/s
'''

USER = '''
import os

import torch

REPS = int(os.environ.get("REPS", "4"))  # 5: 25% more work per call


def test_layernorm(gpu_benchmark):
    x, ln = torch.randn(256, 256), torch.nn.LayerNorm(256)
    def step():
        with torch.no_grad():
            for _ in range(REPS):
                torch.nn.functional.gelu(ln(x))
    gpu_benchmark(step, work=4 * x.numel() * 4, unit="bytes")


def test_transformer_layer(gpu_benchmark):
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval()
    x = torch.randn(4, 32, 64)
    def step():
        with torch.no_grad():
            for _ in range(REPS):
                layer(x)
    gpu_benchmark(step, work=4 * 4 * 32, unit="tokens")


def test_conv(gpu_benchmark):
    conv, x = torch.nn.Conv2d(32, 32, 3, padding=1), torch.randn(1, 32, 32, 32)
    def step():
        with torch.no_grad():
            for _ in range(REPS):
                conv(x)
    gpu_benchmark(step, work=4, unit="images")
'''

SLEEP = '''
import os
import time

SLEEP = 0.004 * float(os.environ.get("TIMES", "1"))


def test_sleep(gpu_benchmark):
    gpu_benchmark(lambda: time.sleep(SLEEP), work=1, unit="calls")
'''


class Trial:
    """The pytest runs of one try, in one fresh directory; the load seen at each."""

    def __init__(self, directory: Path, loads: list[float], git: bool = False) -> None:
        self.dir, self.loads, self.git = directory, loads, git

    def start(self, name: str, text: str) -> None:
        """The test file; under --git committed in a new checkout."""
        (self.dir / name).write_text(text)
        if self.git:
            who = ["-c", "user.email=t@t", "-c", "user.name=t"]
            for args in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "base"]):
                subprocess.run(["git", *args], cwd=self.dir, check=True, capture_output=True)

    def slower(self, name: str, text: str, var: str, was: str, now: str) -> dict[str, str]:
        """The slower code: under --git the file edited (`var`'s default `was` -> `now`),
        else the environment variable (returned, for the run)."""
        if not self.git:
            return {var: now}
        old = f'os.environ.get("{var}", "{was}")'
        assert old in text, old
        (self.dir / name).write_text(text.replace(old, f'os.environ.get("{var}", "{now}")'))
        return {}

    def pytest(self, env: dict[str, str], *args: str) -> tuple[int, str, dict]:
        self.loads.append(float(Path("/proc/loadavg").read_text().split()[0]))
        out = self.dir / "run.json"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--gpuperf-json={out}", *args]  # fmt: skip
        r = subprocess.run(cmd, cwd=self.dir, env={**os.environ, **env},
                           capture_output=True, text=True)  # fmt: skip
        data = json.loads(out.read_text()) if out.exists() else {}
        return r.returncode, r.stdout + r.stderr, data

    def saves(self, env: dict[str, str]) -> int:
        accepted = 0
        for _ in range(3):
            rc, text, _ = self.pytest(env, "--gpuperf-baseline=save")
            accepted += rc == 0 and "NOT SAVED" not in text
        return accepted


def verdicts(data: dict) -> list[dict]:
    return [v for r in data.get("results", []) for v in (r.get("verdicts") or {}).values()
            if v.get("status") not in ("info", None)]  # fmt: skip


def try_example(t: Trial, strict: list[str]) -> dict[str, object]:
    t.start("test_example.py", EXAMPLE)
    saved = t.saves({})
    t0 = time.monotonic()
    rc, _, data = t.pytest({}, *strict)
    aa_s = time.monotonic() - t0
    vs = verdicts(data)
    mde = [v.get("mde") for v in vs if v.get("mde") is not None]
    slow_rc, _, _ = t.pytest(t.slower("test_example.py", EXAMPLE, "SLOW", "1", "2"))
    return {
        "3 saves accepted": saved == 3,
        "A/A UNCHANGED" + (" (strict)" if strict else ""): bool(vs) and rc == 0
        and all(v["status"] == "unchanged" for v in vs),
        "SLOW=2 exits 1": slow_rc == 1,
        "detects <= 10%": bool(mde) and max(mde) <= 0.10,
        "_mde": max(mde) if mde else None,
        "_aa": ",".join(v["status"] for v in vs) or "-",  # a false alarm reads "regressed"
        "_aa_s": round(aa_s),
        "_aa_read": ["{:+.2%} ±{:.2%} {} processes".format(
            v.get("change") or 0.0, v.get("uncertainty") or 0.0,
            (v.get("paired") or {}).get("processes", 0)) for v in vs],
        "_aa_rule": [[s.get("rule") for s in v.get("trail") or []][-2:] for v in vs],
    }


def try_user(t: Trial) -> dict[str, object]:
    t.start("test_user.py", USER)
    saved = t.saves({})
    _, _, data = t.pytest(t.slower("test_user.py", USER, "REPS", "4", "5"))
    out: dict[str, object] = {"3 saves accepted": saved == 3}
    for r in data.get("results", []):
        v = (r.get("verdicts") or {}).get("throughput", {})
        name = r["nodeid"].split("::")[-1]
        out[f"25% slower {name} fails"] = v.get("status") == "regressed"
        out[f"_{name}"] = "{} {:+.2%} ±{:.2%} {} processes".format(
            v.get("status"), v.get("change") or 0.0, v.get("uncertainty") or 0.0,
            (v.get("paired") or {}).get("processes", 0))
    return out


def try_sleep(t: Trial) -> dict[str, object]:
    t.start("test_sleep.py", SLEEP)
    saved = t.saves({})
    rc, _, _ = t.pytest(t.slower("test_sleep.py", SLEEP, "TIMES", "1", "2"))
    return {"3 saves accepted": saved == 3, "2x sleep exits 1": rc == 1}


def background(loops: int, beside_tests: bool) -> list[subprocess.Popen]:
    """The other work: `loops` busy loops, or this repository's `pytest tests -n 2` in a
    loop (its own process group, so that it is stopped whole)."""
    if beside_tests:
        cmd = (f"while true; do {sys.executable} -m pytest tests -n 2 -q -p no:cacheprovider "
               ">/dev/null 2>&1; done")  # fmt: skip
        return [subprocess.Popen(["bash", "-c", cmd], cwd=ROOT, start_new_session=True)]
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(loops)]  # fmt: skip


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)  # the group each of them leads
        p.wait()


def run_target(name: str, args: argparse.Namespace, strict: list[str]) -> list[str]:
    loops = args.sleep_loops if name == "sleep" else args.loops
    procs = background(loops, args.beside_tests and name != "sleep")
    loads: list[float] = []
    tally: dict[str, int] = {}
    mdes: list[float] = []
    try:
        time.sleep(args.settle)  # let the load average rise
        for _ in range(args.tries):
            with tempfile.TemporaryDirectory(prefix=f"gpuperf-{name}-") as tmp:
                t = Trial(Path(tmp), loads, args.git)
                got = (try_example(t, strict) if name == "example"
                       else try_user(t) if name == "user" else try_sleep(t))  # fmt: skip
            if isinstance(got.get("_mde"), float):
                mdes.append(got["_mde"])  # type: ignore[arg-type]
            for k, ok in got.items():
                if not k.startswith("_"):
                    tally[k] = tally.get(k, 0) + bool(ok)
            print(f"  {name}: {got}", flush=True)
    finally:
        stop(procs)
    beside = "pytest tests -n 2" if args.beside_tests and name != "sleep" else f"{loops} busy loops"
    beside += ", git checkout" if args.git else ""
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
    rows = [f"| {name} | {k} | {n} of {args.tries} | {beside} | {load} |" for k, n in tally.items()]
    if mdes:
        rows.append(f"| {name} | smallest detectable change (A/A) | "
                    f"{min(mdes) * 100:.1f}-{max(mdes) * 100:.1f}% | {beside} | {load} |")  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--loops", type=int, default=8, help="busy loops beside the trial")
    ap.add_argument("--sleep-loops", type=int, default=2, help="busy loops beside the sleep")
    ap.add_argument("--beside-tests", action="store_true",
                    help="beside `pytest tests -n 2` instead of busy loops")  # fmt: skip
    ap.add_argument("--targets", default="example,user,sleep")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds before the first try")
    ap.add_argument("--git", action="store_true", help="each try in a git checkout (above)")
    args = ap.parse_args()
    helptext = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True,
                              text=True).stdout  # fmt: skip
    strict = ["--gpuperf-strict"] if "--gpuperf-strict" in helptext else []
    rows = ["| target | what | met | beside | load average (1 min) |", "| --- | --- | --- | --- | --- |"]
    for name in args.targets.split(","):
        rows += run_target(name.strip(), args, strict)
    print(textwrap.dedent("\n".join(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

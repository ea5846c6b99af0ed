"""The simulator's noise, fitted to the real sessions and rounds in docs/evidence.

Stage 1 (the baseline's sessions, the run, its confirmation): noise_model.json, the per-metric
fit of the 103-metric H200 suite, brought into the project from ../shared/gate-sim (its
sim.py `load_model`/`simulate` and fit_noise.py, as of 2026-12-07; noise_model.json byte for
byte, sha256 4d17b33a...). In log units, metric m of class c in session s:

    log y[m, s] = a[c, s] + e[m, s],  a ~ N(0, tau_c^2) (one machine/power state a session),
                                      e ~ N(0, sigma_m^2)

The confirmation runs on the run's card (as the plugin confirms): the run's class offsets,
its residual correlated rho_c with the run's (rounds.json `same_card`, by class). The
launch-bound metrics are what the plugin makes of such work: a launch-bound wall time beside
a GPU kernel-time figure, which carries KERNEL_SIGMA between sessions (gate-sim's --lb-gpu).

Stage 2 (the paired rounds): rounds.json (fit_rounds.py, from the real rounds). Each figure
the stage re-measures in a run draws one real figure of its class (kernel time for the
kernel figures): its within-pair sd w and per-process sd p. A round of process pair q:

    log(head / base) = change + u_q + w z,   u_q ~ N(0, p^2), z ~ N(0, 1)

each side a half of the round's noise, around the run's own level (the base build on this
machine), so the base check sees what it would."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CLASSES = ("bandwidth", "compute", "model", "launch-bound", "memory", "recorded")
THROUGHPUT = (0, 1, 2)  # the classes a slowdown is drawn from (and the kernel figures)
KERNEL_SIGMA = 0.0073  # a kernel-time figure's sd between sessions (gate-sim-2026-12-06-onecard)
KERNEL_CLASS = "kernel-time"


@dataclass(frozen=True)
class Noise:
    """The fitted model: per metric its class, sd between sessions, the run's own sd (its
    interval / 1.96), whether it is a kernel-time figure; per class the session offsets' sd
    and the same-card rho; the real rounds' (within, process) sds by class."""

    cls: np.ndarray
    sigma: np.ndarray
    scur: np.ndarray
    kern: np.ndarray  # bool: a launch-bound metric, judged as its kernel-time figure
    tau: np.ndarray
    rho: np.ndarray  # per metric
    rounds: dict[str, np.ndarray]  # class -> (figures x 2): within-pair sd, per-process sd
    test_seconds: np.ndarray  # per metric: its share of its real test's first-stage seconds
    zero: bool = False  # no noise at all (a structural check)

    @property
    def metrics(self) -> int:
        return len(self.sigma)

    def round_class(self, j: int) -> str:
        return KERNEL_CLASS if self.kern[j] else CLASSES[int(self.cls[j])]


def load(zero: bool = False) -> Noise:
    """The model from noise_model.json and rounds.json; `zero`: every sd 0."""
    d = json.loads((HERE / "noise_model.json").read_text(encoding="utf-8"))
    fit = json.loads((HERE / "rounds.json").read_text(encoding="utf-8"))
    ms = d["metrics"]
    cls = np.array([CLASSES.index(m["cls"]) for m in ms])
    kern = cls == 3
    sigma = np.array([KERNEL_SIGMA if k else m["sigma"] for m, k in zip(ms, kern, strict=True)])
    scur = np.array([min(m["s_cur"], KERNEL_SIGMA / 2) if k else m["s_cur"]
                     for m, k in zip(ms, kern, strict=True)])  # fmt: skip
    cls = np.where(kern, 2, cls)  # simulated in the model class (its session offsets)
    tau = np.array([d["tau"].get(c, 0.0) for c in CLASSES])
    rho_c = fit["same_card"]
    rho = np.array([rho_c.get(KERNEL_CLASS if k else CLASSES[c], 0.0)
                    for c, k in zip(cls, kern, strict=True)])  # fmt: skip
    per_test: dict[str, int] = {}
    for m in ms:
        per_test[_test(m["key"])] = per_test.get(_test(m["key"]), 0) + 1
    secs = fit["test_seconds"]
    seconds = np.array([secs.get(_test(m["key"]), 0.0) / per_test[_test(m["key"])] for m in ms])
    rounds = {c: np.array(v, dtype=float) for c, v in fit["figures"].items()}
    if zero:
        sigma, scur, tau = sigma * 0, scur * 0, tau * 0
        rounds = {c: v * 0 for c, v in rounds.items()}
    return Noise(cls, sigma, scur, kern, tau, rho, rounds, seconds, zero)


def _test(key: str) -> str:
    """A result key's test (its node id: path::name[params])."""
    parts = key.split("::")
    return "::".join(parts[:2])


def sessions(rng: np.random.Generator, n: int, k: int, noise: Noise,
             slow: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Baseline (n x metrics x k), the run (n x metrics) and its confirmation on the same
    card (n x metrics), log units; `slow` (n x metrics) the true log change of the run."""
    m, c = noise.metrics, len(CLASSES)
    tau, sigma, cls = noise.tau, noise.sigma, noise.cls
    a_base = rng.standard_normal((n, c, k)) * tau[None, :, None]
    a_cur = rng.standard_normal((n, c)) * tau[None, :]
    base = a_base[:, cls, :] + rng.standard_normal((n, m, k)) * sigma[None, :, None]
    e = rng.standard_normal((n, m))
    e2 = noise.rho * e + np.sqrt(1 - noise.rho**2) * rng.standard_normal((n, m))
    cur = a_cur[:, cls] + e * sigma[None, :]
    again = a_cur[:, cls] + e2 * sigma[None, :]
    return base, cur + slow, again + slow


def round_noise(rng: np.random.Generator, noise: Noise, j: int, pairs: list[int],
                change: float) -> tuple[list[float], list[float]]:  # fmt: skip
    """One figure's rounds (log units about its level, base and head) in the process pairs
    `pairs` (one a round): a real figure of its class drawn for its sds."""
    table = noise.rounds.get(noise.round_class(j))
    if table is None or not len(table):
        table = np.zeros((1, 2))
    w, p = table[rng.integers(len(table))]
    u = {q: rng.standard_normal() * p for q in sorted(set(pairs))}
    half = w / math.sqrt(2)
    base = [half * rng.standard_normal() for _ in pairs]
    head = [change + u[q] + half * rng.standard_normal() for q in pairs]
    return base, head

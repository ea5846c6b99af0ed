"""How far a card's residual repeats in another fresh process on the same card: the
correlation (rho) that gate-sim's same-card confirmation assumed at 0.5
(../gate-sim-2026-12-06-onecard), measured on the processes already in evidence.

Each speed figure's value in each process (a baseline session, or a judged run's first
stage, from its results JSON) in log units, less the figure's mean over all processes,
less the process's class offset (the median of that residual over the process's figures
of the class, as the judge's class offsets take out a class-wide shift). A one-way
random-effects split by card (GPU UUID), pooled over a class's figures: the within-card
variance from the cards with 2 or more processes, the card variance from the spread of the
card means less the part the within variance explains; rho = card / (card + within).

From the repository root, with the plugin importable (it reads results with its own code):
    python docs/evidence/same-card-2026-12-06/samecard.py [/path/to/paired-repo]
The own file's baseline sessions are in ../h200-2026-12-03/own/paired-repo.tgz (unpack it
and give the folder; without it the own file's part is skipped)."""

import glob
import json
import math
import statistics as st
import sys
from collections import defaultdict
from pathlib import Path

from pytest_gpuperf.core.figures import metrics_of
from pytest_gpuperf.core.results import Result

E = Path(__file__).resolve().parent.parent
SKIP = {"memory", "recorded", None}


def from_baseline(path, data):
    for key, e in json.loads(Path(path).read_text())["entries"].items():
        for m, v in e.get("metrics", {}).items():
            for h in v.get("history", []):
                if h.get("median"):
                    data[(key, m)].append((h["gpu_uuid"], "session " + h["session"],
                                           math.log(h["median"]), v.get("noise_class")))


def from_run(path, data):
    for raw in json.loads(Path(path).read_text())["results"]:
        r = Result.from_dict(raw)
        if r.kind != "measured":
            continue
        for m, v in metrics_of(r).items():
            if (v.get("median") or 0) > 0:
                data[(r.key, m)].append((r.gpu_uuid, str(path), math.log(v["median"]),
                                         v.get("noise_class")))


def analyse(data, label, keep=lambda fig: True):
    data = {f: v for f, v in data.items() if keep(f) and len(v) >= 3}
    cards = defaultdict(set)
    for vals in data.values():
        for u, p, _, _ in vals:
            cards[u].add(p)
    print(f"== {label}: processes a card " + ", ".join(
        f"{u[4:12]} {len(p)}" for u, p in sorted(cards.items(), key=lambda c: -len(c[1]))))
    resid = defaultdict(list)  # (card, process, class) -> residuals from the figures' means
    for vals in data.values():
        mu = st.mean(v for _, _, v, _ in vals)
        for u, p, v, c in vals:
            resid[(u, p, c)].append(v - mu)
    offset = {k: st.median(rs) for k, rs in resid.items()}
    for cls in sorted({v[0][3] for v in data.values()} - SKIP):
        ss_w = df_w = ss_b = df_b = inv_n = n_means = 0.0
        figs = 0
        for vals in data.values():
            if vals[0][3] != cls:
                continue
            mu = st.mean(v for _, _, v, _ in vals)
            by_card = defaultdict(list)
            for u, p, v, c in vals:
                by_card[u].append(v - mu - offset[(u, p, c)])
            if len(by_card) < 2:
                continue
            figs += 1
            means = {u: st.mean(rs) for u, rs in by_card.items()}
            for u, rs in by_card.items():
                ss_w += sum((x - means[u]) ** 2 for x in rs)
                df_w += len(rs) - 1
                inv_n += 1 / len(rs)
                n_means += 1
            g = st.mean(means.values())
            ss_b += sum((m - g) ** 2 for m in means.values())
            df_b += len(means) - 1
        if not df_w:
            print(f"  {cls:12s} {figs:3d} figures: no card with 2 processes")
            continue
        within = ss_w / df_w
        means_var = ss_b / df_b
        card = max(means_var - within * inv_n / n_means, 0.0)
        rho = card / (card + within) if card + within else float("nan")
        print(f"  {cls:12s} {figs:3d} figures  within a card sd {100 * math.sqrt(within):.3f}% "
              f"({df_w:.0f} df)  card sd {100 * math.sqrt(card):.3f}% (card means {df_b:.0f} df)"
              f"  rho {rho:.2f}")


if __name__ == "__main__":
    h100 = defaultdict(list)
    from_baseline(E / "h100-2026-12-06-c/call1/sb100/h100.json", h100)
    for f in sorted(glob.glob(str(E / "h100-2026-12-06-c/call[234]/s/compare-*.json"))
                    + glob.glob(str(E / "h100-2026-12-06-d/call*/s/compare-*.json"))):
        from_run(f, h100)
    label = "H100, the shipped suite: baseline sessions, run 8's and run 9's first stage"
    analyse(h100, label)
    wide = ("qlora_realistic_lengths", "llama2-70b")
    analyse(h100, label + ", less realistic-length and 70B QLoRA (per-process noise)",
            lambda f: not any(w in f[0] for w in wide))
    analyse(h100, "  the dtype and generation modules alone", lambda f: "test_finetune" not in f[0])
    analyse(h100, "  the finetune module alone, less those two",
            lambda f: "test_finetune" in f[0] and not any(w in f[0] for w in wide))
    if len(sys.argv) > 1:
        own = defaultdict(list)
        from_baseline(Path(sys.argv[1]) / "baselines/h200.json", own)
        for f in ["h200-2026-12-03-f/c/p/aa-1.json", "h200-2026-12-03-f/c/p/aa-2.json",
                  "h200-2026-12-03-f/d/p/aa-3.json", "h200-2026-12-05/c/p/aa-1.json",
                  "h200-2026-12-05/c/p/aa-2.json", "h200-2026-12-06/a/p/aa-3.json"]:
            from_run(E / f, own)
        analyse(own, "H200, the own file: its 3 baseline sessions and 6 A/A runs' first stage")

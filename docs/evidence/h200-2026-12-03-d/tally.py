"""Run 3 (and the parts of run 4) of the shipped suite judged on one H200 at c3060bc (GPU
kernel time in a class of its own) against the 3 sessions saved at cfe3008: each part's
speed figures and benchmarks decided, every changed verdict (a false alarm: nothing was
changed), and what stays undecided. From the repository root:
python docs/evidence/h200-2026-12-03-d/tally.py"""

import json
from pathlib import Path

E = Path(__file__).parent
DEC = ("unchanged", "regressed", "improved")
RUNS = {
    "run 3": ["a/s/compare-finetune-135538.json", "b/s/compare-finetune-140227.json",
              "c/s/compare-generate-140856.json", "a/s/compare-dtype-135843.json"],
    "run 4 (sweeps and generation)": ["d/s/compare-finetune-141434.json",
                                      "d/s/compare-generate-141155.json"],
}  # fmt: skip


def tally(folder: Path, runs: dict[str, list[str]]) -> None:
    """Print each run's parts (JSON files under `folder`) counted, then its total."""
    for run, files in runs.items():
        tot = dec = nb = decb = lb = lbd = 0
        for f in files:
            d = json.loads((folder / f).read_text())
            n = d_ = b = db = 0
            for r in d["results"]:
                speed = {k: v for k, v in (r.get("verdicts") or {}).items()
                         if k.startswith(("throughput", "latency"))
                         and not k.endswith("_per_clock")}
                if not speed:
                    continue
                b += 1
                db += any(v.get("status") in DEC for v in speed.values())
                for k, v in speed.items():
                    n += 1
                    s = v.get("status")
                    d_ += s in DEC
                    wall_lb = not k.endswith("_kernels") and bool(r.get("launch_bound"))
                    lb += wall_lb
                    lbd += wall_lb and s in DEC
                    if s in ("regressed", "improved"):
                        print(f"  FALSE ALARM {r['key']} {k} {s}")
                    if s not in DEC:
                        by = "paired" if v.get("paired") else "stage 1"
                        print(f"  undecided  {r['key'].split('::', 1)[1][:58]:58s} {k:18s} "
                              f"{'launch-bound wall' if wall_lb else ''} ({by}) "
                              f"{(v.get('basis') or '')[:60]}")
            print(f"{run} {f}: {d_} of {n} speed figures, {db} of {b} benchmarks")
            tot, dec, nb, decb = tot + n, dec + d_, nb + b, decb + db
        print(f"{run} TOTAL: {dec} of {tot} speed figures ({100 * dec / tot:.0f}%), {decb} of "
              f"{nb} benchmarks ({100 * decb / nb:.1f}%); launch-bound wall times {lb} ({lbd} "
              f"decided): {dec - lbd} of {tot - lb} other figures "
              f"({100 * (dec - lbd) / (tot - lb):.0f}%)\n")


if __name__ == "__main__":
    tally(E, RUNS)

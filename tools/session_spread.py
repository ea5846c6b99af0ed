"""Spread of reported medians across fresh pytest sessions: reads the --benchmark-json or
--gpuperf-json files given on the command line, one argument per session (several files of
one session, e.g. one per module, joined by commas), and prints, per benchmark, the medians
and (max - min) / median of them."""

import json
import statistics
import sys


def main() -> None:
    runs = []
    for arg in sys.argv[1:]:  # a session: one file, or several joined by commas
        parts = [json.load(open(p)) for p in arg.split(",")]
        parts = [d.get("gpuperf", d) for d in parts]  # pytest-benchmark's file or ours
        runs.append({**parts[0], "results": [r for d in parts for r in d["results"]]})
    keys = sorted({r["key"] for run in runs for r in run["results"]})
    print(f"{len(runs)} sessions on {runs[0]['describe']}")
    for key in keys:
        meds, flags = [], set()
        for run in runs:
            for r in run["results"]:
                fig = r.get("throughput") or r.get("latency")  # a latency's, since 0.3
                if r["key"] == key and fig:
                    meds.append(fig["median"])
                    if r.get("launch_bound"):
                        flags.add(f"launch-bound (busy {r['busy_fraction']:.0%})")
                    elif r.get("busy_fraction") is not None:
                        flags.add(f"busy {r['busy_fraction']:.0%}")
                    unit = fig["unit"]
        if not meds:
            continue
        m = statistics.median(meds)
        spread = (max(meds) - min(meds)) / m * 100
        print(
            f"{key}: median {m:.4g} {unit}, spread {spread:.2f}% over {len(meds)} "
            f"[{', '.join(f'{v:.4g}' for v in meds)}] {'; '.join(sorted(flags))}"
        )


if __name__ == "__main__":
    main()

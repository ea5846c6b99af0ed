"""Spread of reported medians across fresh pytest sessions: reads the --benchmark-json files
given on the command line (each from one session) and prints, per benchmark, the medians
and (max - min) / median of them."""

import json
import statistics
import sys


def main() -> None:
    runs = [json.load(open(p))["gpuperf"] for p in sys.argv[1:]]
    keys = sorted({r["key"] for run in runs for r in run["results"]})
    print(f"{len(runs)} sessions on {runs[0]['describe']}")
    for key in keys:
        meds, flags = [], set()
        for run in runs:
            for r in run["results"]:
                if r["key"] == key and r["throughput"]:
                    meds.append(r["throughput"]["median"])
                    if r.get("launch_bound"):
                        flags.add(f"launch-bound (busy {r['busy_fraction']:.0%})")
                    elif r.get("busy_fraction") is not None:
                        flags.add(f"busy {r['busy_fraction']:.0%}")
                    unit = r["throughput"]["unit"]
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

"""Summarise gate evidence: reads the --gpuperf-json files of many sessions, named
<label>-<i>.json, and prints per label how many sessions each verdict had."""

import collections
import json
import re
import sys
from pathlib import Path


def main() -> None:
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    changes: dict[str, list[float]] = collections.defaultdict(list)
    spreads: dict[str, list[float]] = collections.defaultdict(list)
    clocks: dict[str, list[float]] = collections.defaultdict(list)
    for p in sorted(Path(sys.argv[1]).glob("*.json")):
        m = re.match(r"(.+)-(\d+)\.json$", p.name)
        if not m:
            continue
        label = m.group(1)
        data = json.loads(p.read_text())
        for r in data["results"]:
            for metric, v in (r.get("verdicts") or {}).items():
                key = f"{label} {r['key'].split('::')[-1]} {metric}"
                table[key][v["status"]] += 1
                if v.get("change") is not None:
                    changes[key].append(v["change"] * 100)
                if v.get("uncertainty") is not None:
                    spreads[key].append(v["uncertainty"] * 100)
            clock = (r.get("telemetry") or {}).get("sm_clock_median_mhz")
            if clock:
                clocks[f"{label} {r['key'].split('::')[-1]}"].append(clock)
    for key in sorted(table):
        ch = changes.get(key, [])
        rng = f" change {min(ch):+.2f}% .. {max(ch):+.2f}%" if ch else ""
        sp = spreads.get(key, [])
        unc = f" uncertainty ±{min(sp):.2f}% .. ±{max(sp):.2f}%" if sp else ""
        print(f"{key}: {dict(table[key])}{rng}{unc}")
    for key in sorted(clocks):
        c = clocks[key]
        print(f"{key}: SM clock median {min(c):.0f} .. {max(c):.0f} MHz over {len(c)} session(s)")


if __name__ == "__main__":
    main()

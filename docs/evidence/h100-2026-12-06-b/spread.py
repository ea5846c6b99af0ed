"""Each speed figure's spread between the H100's baseline sessions (max - min over the mean
of the sessions' medians), beside the H200's three sessions of cfe3008 for the same figure:
python3 docs/evidence/h100-2026-12-06-b/spread.py (from the repository's root)."""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
H200 = HERE.parent / "h200-2026-12-03" / "suite-baseline-h200-sessions1-3.json"


def spreads(path):
    out = {}
    for test, entry in json.loads(Path(path).read_text())["entries"].items():
        for name, m in entry["metrics"].items():
            if not name.startswith(("throughput", "latency")) or name.endswith("_per_clock"):
                continue
            med = [h["median"] for h in m.get("history", [])]
            if len(med) >= 2 and statistics.fmean(med):
                out[(test, name)] = (len(med), m.get("noise_class"),
                                     100 * (max(med) - min(med)) / statistics.fmean(med),
                                     entry.get("flags", {}).get("launch_bound"))
    return out


h100, h200 = spreads(HERE / "suite-baseline-h100-sessions.json"), spreads(H200)
print(f"{'figure':<86} {'class':<11} H100 n spread   H200 n spread")
for key in sorted(h100):
    n, cls, s, lb = h100[key]
    o = h200.get(key)
    other = f"{o[0]} {o[2]:6.2f}%" if o else "-"
    name = key[0].split("::", 1)[1] + ("" if key[1] == "throughput" else f" {key[1]}")
    print(f"{name[:86]:<86} {cls or '-':<11} {n} {s:6.2f}%   {other}{'  launch-bound' if lb else ''}")

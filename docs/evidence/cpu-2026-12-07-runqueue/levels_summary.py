import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
keys = [k for k in rows[0] if k not in ("load", "kept")]
print(f"{len(rows)} processes, load {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}")
for k in keys:
    v = [r[k] for r in rows if r[k] is not None]
    if len(v) > 2:
        m = statistics.mean(v); sd = statistics.stdev(v)
        print(f"  {k:16s} n={len(v):2d} mean {m:8.2f} us  sd between processes {100*sd/m:5.2f}%  range {min(v):.1f}-{max(v):.1f}")

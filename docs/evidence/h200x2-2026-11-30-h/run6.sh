#!/usr/bin/env bash
# device call: the full suite (not scale) against the shipped baselines/h200.json, -n 2, with the
# multi-GPU module deferred to after the workers (one fresh process with both GPUs)
set -u
n=${1:-6}
o=${OUT:-/tmp/out}; mkdir -p "$o"
nvidia-smi --query-gpu=index,uuid,name,clocks.sm,power.draw,temperature.gpu --format=csv > "$o/gpus-run$n.csv" 2>&1
git rev-parse HEAD > "$o/commit.txt" 2>/dev/null
t0=$SECONDS
timeout 560 python3 -m pytest benchmarks -m "not scale" -n 2 --dist loadgroup -p no:cacheprovider -rs \
  --gpuperf-baseline=compare --gpuperf-json="$o/suite-run$n.json" > "$o/suite-run$n.log" 2>&1
echo "suite rc=$? in $((SECONDS - t0)) s" >> "$o/suite-run$n.log"
gzip -k "$o/suite-run$n.log" "$o/suite-run$n.json" 2>/dev/null; true

#!/usr/bin/env bash
# one nvidia-h200 call, commit 09a3720 (the fresh process: -n 0 --dist no, its own basetemp):
# the fp32->fp16 cast raised 10% in a copy of the baseline, judged with -n 1 coming from
# PYTEST_ADDOPTS (as from an ini's addopts): the confirmation must run and confirm
set -u
o=${OUT:-/tmp/out}; mkdir -p "$o"
nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv > "$o/gpus.csv" 2>&1
mkdir -p /tmp/bl && python3 - <<'PY'
import json
d = json.load(open("baselines/h200.json"))
e = d["entries"]["benchmarks/test_dtype.py::test_cast_bandwidth[fp32-to-fp16]"]["metrics"]["throughput"]
for h in e["history"]:
    for k in ("median", "ci_low", "ci_high"):
        if isinstance(h.get(k), float): h[k] *= 1.10
for k in ("median", "ci_low", "ci_high"):
    if isinstance(e.get(k), float): e[k] *= 1.10
json.dump(d, open("/tmp/bl/h200.json", "w"))
PY
t0=$SECONDS
PYTEST_ADDOPTS="-n 1 --dist loadgroup" timeout -s INT 120 python3 -m pytest benchmarks/test_dtype.py::test_copy_bandwidth \
  "benchmarks/test_dtype.py::test_cast_bandwidth[fp32-to-fp16]" -p no:cacheprovider -rs --gpu-profile=h200 \
  --gpuperf-baseline=compare --gpuperf-baseline-dir=/tmp/bl --junitxml="$o/inj.xml" --gpuperf-json="$o/inj.json" > "$o/inj.log" 2>&1
echo "inj rc=$? in $((SECONDS - t0)) s" >> "$o/inj.log"

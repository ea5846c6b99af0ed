#!/usr/bin/env bash
# one nvidia-h200 call: the landed confirmation path (confirm.fresh_process) on a real GPU:
# (1) A/A: the fp32->fp16 cast and the copy against the shipped baseline; (2) the same with the
# baseline's fp32->fp16 cast raised 10% in a copy: must read regressed, confirmed in a fresh
# process, exit 1; (3) the multi-GPU module serial on one GPU: skipped with the reason.
set -u
o=${OUT:-/tmp/out}; mkdir -p "$o"
nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv > "$o/gpus.csv" 2>&1
sel=(benchmarks/test_dtype.py::test_copy_bandwidth "benchmarks/test_dtype.py::test_cast_bandwidth[fp32-to-fp16]")
t0=$SECONDS
timeout 150 python3 -m pytest "${sel[@]}" -p no:cacheprovider -rs --gpu-profile=h200 \
  --gpuperf-baseline=compare --gpuperf-json="$o/aa.json" > "$o/aa.log" 2>&1
echo "aa rc=$? in $((SECONDS - t0)) s" >> "$o/aa.log"
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
timeout 200 python3 -m pytest "${sel[@]}" -p no:cacheprovider -rs --gpu-profile=h200 \
  --gpuperf-baseline=compare --gpuperf-baseline-dir=/tmp/bl --gpuperf-json="$o/inj.json" > "$o/inj.log" 2>&1
echo "inj rc=$? in $((SECONDS - t0)) s" >> "$o/inj.log"
t0=$SECONDS
timeout 60 python3 -m pytest benchmarks/test_multigpu.py -p no:cacheprovider -rs -q > "$o/mg1.log" 2>&1
echo "mg1 rc=$? in $((SECONDS - t0)) s" >> "$o/mg1.log"

#!/usr/bin/env bash
# device call: the deferral as reworked (workers leave the multi-GPU tests out at collection):
# the dtype and multi-GPU modules under -n 2 against the shipped baseline, with JUnit XML
set -u
o=${OUT:-/tmp/out}; mkdir -p "$o"
nvidia-smi --query-gpu=index,uuid,name --format=csv > "$o/gpus-run8.csv" 2>&1
t0=$SECONDS
timeout 400 python3 -m pytest benchmarks/test_dtype.py benchmarks/test_multigpu.py -n 2 --dist loadgroup \
  -p no:cacheprovider -rs --gpuperf-baseline=compare --gpuperf-json="$o/dtype-mg-run8.json" \
  --junitxml="$o/dtype-mg-run8.xml" > "$o/dtype-mg-run8.log" 2>&1
echo "rc=$? in $((SECONDS - t0)) s" >> "$o/dtype-mg-run8.log"

#!/usr/bin/env bash
# Device call for the regression gate: the GPU tests, then tools/gpu_run_gate.sh.
set -u
o=${OUT:-/tmp/out}; mkdir -p "$o"
t0=$SECONDS
python3 -m pytest tests/test_gpu.py -q -p no:cacheprovider -rs > "$o/tests_gpu.log" 2>&1
echo "gpu tests rc=$? in $((SECONDS - t0)) s" >> "$o/tests_gpu.log"
bash tools/gpu_run_gate.sh "$o/gate" "${1:-380}"
cp "$o/gate/gate.log" "$o/gate/gate_summary.log" "$o/" 2>/dev/null
cp "$o/gate/baselines/h200.json" "$o/h200.json" 2>/dev/null
tar czf "$o/gate.tgz" -C "$o" gate && rm -r "$o/gate"

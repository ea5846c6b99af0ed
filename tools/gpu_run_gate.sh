#!/usr/bin/env bash
# The regression gate on a real GPU: save a baseline over 3 sessions, then A/A sessions,
# then sessions with a known slowdown (GPUPERF_SLOWDOWN) of the test-only benchmark.
# Usage: tools/gpu_run_gate.sh OUTDIR SECONDS_BUDGET [power]
# "power": only the test-only benchmark (shorter sessions), for the slowdown runs.
set -u
export PYTHONUNBUFFERED=1
o=$1; budget=$2; mkdir -p "$o/runs"
bl="$o/baselines"
t0=$SECONDS
trio="benchmarks/test_dtype.py::test_matmul[bf16] benchmarks/test_dtype.py::test_cast_bandwidth[fp32-to-bf16] benchmarks/test_finetune.py::test_lora_step[llama-1b-b32]"
slow=tools/evidence/test_slowdown.py
run() {  # label i env...
  local label=$1 i=$2; shift 2
  [ $((SECONDS - t0)) -lt "$budget" ] || { echo "$label-$i skipped: time" >> "$o/gate.log"; return; }
  local s=$SECONDS
  env "$@" python3 -m pytest $sel -q -p no:cacheprovider --gpuperf-baseline-dir="$bl" \
    $mode --gpuperf-json="$o/runs/$label-$i.json" > "$o/runs/$label-$i.log" 2>&1
  echo "$label-$i rc=$? $((SECONDS - s)) s" >> "$o/gate.log"
}
sel="$trio $slow"; [ "${3:-}" = power ] && sel="$slow"
mode=--gpuperf-baseline=save
for i in 1 2 3; do run save "$i" GPUPERF_SLOWDOWN=0; done
mode=--gpuperf-baseline=compare
for i in 1 2 3 4 5 6 7 8 9 10; do run aa "$i" GPUPERF_SLOWDOWN=0; done
sel="$slow"
for i in 1 2 3 4 5 6 7 8 9 10; do run slow5 "$i" GPUPERF_SLOWDOWN=0.05; done
for i in 1 2 3 4 5; do run slow10 "$i" GPUPERF_SLOWDOWN=0.10; done
for i in 1 2 3 4 5; do run slow2 "$i" GPUPERF_SLOWDOWN=0.02; done
python3 tools/gate_evidence_summary.py "$o/runs" > "$o/gate_summary.log" 2>&1

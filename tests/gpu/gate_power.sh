#!/usr/bin/env bash
# The gate's power on a GPU: 3 baseline sessions of tests/gpu/test_gate_power.py (each a
# fresh pytest process), then 3 sessions each A/A, 5% and 10% slower, judged at the default
# 3% tolerance with confirmation in a fresh process. Usage (on a GPU machine, from the
# repository's root): tests/gpu/gate_power.sh PARTS OUTDIR, PARTS a list of save, aa, 5, 10.
# Each session's log and JSON go to OUTDIR; a summary line per session to OUTDIR/power.log.
set -u
parts=$1; out=$2; mkdir -p "$out"
bl=${GATE_BASELINES:-/tmp/gate-baselines}; mkdir -p "$bl"
opts=(-q -p no:cacheprovider -rs "--gpuperf-baseline-dir=$bl" --gpuperf-max-time=2)
run() {  # label mode slowdown
  local s=$SECONDS
  GPUPERF_SLOWDOWN=$3 timeout 280 python3 -m pytest tests/gpu/test_gate_power.py "${opts[@]}" \
    "--gpuperf-baseline=$2" "--gpuperf-json=$out/$1.json" > "$out/$1.log" 2>&1
  local rc=$?
  echo "$1 rc=$rc $((SECONDS - s)) s $(grep -E '^verdicts:' "$out/$1.log" | tail -1)" | tee -a "$out/power.log"
}
for part in $parts; do
  case $part in
    save) for i in 1 2 3; do run "save-$i" save 0; done ;;
    aa) for i in 1 2 3; do run "aa-$i" compare 0; done ;;
    5) for i in 1 2 3; do run "slow5-$i" compare 0.05; done ;;
    10) for i in 1 2 3; do run "slow10-$i" compare 0.10; done ;;
  esac
done

#!/usr/bin/env bash
# One device call (2026-11-30, session 2): what the verdict, first-hour and suite-time issues
# still need. Each step under its own timeout; everything lands under $OUT as it finishes.
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
t() { echo "$(date +%T) $*" | tee -a "$o/session.log"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,clocks_throttle_reasons.active --format=csv > "$o/gpu-start.csv" 2>&1
# 1. verdict: 2% and 10% slower sessions of the cast and the MLP block on a fresh baseline
s=$SECONDS; OUT=$o/verdict timeout 200 bash tools/gpu_run_verdict.sh 4 170 > "$o/verdict.out" 2>&1
t "verdict part 4 rc=$? $((SECONDS - s)) s"
# 2. sweep memory hygiene and suite time: the QLoRA sweeps and max-batch search on a 40 GB card
s=$SECONDS
timeout 200 python3 -m pytest benchmarks/test_finetune.py -p no:cacheprovider -v -rs \
  -k "(sweep or max_batch) and not 70b" --gpu-emulate=a100-40gb --gpuperf-baseline=off \
  --gpuperf-json="$o/emu-a100-40gb.json" > "$o/emu-a100-40gb.log" 2>&1
t "emulated a100-40gb sweeps rc=$? $((SECONDS - s)) s"
# 3. the smoke tier (goal: 3 minutes), saving a baseline session
s=$SECONDS
timeout 200 python3 -m pytest benchmarks -m smoke -p no:cacheprovider -v -rs --gpu-profile=h200 \
  --gpuperf-baseline=save --gpuperf-baseline-dir="$o/baselines" \
  --gpuperf-json="$o/smoke.json" > "$o/smoke.log" 2>&1
t "smoke tier rc=$? $((SECONDS - s)) s"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv > "$o/gpu-end.csv" 2>&1
cd "$o" && tar czf a.tgz --exclude=a.tgz --exclude=session.log . && find . -mindepth 1 -maxdepth 1 ! -name a.tgz ! -name session.log -exec rm -rf {} +

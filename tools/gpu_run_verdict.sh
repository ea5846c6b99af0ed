#!/usr/bin/env bash
# Device evidence for the verdict issue. Usage: tools/gpu_run_verdict.sh PART SECONDS
#   part 1: the GPU tests, then a 3-session baseline of the two test-only benchmarks
#           (cast: memory-bound; MLP block: compute-bound), 10 A/A and 10 5%-slower sessions
#   part 2: (baseline carried in $OUT-independent .evidence/baselines) 2% and 10% sessions,
#           then gpuperf ab: identical and 5% slower head, 5 rounds each
set -u
export PYTHONUNBUFFERED=1
part=$1; budget=$2
o=${OUT:-/tmp/out}; mkdir -p "$o/runs"
bl=.evidence/baselines; mkdir -p "$bl"
t0=$SECONDS
sel=tools/evidence/test_slowdown.py
opts=(-q -p no:cacheprovider -rs "--gpuperf-baseline-dir=$bl" --gpuperf-max-time=3)
log() { echo "$*" | tee -a "$o/verdict.log"; }
run() {  # label i mode env...
  local label=$1 i=$2 mode=$3; shift 3
  [ $((SECONDS - t0)) -lt "$budget" ] || { log "$label-$i skipped: time"; return; }
  local s=$SECONDS
  env "$@" python3 -m pytest $sel "${opts[@]}" "--gpuperf-baseline=$mode" \
    --gpuperf-json="$o/runs/$label-$i.json" > "$o/runs/$label-$i.log" 2>&1
  log "$label-$i rc=$? $((SECONDS - s)) s"
}
if [ "$part" = 1 ]; then
  s=$SECONDS
  timeout 150 python3 -m pytest tests/test_gpu.py -q -p no:cacheprovider -rs > "$o/tests_gpu.log" 2>&1
  log "tests/test_gpu.py rc=$? $((SECONDS - s)) s"
  for i in 1 2 3; do run save "$i" save GPUPERF_SLOWDOWN=0; done
  cp "$bl"/*.json "$o/" 2>/dev/null
  for i in $(seq 1 10); do run aa "$i" compare GPUPERF_SLOWDOWN=0; done
  for i in $(seq 1 10); do run slow5 "$i" compare GPUPERF_SLOWDOWN=0.05; done
else
  for i in 1 2 3 4 5; do run slow2 "$i" compare GPUPERF_SLOWDOWN=0.02; done
  for i in 1 2 3; do run slow10 "$i" compare GPUPERF_SLOWDOWN=0.10; done
  # A/B needs a git repository: the device's copy has none, so make one of this tree
  git init -q . 2>/dev/null; git add -A >/dev/null; git -c user.email=e@x -c user.name=e commit -qm base
  s=$SECONDS
  python3 -m pytest_gpuperf ab --base HEAD --rounds 5 --json "$o/ab-same.json" -- $sel --gpuperf-max-time=3 > "$o/ab-same.log" 2>&1
  log "ab identical rc=$? $((SECONDS - s)) s"
  sed -i 's/GPUPERF_SLOWDOWN", "0"/GPUPERF_SLOWDOWN", "0.05"/' $sel
  s=$SECONDS
  python3 -m pytest_gpuperf ab --base HEAD --rounds 5 --json "$o/ab-slow5.json" -- $sel --gpuperf-max-time=3 > "$o/ab-slow5.log" 2>&1
  log "ab head 5% slower rc=$? $((SECONDS - s)) s"
  git checkout -q -- $sel
fi
python3 tools/gate_evidence_summary.py "$o/runs" > "$o/summary.txt" 2>&1
cat "$o/summary.txt"
tar czf "$o/runs.tgz" -C "$o" runs && rm -r "$o/runs"

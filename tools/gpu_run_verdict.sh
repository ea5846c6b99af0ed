#!/usr/bin/env bash
# Device evidence for the verdict issue. Usage: tools/gpu_run_verdict.sh PART SECONDS
#   1: the GPU tests, a 3-session baseline of the two test-only benchmarks (cast:
#      memory-bound; MLP block: compute-bound), 10 A/A and 10 5%-slower sessions
#   2: a new 3-session baseline, 10 A/A and 10 5%-slower sessions of the MLP block, then
#      gpuperf ab on it: identical head, then a 5% slower head, 5 rounds each
#   3: as 2 without A/B, after a change of the engine's stop rule, then 2% and 10% slower
#      sessions of both benchmarks
#   4: what part 3 left for want of time: a new 3-session baseline, then 3 sessions each
#      2% and 10% slower, of both benchmarks
set -u
export PYTHONUNBUFFERED=1
part=$1; budget=$2
o=${OUT:-/tmp/out}; mkdir -p "$o/runs"
bl=.evidence/baselines; mkdir -p "$bl"
t0=$SECONDS
sel=tools/evidence/test_slowdown.py
opts=(-q -p no:cacheprovider -rs "--gpuperf-baseline-dir=$bl" --gpuperf-max-time=3)
log() { echo "$*" | tee -a "$o/verdict.log"; }
run() {  # label i mode -k-expression env...
  local label=$1 i=$2 mode=$3 k=$4; shift 4
  [ $((SECONDS - t0)) -lt "$budget" ] || { log "$label-$i skipped: time"; return; }
  local s=$SECONDS
  env "$@" python3 -m pytest $sel -k "$k" "${opts[@]}" "--gpuperf-baseline=$mode" \
    --gpuperf-json="$o/runs/$label-$i.json" > "$o/runs/$label-$i.log" 2>&1
  log "$label-$i rc=$? $((SECONDS - s)) s"
}
ab() {  # label
  [ $((SECONDS - t0)) -lt "$budget" ] || { log "ab $1 skipped: time"; return; }
  local s=$SECONDS
  python3 -m pytest_gpuperf ab --base HEAD --rounds 5 --json "$o/ab-$1.json" -- $sel -k mlp \
    --gpuperf-max-time=3 > "$o/ab-$1.log" 2>&1
  log "ab $1 rc=$? $((SECONDS - s)) s"
}
case $part in
1)
  s=$SECONDS
  timeout 150 python3 -m pytest tests/test_gpu.py -q -p no:cacheprovider -rs > "$o/tests_gpu.log" 2>&1
  log "tests/test_gpu.py rc=$? $((SECONDS - s)) s"
  for i in 1 2 3; do run save "$i" save "slowdown" GPUPERF_SLOWDOWN=0; done
  cp "$bl"/*.json "$o/" 2>/dev/null
  for i in $(seq 1 10); do run aa "$i" compare "slowdown" GPUPERF_SLOWDOWN=0; done
  for i in $(seq 1 10); do run slow5 "$i" compare "slowdown" GPUPERF_SLOWDOWN=0.05; done
  ;;
2)
  rm -f "$bl"/*.json
  for i in 1 2 3; do run save "$i" save "slowdown" GPUPERF_SLOWDOWN=0; done
  cp "$bl"/*.json "$o/" 2>/dev/null
  for i in $(seq 1 10); do run aa "$i" compare mlp GPUPERF_SLOWDOWN=0; done
  for i in $(seq 1 10); do run slow5 "$i" compare mlp GPUPERF_SLOWDOWN=0.05; done
  # A/B needs a git repository: the device's copy has none, so make one of this tree
  git init -q . && printf '/.whl/\n/.evidence/\n' >> .git/info/exclude
  git add -A >/dev/null && git -c user.email=e@x -c user.name=e commit -qm base
  ab same
  sed -i 's/GPUPERF_SLOWDOWN", "0"/GPUPERF_SLOWDOWN", "0.05"/' $sel  # the head: 5% more work
  ab slow5
  git checkout -q -- $sel
  ;;
3)
  rm -f "$bl"/*.json  # after the stop-rule change: a new baseline, then everything else
  for i in 1 2 3; do run save "$i" save "slowdown" GPUPERF_SLOWDOWN=0; done
  cp "$bl"/*.json "$o/" 2>/dev/null
  for i in $(seq 1 10); do run aa "$i" compare mlp GPUPERF_SLOWDOWN=0; done
  for i in $(seq 1 10); do run slow5 "$i" compare mlp GPUPERF_SLOWDOWN=0.05; done
  for i in 1 2 3; do run slow2 "$i" compare "slowdown" GPUPERF_SLOWDOWN=0.02; done
  for i in 1 2 3; do run slow10 "$i" compare "slowdown" GPUPERF_SLOWDOWN=0.10; done
  ;;
4)
  rm -f "$bl"/*.json
  for i in 1 2 3; do run save "$i" save "slowdown" GPUPERF_SLOWDOWN=0; done
  cp "$bl"/*.json "$o/" 2>/dev/null
  for i in 1 2 3; do run slow2 "$i" compare "slowdown" GPUPERF_SLOWDOWN=0.02; done
  for i in 1 2 3; do run slow10 "$i" compare "slowdown" GPUPERF_SLOWDOWN=0.10; done
  ;;
esac
python3 tools/gate_evidence_summary.py "$o/runs" > "$o/summary.txt" 2>&1
cat "$o/summary.txt"
tar czf "$o/runs.tgz" -C "$o" runs && rm -r "$o/runs"

#!/usr/bin/env bash
# The suite-time and generation issues' GPU evidence, in calls on `nvidia-h200-x2`: each job
# runs on one GPU of its own (CUDA_VISIBLE_DEVICES), two jobs at a time. Every part writes
# its JSON and log under $OUT as it finishes; a part cut by the call's budget gets SIGINT,
# so pytest still writes the results it has. The last step tars everything (the device
# returns few files). BUDGET: seconds this call may spend (default 560).
# Usage: tools/gpu_lease.sh 1|2|3 (as run on 2026-11-30, in that order, one lease), then
# 4-7 (the generation issue's rest, a later lease; its parts each start with an empty
# torch.compile cache, FRESH=1, so every compiled decoder is compiled and autotuned anew)
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
end=$((SECONDS + ${BUDGET:-560}))
left() { local l=$((end - SECONDS)); if [ "$l" -gt 5 ]; then echo "$l"; else echo 5; fi; }
log() { echo "$(date +%T) $*" | tee -a "$o/lease.log"; }
base=(-p no:cacheprovider -rs -v --durations=0)
save=(--gpu-profile=h200 --gpuperf-baseline=save --gpuperf-baseline-dir="$o/baselines")
# part NAME GPU PYTEST-ARGS...: one pytest process on one GPU; NAME.json and NAME.log
part() {
  local name=$1 gpu=$2 s=$SECONDS cache=${TORCHINDUCTOR_CACHE_DIR:-}
  shift 2
  [ "${FRESH:-0}" = 1 ] && cache=$(mktemp -d /tmp/inductor-"$name".XXXX)
  TORCHINDUCTOR_CACHE_DIR=$cache CUDA_VISIBLE_DEVICES=$gpu timeout -s INT -k 20 "$(left)" python3 -m pytest "${base[@]}" \
    --gpuperf-json="$o/$name.json" "$@" > "$o/$name.log" 2>&1
  log "$name (GPU $gpu) rc=$? wall $((SECONDS - s)) s"
}
cp -r baselines "$o/baselines"  # sessions merge into this copy, under its file lock
nvidia-smi --query-gpu=index,name,pci.bus_id,power.limit,clocks.max.sm,temperature.gpu \
  --format=csv > "$o/gpus.csv" 2>&1
log "lease part $1, budget $(left) s"
case $1 in
  1)  # session 1 of the full suite, one module per GPU; the compiled decoder's tests
    ( part finetune 0 benchmarks/test_finetune.py -m "not scale" "${save[@]}"
      part scale-7b-bf16-b1 0 benchmarks/test_generate.py -m scale -k "llama2-7b-bf16-b1" ) &
    ( part compiled-test 1 tests/test_gpu.py -k compiled
      part dtype 1 benchmarks/test_dtype.py "${save[@]}"
      part generate 1 benchmarks/test_generate.py -m "not scale" "${save[@]}"
      part scale-7b-rest 1 benchmarks/test_generate.py -m scale -k "llama2-7b and not bf16-b1" ) &
    wait ;;
  2)  # session 2: the whole suite under pytest-xdist, one GPU per worker
    s=$SECONDS
    timeout -s INT -k 20 "$(left)" python3 -m pytest benchmarks -m "not scale" -n 2 \
      --dist loadgroup "${base[@]}" "${save[@]}" --gpuperf-json="$o/suite-n2.json" \
      > "$o/suite-n2.log" 2>&1
    log "suite -n 2 --dist loadgroup rc=$? wall $((SECONDS - s)) s"
    ( part emulate-a100-40gb 0 benchmarks/test_finetune.py -k "sweep or max_batch" \
        --gpu-emulate=a100-40gb --gpuperf-baseline=off ) &
    ( part scale-13b 1 benchmarks/test_generate.py -m scale -k "llama2-13b" ) &
    wait ;;
  3)  # session 3 of the full suite by module (the tiers as changed after 1 and 2), the 7B
      # compiled decoder, the bf16 compiled-decoder test
    ( part finetune-3 0 benchmarks/test_finetune.py -m "not scale" "${save[@]}"
      part compiled-test-3 0 tests/test_gpu.py -k compiled ) &
    ( part scale-7b-compiled 1 benchmarks/test_generate.py -m scale -k "llama2-7b-bf16-b1-compiled"
      part dtype-3 1 benchmarks/test_dtype.py "${save[@]}"
      part generate-3 1 benchmarks/test_generate.py -m "not scale" "${save[@]}" ) &
    wait ;;
  4)  # the compiled 7B decoder's sessions 2 and 3 (one per GPU, at once), then the scale
      # tier's rest: 70B nf4 on one GPU, 13B nf4 and 7B nf4 batch 8 on the other
    export FRESH=1
    ( part scale-7b-compiled-s2 0 benchmarks/test_generate.py -m scale -k "llama2-7b-bf16-b1-compiled"
      part scale-70b 0 benchmarks/test_generate.py -m scale -k "llama2-70b" ) &
    ( part scale-7b-compiled-s3 1 benchmarks/test_generate.py -m scale -k "llama2-7b-bf16-b1-compiled"
      part scale-13b-nf4 1 benchmarks/test_generate.py -m scale -k "llama2-13b-nf4"
      part scale-7b-nf4-b8 1 benchmarks/test_generate.py -m scale -k "llama2-7b-nf4-b8" ) &
    wait ;;
  5)  # the 1B decoder compiled in both modes, twice (one session per GPU); the 7B graph-only
      # decoder's sessions 2 and 3; the 48 GB emulation of the sweeps
    export FRESH=1
    one=(benchmarks/test_generate.py -m "scale or not scale" -k "llama-1b-b1-256tok-compiled")
    seven=(benchmarks/test_generate.py -m scale -k "llama2-7b-bf16-b1 and not compiled")
    ( part modes-1b-a 0 "${one[@]}"
      part scale-7b-graph-s2 0 "${seven[@]}" ) &
    ( part modes-1b-b 1 "${one[@]}"
      part scale-7b-graph-s3 1 "${seven[@]}"
      part emulate-48gb 1 benchmarks/test_finetune.py -k "sweep or max_batch" \
        --gpu-emulate=rtx-6000-ada --gpuperf-baseline=off ) &
    wait ;;
  6)  # the 7B decoder compiled in inductor's default mode, 3 sessions (two on GPU 0, one on
      # GPU 1), and a third session of the 1B decoder in both modes
    export FRESH=1
    dflt=(benchmarks/test_generate.py -m scale -k "llama2-7b-bf16-b1-compiled-default")
    ( part scale-7b-default-s1 0 "${dflt[@]}"
      part scale-7b-default-s3 0 "${dflt[@]}" ) &
    ( part scale-7b-default-s2 1 "${dflt[@]}"
      part modes-1b-c 1 benchmarks/test_generate.py -m "scale or not scale" \
        -k "llama-1b-b1-256tok-compiled" ) &
    wait ;;
  7)  # after "-compiled" became inductor's default mode: the compiled decoder's CUDA tests in
      # both modes; the full suite's generation module, saved into the baseline copy
    export FRESH=1
    ( part compiled-test-modes 0 tests/test_gpu.py -k compiled ) &
    ( part generate-7 1 benchmarks/test_generate.py -m "not scale" "${save[@]}" ) &
    wait ;;
  *) echo "usage: $0 1|2|3|4|5|6|7" >&2; exit 2 ;;
esac
cd "$o" && tar czf lease.tgz --exclude=lease.tgz --exclude=lease.log --exclude=gpus.csv . 2>/dev/null
find . -mindepth 1 -maxdepth 1 ! -name lease.tgz ! -name lease.log ! -name gpus.csv -exec rm -rf {} +

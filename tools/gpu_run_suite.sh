#!/usr/bin/env bash
# The shipped suite on a GPU runner, for docs/performance.md: the suite module by module
# saving a baseline (each module's wall time), or the memory-fit emulation of a 40 GB and a
# 48 GB card. PART_TIMEOUT (default 400 s) bounds each module.
# Usage: tools/gpu_run_suite.sh OUTDIR [full|emulate]
set -u
export PYTHONUNBUFFERED=1
o=$1; mkdir -p "$o"
case "${2:-full}" in
  full)  # by module, each part's JSON written as it finishes (the scale tier left out)
    for m in dtype finetune generate multigpu; do
      s=$SECONDS
      timeout "${PART_TIMEOUT:-400}" python3 -m pytest "benchmarks/test_$m.py" -m "not scale" \
        -p no:cacheprovider -rs --gpuperf-baseline=save --gpuperf-baseline-dir="$o/baselines" \
        --gpuperf-json="$o/suite-$m.json" > "$o/suite-$m.log" 2>&1
      echo "$(date +%T) module $m rc=$? wall $((SECONDS - s)) s" | tee -a "$o/suite.log"
    done ;;
  emulate)
    for card in a100-40gb rtx-6000-ada; do
      s=$SECONDS
      python3 -m pytest benchmarks/test_finetune.py -p no:cacheprovider -rs -k "sweep or max_batch" \
        --gpu-emulate=$card --gpuperf-baseline=save --gpuperf-baseline-dir="$o/baselines" \
        --gpuperf-json="$o/emulate-$card.json" > "$o/emulate-$card.log" 2>&1
      echo "emulate $card rc=$? wall $((SECONDS - s)) s" >> "$o/emulate-$card.log"
    done ;;
esac

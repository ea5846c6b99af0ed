#!/usr/bin/env bash
# The shipped suite on a GPU runner, for docs/performance.md: the whole suite saving a
# baseline (with its wall time), then the memory-fit emulation of a 40 GB and a 48 GB card.
# Usage: tools/gpu_run_suite.sh OUTDIR [full|emulate]
set -u
export PYTHONUNBUFFERED=1
o=$1; mkdir -p "$o"
case "${2:-full}" in
  full)
    s=$SECONDS
    python3 -m pytest benchmarks -p no:cacheprovider -rs --gpuperf-baseline=save \
      --gpuperf-baseline-dir="$o/baselines" --gpuperf-json="$o/suite.json" > "$o/suite.log" 2>&1
    echo "suite rc=$? wall $((SECONDS - s)) s" >> "$o/suite.log" ;;
  emulate)
    for card in a100-40gb rtx-6000-ada; do
      s=$SECONDS
      python3 -m pytest benchmarks/test_finetune.py -p no:cacheprovider -rs -k "sweep or max_batch" \
        --gpu-emulate=$card --gpuperf-baseline=save --gpuperf-baseline-dir="$o/baselines" \
        --gpuperf-json="$o/emulate-$card.json" > "$o/emulate-$card.log" 2>&1
      echo "emulate $card rc=$? wall $((SECONDS - s)) s" >> "$o/emulate-$card.log"
    done ;;
esac

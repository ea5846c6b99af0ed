#!/usr/bin/env bash
# A second call on nvidia-h200-x2 (multi-GPU and suite-time issues): the multi-GPU tests
# changed after session b (more calls per sample for 1 and 16 MiB; DDP at the GPU-bound
# batch 32) in 3 saved sessions and one compared, then the dtype and generation modules with
# `-n 2 --dist loadgroup` (one GPU per xdist worker).
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
t() { echo "$(date +%T) $*" | tee -a "$o/session.log"; }
for i in 1 2 3 4; do
  mode=save; [ "$i" = 4 ] && mode=compare
  s=$SECONDS
  timeout 100 python3 -m pytest benchmarks/test_multigpu.py -p no:cacheprovider -rs -v \
    -k "ddp or 1MiB or 16MiB" \
    --gpuperf-baseline=$mode --gpuperf-baseline-dir="$o/bl" --gpuperf-json="$o/mg-$i.json" \
    > "$o/mg-$i.log" 2>&1
  t "multigpu session $i ($mode) rc=$? $((SECONDS - s)) s"
done
s=$SECONDS
timeout 220 python3 -m pytest benchmarks/test_dtype.py benchmarks/test_generate.py -n 2 \
  --dist loadgroup -p no:cacheprovider -rs -v --gpu-profile=h200 --gpuperf-baseline=save \
  --gpuperf-baseline-dir="$o/bl-xdist" --gpuperf-json="$o/xdist.json" > "$o/xdist.log" 2>&1
t "dtype+generate -n 2 rc=$? $((SECONDS - s)) s"
cd "$o" && tar czf c.tgz --exclude=c.tgz --exclude=session.log . ; find . -mindepth 1 -maxdepth 1 ! -name c.tgz ! -name session.log -exec rm -rf {} +

#!/usr/bin/env bash
# One device call on nvidia-h200-x2 (multi-GPU issue): topology, then the multi-GPU
# benchmarks (collectives 1 MiB-1 GiB, P2P both ways, DDP LoRA scaling) in 3 fresh sessions
# saved as a baseline, then a 4th session compared with it. NCCL's environment is the
# runner's: nothing here sets NCCL_* variables.
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
t() { echo "$(date +%T) $*" | tee -a "$o/session.log"; }
{ env | grep -E '^NCCL_' ; nvidia-smi topo -m; nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,power.limit --format=csv; } > "$o/topology.txt" 2>&1
python3 -m pytest --gpu-info -p no:cacheprovider > "$o/gpu-info.txt" 2>&1
t "gpu-info rc=$?"
for i in 1 2 3 4; do
  mode=save; [ "$i" = 4 ] && mode=compare
  s=$SECONDS
  timeout 140 python3 -m pytest benchmarks/test_multigpu.py -p no:cacheprovider -rs -v \
    --gpuperf-baseline=$mode --gpuperf-baseline-dir="$o/bl" --gpuperf-json="$o/mg-$i.json" \
    > "$o/mg-$i.log" 2>&1
  t "multigpu session $i ($mode) rc=$? $((SECONDS - s)) s"
done
cd "$o" && tar czf b.tgz --exclude=b.tgz --exclude=session.log . ; find . -mindepth 1 -maxdepth 1 ! -name b.tgz ! -name session.log -exec rm -rf {} +

#!/usr/bin/env bash
# Issue 63's one-GPU part, from the repository's root on a one-GPU machine: the multi-GPU
# module under the plugin's markers (every two-GPU test skipped, saying why; the gloo tests
# are CPU-only), then the NCCL code path of pytest_gpuperf.distributed at world size 1 on
# the GPU (run_ranks, time_collective, a 256 MiB all-reduce and all-gather). Leaves under
# $OUT: call.log, mod.log.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || exit 3
nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> "$OUT/call.log" 2>&1
echo "NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-unset} start $(date -u +%FT%TZ)" >> "$OUT/call.log"
timeout 200 python3 -m pytest benchmarks/test_multigpu.py -rs -p no:cacheprovider > "$OUT/mod.log" 2>&1
echo "module rc=$? $(tail -1 "$OUT/mod.log")" >> "$OUT/call.log"
timeout 200 python3 tests/gpu/multigpu_one.py >> "$OUT/call.log" 2>&1
echo "nccl rc=$? $(date -u +%T)" >> "$OUT/call.log"

#!/usr/bin/env bash
# One device call of the own-file runs (tests/gpu/paired.sh), from the repository's root on
# a GPU machine: tests/gpu/own_call.sh TAG PART..., PART a paired.sh part (save, aa:1-2,
# 5:3-3, ...), `probe` (tests/gpu/kernel_levels.py in 6 processes), `probe2` (its values
# and place modes, 3 processes each) or `probe3` (its own and both modes, 3 processes
# each). It installs the wheels carried in .whl and the plugin, restores /tmp/paired-repo
# from .carry/paired-repo.tgz when a fresh machine lacks it, skips a part that would not
# end by DEADLINE (575 s) at NEED (175 s) a part, and leaves under $OUT: call.log, p-TAG.tgz
# (the runs' logs and JSON) and paired-repo.tgz (copy it to .carry/ for the next call).
set -u
tag=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 2
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || exit 3
if [ ! -d /tmp/paired-repo/.git ] && [ -f .carry/paired-repo.tgz ]; then
  tar xzf .carry/paired-repo.tgz -C /tmp && echo "restored /tmp/paired-repo" | tee -a "$OUT/call.log"
fi
nvidia-smi --query-gpu=name,serial,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,driver_version --format=csv >> "$OUT/call.log" 2>&1
# the runner's copy carries the working tree's files but an older .git: its HEAD misnames the
# code, so the plugin's sources are named by a digest (tests/gpu/src_digest.sh, run here too)
echo "$tag start $(date -u +%FT%TZ) plugin sources $(tests/gpu/src_digest.sh)" >> "$OUT/call.log"
finish() {
  tar czf "$OUT/p-$tag.tgz" -C "$OUT" p 2>/dev/null && rm -rf "$OUT/p"
  [ -d /tmp/paired-repo ] && tar czf "$OUT/paired-repo.tgz" -C /tmp paired-repo
}
trap finish EXIT
for part in "$@"; do
  if [ "$part" = probe ]; then
    timeout 150 bash -c 'for i in 1 2 3 4 5 6; do python3 tests/gpu/kernel_levels.py $i; done' > "$OUT/levels.jsonl" 2> "$OUT/levels.err"
    echo "probe rc=$? at ${SECONDS}s" >> "$OUT/call.log"; continue
  fi
  if [ "$part" = probe3 ]; then  # a weight of its own per matmul (kernel_levels.py own)
    timeout 150 bash -c 'for i in 1 2 3; do python3 tests/gpu/kernel_levels.py $i own; python3 tests/gpu/kernel_levels.py $i both; done' > "$OUT/levels3.jsonl" 2> "$OUT/levels3.err"
    echo "probe3 rc=$? at ${SECONDS}s" >> "$OUT/call.log"; continue
  fi
  if [ "$part" = probe2 ]; then  # placement or values (kernel_levels.py's modes)
    timeout 150 bash -c 'for m in values place; do for i in 1 2 3; do python3 tests/gpu/kernel_levels.py $i $m; done; done' > "$OUT/levels2.jsonl" 2> "$OUT/levels2.err"
    echo "probe2 rc=$? at ${SECONDS}s" >> "$OUT/call.log"; continue
  fi
  if [ $((SECONDS + ${NEED:-175})) -gt ${DEADLINE:-575} ]; then echo "skipped $part at ${SECONDS}s" >> "$OUT/call.log"; continue; fi
  tests/gpu/paired.sh "$part" "$OUT/p"
  echo "$part done at ${SECONDS}s" >> "$OUT/call.log"
done

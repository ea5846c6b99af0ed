#!/usr/bin/env bash
# Another process on the GPU (issue #33, point 2), from the repository's root on a GPU
# machine: tests/gpu/gpu_shared.sh [OUTDIR]. Runs tests/gpu/test_gpu_shared.py
#   alone   nothing else on the GPU: the result must not be flagged gpu-shared
#   beside  beside a bf16 matmul loop in a process of this script's own, on the same GPU
#           (bounded to NEIGHBOUR_S seconds, ended by its PID in a trap): it must be flagged,
#           with that PID; then a save beside it must be refused (exit != 0, file unwritten)
# and exits 0 when all three hold. Logs and JSON go to OUTDIR; a summary to OUTDIR/s.log.
set -u
out=${1:-/tmp/gpu-shared}; mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
limit=${NEIGHBOUR_S:-240}
opts=(-q -p no:cacheprovider -rs --gpuperf-max-time=2 --gpuperf-no-confirm --gpuperf-paired=off)
neighbour=
stop_neighbour() {
  if [ -n "$neighbour" ]; then kill "$neighbour" 2>/dev/null; wait "$neighbour" 2>/dev/null; fi
  neighbour=
}
trap stop_neighbour EXIT INT TERM
run() {  # label, expect (0/1), extra pytest args...
  local label=$1 expect=$2; shift 2
  GPUPERF_EXPECT_SHARED=$expect GPUPERF_NEIGHBOUR_PID=${neighbour:-} timeout 300 \
    python3 -m pytest "$here/test_gpu_shared.py" "${opts[@]}" "$@" \
    "--gpuperf-json=$out/$label.json" > "$out/$label.log" 2>&1
  local rc=$?
  echo "$label rc=$rc $(grep -E 'passed|failed|skipped' "$out/$label.log" | tail -1)" | tee -a "$out/s.log"
  grep -E "shared GPU|cannot be detected|NOT SAVED" "$out/$label.log" | sed 's/^/    /' | tee -a "$out/s.log"
  return $rc
}
: > "$out/s.log"
run alone 0 --gpuperf-baseline=off; alone=$?

rm -f "$out/ready"
python3 -c '
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.mm(a, a); torch.cuda.synchronize()
open(sys.argv[1], "w").write("ready")
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(20):
        torch.mm(a, a)
    torch.cuda.synchronize()
' "$out/ready" "$limit" > "$out/neighbour.log" 2>&1 &
neighbour=$!
for _ in $(seq 120); do [ -f "$out/ready" ] && break; sleep 0.5; done
if [ ! -f "$out/ready" ]; then echo "the neighbour never started (see $out/neighbour.log)" | tee -a "$out/s.log"; exit 2; fi
echo "neighbour PID $neighbour running a matmul loop" | tee -a "$out/s.log"
run beside 1 --gpuperf-baseline=off; beside=$?
mkdir -p "$out/b"
run save 1 --gpuperf-baseline=save "--gpuperf-baseline-dir=$out/b"; save=$?
stop_neighbour
refused=1
if [ "$save" -ne 0 ] && grep -q "NOT SAVED: 1 test(s) measured while another process used the GPU" "$out/save.log" \
  && ! grep -q "test_gpu_shared_matmul" "$out"/b/*.json 2>/dev/null; then refused=0; fi
echo "alone=$alone beside=$beside save-refused=$refused (0: as expected)" | tee -a "$out/s.log"
[ "$alone" -eq 0 ] && [ "$beside" -eq 0 ] && [ "$refused" -eq 0 ]

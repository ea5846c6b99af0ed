#!/usr/bin/env bash
# One device call: detection, the test suite, the measurement-engine evidence and five
# fresh benchmark sessions. Logs under $OUT (few files: the device returns at most 8).
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o/json"
t0=$SECONDS
python3 -m pytest tests -q -p no:cacheprovider -rs -k "not test_plugin_markers" > "$o/tests.log" 2>&1; echo "tests rc=$? in $((SECONDS - t0)) s" >> "$o/tests.log"
python3 tools/gpu_timing_evidence.py "$o/json/timing.json" > "$o/timing.log" 2>&1; echo "timing rc=$? at $((SECONDS - t0)) s" >> "$o/timing.log"
ids="benchmarks/test_dtype.py::test_matmul[bf16] benchmarks/test_dtype.py::test_cast_bandwidth[fp32-to-bf16] benchmarks/test_finetune.py::test_lora_step benchmarks/test_generate.py::test_generate_eager"
for i in 1 2 3 4 5; do
  [ $((SECONDS - t0)) -lt 430 ] || { echo "session $i not started: time" >> "$o/sessions.log"; break; }
  s=$SECONDS
  python3 -m pytest $ids -q -p no:cacheprovider --durations=6 --benchmark-json="$o/json/s$i.json" >> "$o/sessions.log" 2>&1
  echo "session $i rc=$? in $((SECONDS - s)) s" >> "$o/sessions.log"
done
python3 tools/session_spread.py "$o"/json/s?.json > "$o/spread.log" 2>&1
tar czf "$o/json.tgz" -C "$o" json && rm -r "$o/json"

#!/usr/bin/env bash
# One device call: detection, the test suite, the measurement-engine evidence and five
# fresh benchmark sessions. Logs under $OUT (few files: the device returns at most 8).
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o/json"
{ nvidia-smi; python3 -m pytest --gpu-info; python3 -m pytest --gpu-profiles; } > "$o/info.log" 2>&1
python3 -m pytest tests -q -p no:cacheprovider -rs > "$o/tests.log" 2>&1; echo "tests rc=$?" >> "$o/tests.log"
python3 tools/gpu_timing_evidence.py "$o/json/timing.json" > "$o/timing.log" 2>&1
sel="test_matmul and bf16 or fp32-to-bf16 or lora_step"
for i in 1 2 3 4 5; do
  s=$SECONDS
  python3 -m pytest benchmarks -q -p no:cacheprovider -k "$sel" --benchmark-json="$o/json/s$i.json" >> "$o/sessions.log" 2>&1
  echo "session $i rc=$? in $((SECONDS - s)) s" >> "$o/sessions.log"
done
python3 -m pytest benchmarks -q -p no:cacheprovider -k "generate_eager or (qlora_step and 7b)" --benchmark-json="$o/json/gen.json" > "$o/generate.log" 2>&1
python3 tools/session_spread.py "$o"/json/s?.json > "$o/spread.log" 2>&1
tar czf "$o/json.tgz" -C "$o" json && rm -r "$o/json"

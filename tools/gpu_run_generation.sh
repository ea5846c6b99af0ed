#!/usr/bin/env bash
# One device call for the generation issue (nvidia-h200): the compiled decoder's correctness
# on CUDA, the 1B decoder compiled vs graph-only, then the 7B scale tier. Each step under its
# own timeout; JSON and logs land under $OUT as each finishes; the last step tars them.
set -u
export PYTHONUNBUFFERED=1
o=${OUT:-/tmp/out}; mkdir -p "$o"
t() { echo "$(date +%T) $*" | tee -a "$o/session.log"; }
s=$SECONDS
timeout 150 python3 -m pytest tests/test_gpu.py -k compiled -v -p no:cacheprovider > "$o/compiled-test.log" 2>&1
t "tests/test_gpu.py -k compiled rc=$? $((SECONDS - s)) s"
s=$SECONDS
timeout 170 python3 -m pytest benchmarks/test_generate.py -k "static and llama-1b and 256tok" -v -rs \
  -p no:cacheprovider --gpuperf-baseline=off --gpuperf-json="$o/decoder.json" > "$o/decoder.log" 2>&1
t "1B decoder, graph vs compiled rc=$? $((SECONDS - s)) s"
s=$SECONDS
timeout 230 python3 -m pytest benchmarks/test_generate.py -m scale -k llama2-7b -v -rs \
  -p no:cacheprovider --gpuperf-baseline=off --gpuperf-json="$o/scale-7b.json" > "$o/scale-7b.log" 2>&1
t "scale tier, 7B rc=$? $((SECONDS - s)) s"
cd "$o" && tar czf gen.tgz --exclude=gen.tgz --exclude=session.log . ; find . -mindepth 1 -maxdepth 1 ! -name gen.tgz ! -name session.log -exec rm -rf {} +

#!/bin/bash
# The README's commands, followed exactly, timed, from a fresh clone beside 3 busy loops.
set -u
W=/tmp/walk; rm -rf $W; mkdir -p $W; cd $W
for j in 1 2 3; do (timeout 1800 python3 -c "while True: pass" &); done
t() { local s=$SECONDS; "$@"; local rc=$?; echo "== $(date -u +%T) rc=$rc $((SECONDS-s)) s load $(cut -d' ' -f1 /proc/loadavg): $*"; return $rc; }
t git clone -q /work/main repo && cd repo
t python3 -m venv .venv && . .venv/bin/activate
t python -m pip install -q "torch==2.13.0" -e ".[dev]"
t pytest benchmarks -q -p no:cacheprovider > ../bench.log 2>&1; tail -2 ../bench.log
mkdir -p ../ex && cd ../ex && git init -q .
python3 - <<'PY'
import re
t = open('../repo/README.md').read()
open('test_example.py', 'w').write(re.search(r"```python\n# test_example.py\n(.*?)```", t, re.S).group(1))
PY
for i in 1 2 3; do t pytest test_example.py --gpuperf-baseline=save > save$i.log 2>&1; grep -E "baseline:|NOT SAVED" save$i.log | cut -c1-200; done
t pytest test_example.py > aa.log 2>&1; grep -E "BLIND|UNCHANGED|INCONCLUSIVE|REGRESSED" aa.log | cut -c1-250
SLOW=2 t pytest test_example.py > slow.log 2>&1; grep -E "PERFORMANCE REGRESSION|BLIND" slow.log | cut -c1-250
cd ../repo && t pytest tests -n auto -q -p no:cacheprovider > ../tests.log 2>&1; tail -1 ../tests.log
pkill -f "while True: pass"
echo "walk done $(date -u +%T)"

#!/usr/bin/env bash
# gpuperf bisect's GPU run (issue 62), from the repository's root on a GPU machine:
#   tests/gpu/bisect_call.sh TAG CULPRIT
# builds /tmp/bis-repo: 16 commits of tests/gpu/test_bisect_copy.py, the CULPRIT-th (1-15)
# raising its copies a call from 40 to 42 (5% more kernel work), the others touching a
# notes file; then `gpuperf bisect --good HEAD~15 --bad HEAD` of its test, within BUDGET
# seconds (default 480). Its rounds run in long-lived processes (2 a build, started once):
# one walk is reckoned at about 4 min on an H100 or H200, within the 540 s timeout below.
# RESUME=1 on the same warm machine goes on with the repository and state a previous call
# left (`--resume`). Leaves under $OUT: call.log (with the estimate and the processes
# started), TAG.json, TAG.md and TAG.log (bisect's output).
set -u
tag=$1 culprit=$2
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || exit 3
nvidia-smi --query-gpu=name,serial,clocks.max.sm,power.limit,driver_version --format=csv >> "$OUT/call.log" 2>&1
repo=/tmp/bis-repo-$tag
g() { git -C $repo -c user.email=gpu@gpu -c user.name=gpu "$@"; }
resume=()
if [ -n "${RESUME:-}" ] && [ -d $repo/.git ]; then
  resume=(--resume)
else
rm -rf $repo && mkdir -p $repo && cp tests/gpu/test_bisect_copy.py $repo/ || exit 1
g init -q && g add -A && g commit -qm "c0: the copy benchmark"
for i in $(seq 1 15); do
  if [ "$i" = "$culprit" ]; then
    sed -i 's/^CALLS = 40$/CALLS = 42/' $repo/test_bisect_copy.py
    g commit -qam "c$i: 5% more copies a call"
  else
    echo "note $i" >> $repo/notes.txt && g add -A && g commit -qm "c$i: a note"
  fi
done
fi
echo "start $(date -u +%FT%TZ) tag $tag culprit c$culprit $(g rev-parse --short HEAD~$((15 - culprit)))" | tee -a "$OUT/call.log"
s=$SECONDS
(cd $repo && timeout -s TERM 540 python3 -m pytest_gpuperf bisect --good HEAD~15 --bad HEAD \
   --budget "${BUDGET:-480}" "${resume[@]}" --json "$OUT/$tag.json" --markdown "$OUT/$tag.md" \
   -- test_bisect_copy.py::test_copy -p no:cacheprovider --gpuperf-max-time=1) > "$OUT/$tag.log" 2>&1
echo "$tag rc=$? $((SECONDS - s)) s $(date -u +%T)" | tee -a "$OUT/call.log"
grep -E '^estimate:|process\(es\) started' "$OUT/$tag.log" | cut -c1-400 >> "$OUT/call.log"
tail -25 "$OUT/$tag.log" | cut -c1-300 >> "$OUT/call.log"

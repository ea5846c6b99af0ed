#!/bin/sh
# Regression check of 2026-12-03: the 2026-12-02 evaluate_paired.py and this folder's copy (no new
# switch; and with --kstats, its extra lines removed) on the same small cells must print the same.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
cp -r /work/shared/gate-sim/. "$T"
cp "$HERE/../gate-sim-2026-12-01/vecgate.py" "$HERE/../gate-sim-2026-12-01/evaluate.py" "$T/fast/"
mkdir "$T/old" "$T/new"
cp "$HERE/../gate-sim-2026-12-02-paired/evaluate_paired.py" "$T/old/"
cp "$HERE/../gate-sim-2026-12-02-paired/evaluate_paired.py" "$T/new/" && patch -s "$T/new/evaluate_paired.py" "$HERE/kclass.patch"
cp "$T/fast/vecgate.py" "$T/fast/evaluate.py" "$T/old/"; cp "$T/fast/vecgate.py" "$T/fast/evaluate.py" "$T/new/"
A="--sim-dir $T --aa 2000 --det 300 --ks 3,5 --tols 0.03 --fa 0.005 --fa2 0.005"
M="--pair-r 6 --ext-r 12 --kpair 0.0103 --kpool-kind --lb-gpu 0.0073 --scens aa,d5,d10,cw5,kst --rules new+paired-projloo-kcheck-ext+confirm,new+paired-projloo-kcheck+confirm"
D="--lb-gpu 0 --scens aa,d5,sub2,cw5,env5 --rules new+confirm,new+paired+confirm,new+paired-exlb+confirm,new+paired-proj+confirm"
G="--lb-gpu 0.011 --scens aa,d5,cw5 --rules new+paired-proj+confirm,new+paired-projloo-kcheck+confirm"
fail=0
for cell in M D G; do
  eval "X=\$$cell"
  nice -n 10 python3 "$T/old/evaluate_paired.py" $A $X > "$T/old_$cell.txt"
  nice -n 10 python3 "$T/new/evaluate_paired.py" $A $X > "$T/new_$cell.txt"
  if cmp -s "$T/old_$cell.txt" "$T/new_$cell.txt"; then echo "cell $cell: identical ($(wc -l < "$T/old_$cell.txt") lines)"; else echo "cell $cell: DIFFERENT"; diff "$T/old_$cell.txt" "$T/new_$cell.txt" || true; fail=1; fi
done
nice -n 10 python3 "$T/new/evaluate_paired.py" $A $M --kstats > "$T/new_M_kstats.txt"
grep -v '^   kernel figures' "$T/new_M_kstats.txt" > "$T/new_M_kstats_stripped.txt"
if cmp -s "$T/old_M.txt" "$T/new_M_kstats_stripped.txt"; then echo "cell M --kstats: identical after its kernel lines are removed"; else echo "cell M --kstats: DIFFERENT"; fail=1; fi
echo "cell M as the old script prints it:"; cat "$T/old_M.txt"
echo "cell M --kstats (kernel lines):"; grep '^   kernel figures' "$T/new_M_kstats.txt"
echo "cell M --kclass --kstats:"; nice -n 10 python3 "$T/new/evaluate_paired.py" $A $M --kclass --kstats
echo "cell M --kclass --ktau-scale 3 --kstats:"; nice -n 10 python3 "$T/new/evaluate_paired.py" $A $M --kclass --ktau-scale 3 --kstats
rm -rf "$T"
exit $fail

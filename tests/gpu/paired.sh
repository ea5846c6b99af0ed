#!/usr/bin/env bash
# The paired stage on a GPU (the nightly-gate issue), from the repository's root on a GPU
# machine: tests/gpu/paired.sh PARTS OUTDIR, PARTS a list of
#   save  a git repository of tests/gpu/test_verdicts.py (+ slowdown.txt at 0) in
#         $PAIRED_REPO, and 3 baseline sessions saved there (each records its commit)
#   aa    3 judged runs of the unchanged code (stage 1, confirmation, the paired stage)
#   aa1   one such run
#   5 10  3 judged runs each with the code 5% / 10% slower (slowdown.txt edited, uncommitted:
#         the paired stage's base build is the baseline's commit, at 0)
#   aa:N 5:N 10:N  N such runs (numbered from 1); e.g. "aa:2 5:2"
#   aa:A-B 5:A-B 10:A-B  runs numbered A to B (a later call going on where one stopped)
# PAIRED_OPTS: more pytest options for every run (e.g. --gpuperf-paired-budget=100).
# Each run's log and JSON go to OUTDIR; one summary line per run to OUTDIR/p.log.
set -u
parts=$1; out=$2; mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
repo=${PAIRED_REPO:-/tmp/paired-repo}
opts=(-q -p no:cacheprovider -rs --gpuperf-max-time=2 "--gpu-profile=${PAIRED_PROFILE:-h200}")
# shellcheck disable=SC2206  # PAIRED_OPTS: more pytest options, split on spaces
opts+=(${PAIRED_OPTS:-})
run() {  # label mode slowdown
  local label=$1 mode=$2 slow=$3 s=$SECONDS
  echo "$slow" > "$repo/slowdown.txt"
  (cd "$repo" && timeout 420 python3 -m pytest test_verdicts.py "${opts[@]}" \
    "--gpuperf-baseline=$mode" "--gpuperf-json=$out/$label.json") > "$out/$label.log" 2>&1
  local rc=$?
  echo "$label rc=$rc $((SECONDS - s)) s $(grep -E '^verdicts:' "$out/$label.log" | tail -1)" | tee -a "$out/p.log"
  grep -E "paired stage|re-measured" "$out/$label.log" | sed 's/^/    /' | tee -a "$out/p.log"
  python3 - "$label" "$out/$label.json" <<'PY' | tee -a "$out/p.log"
import json, sys
label, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except Exception as exc:  # noqa: BLE001
    print(f"  {label}: no JSON ({exc})"); raise SystemExit
for r in d.get("results", []):
    for n, v in (r.get("verdicts") or {}).items():
        if "peak" in n:
            continue
        s1 = (v.get("stage1") or {}).get("status")
        p = v.get("paired") or {}
        print(f"  {label} {r['nodeid'].split('::')[-1]} {n}: {v.get('status')} "
              f"{100 * (v.get('change') or 0):+.2f}% ±{100 * (v.get('uncertainty') or 0):.2f}%"
              + (f" (stage 1 {s1}; paired {p.get('rounds')} rounds)" if s1 else "")
              + (" [" + (v.get("reason") or "")[:140] + "]" if v.get("status") != "unchanged" else ""))
        if p.get("base_rounds"):  # each round's head/base, with its process pair
            print("      rounds: " + " ".join(
                f"{100 * (h / b - 1):+.1f}%({q})"
                for b, h, q in zip(p["base_rounds"], p["head_rounds"], p["round_pairs"])))
for s in d.get("class_shifts") or []:
    print(f"  {label} {s[:200]}")
PY
}
for part in $parts; do
  case $part in
    save) rm -rf "$repo" && mkdir -p "$repo" && cp "$here/test_verdicts.py" "$repo/" &&
          echo 0 > "$repo/slowdown.txt" && (cd "$repo" && git init -q && git add -A &&
          git -c user.email=gpu@h200 -c user.name=gpu commit -qm "benchmarks") || exit 1
          for i in 1 2 3; do run "save-$i" save 0; done ;;
    aa) for i in 1 2 3; do run "aa-$i" compare 0; done ;;
    aa1) run "aa-1" compare 0 ;;
    5) for i in 1 2 3; do run "slow5-$i" compare 0.05; done ;;
    10) for i in 1 2 3; do run "slow10-$i" compare 0.10; done ;;
    aa:*|5:*|10:*)
        kind=${part%%:*}; n=${part#*:}
        case $n in *-*) first=${n%-*}; last=${n#*-} ;; *) first=1; last=$n ;; esac
        case $kind in aa) label=aa; slow=0 ;; 5) label=slow5; slow=0.05 ;; *) label=slow10; slow=0.10 ;; esac
        for i in $(seq "$first" "$last"); do run "$label-$i" compare "$slow"; done ;;
  esac
done
echo 0 > "$repo/slowdown.txt"

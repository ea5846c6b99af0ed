#!/usr/bin/env bash
# The shipped suite's nightly gate on a GPU (the nightly-gate issue, #31), from the
# repository's root on a GPU machine: tests/gpu/suite_gate.sh PARTS OUTDIR, PARTS a list of
#   save:M     one baseline session of module M (finetune, generate, dtype, or all)
#   compare:M  one judged run of module M (stage 1, confirmation, the paired stage)
# in a clone of SUITE_BUNDLE (a `git bundle` of main, carried: the runner's own .git is
# stale, and each session must record a real commit that the paired stage can build), with
# the plugin installed editable from that clone. The baseline lives in the clone's
# gate-baselines/ (inside the checkout, so that each save records its commit; never the
# shipped baselines/), merged with SUITE_BASELINES' files first and copied back after each
# part where that is set (carried between machines: sessions saved on earlier machines count). Each part's log and JSON go to OUTDIR, with one summary line per part
# (exit code, wall time, the verdicts line, the paired stage's line, and the decided share
# of throughput figures) in OUTDIR/s.log. SUITE_PROFILE: the profile (h200; cpu to try the
# script on a machine without a GPU). SUITE_K: a -k expression for every part (a judged run
# of the finetune module takes longer than one 10-minute call: split it in two with
# SUITE_K='qlora_batch_sweep' and 'not qlora_batch_sweep'); SUITE_OPTS: more pytest
# options, split on spaces (e.g. --gpuperf-paired-budget=240).
set -u
parts=$1; mkdir -p "$2"; out=$(cd "$2" && pwd)  # absolute: the runs start in the clone
# on a GPU, without bitsandbytes every QLoRA test is skipped and its baseline entries read
# missing (a call of 2026-12-03 whose shell lacked the wheel's PYTHONPATH): refuse
if [ "${SUITE_PROFILE:-h200}" != cpu ] && ! python3 -c "import bitsandbytes" 2>/dev/null; then
  echo "bitsandbytes does not import: run the two lines of ../shared/tools/gpu-wheels.sh" \
    "in this shell first (export PYTHONPATH=/tmp/site)" | tee -a "$out/s.log"
  exit 2
fi
bundle=${SUITE_BUNDLE:-.carry/main.bundle}
clone=${SUITE_CLONE:-/tmp/suite}
carried=${SUITE_BASELINES:-}
[ -z "$carried" ] || { mkdir -p "$carried" && carried=$(cd "$carried" && pwd); }
if [ ! -d "$clone/.git" ]; then
  git clone -q --branch "${SUITE_BRANCH:-main}" "$bundle" "$clone" || exit 1
  (cd "$clone" && python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1) || exit 3
fi
base=$clone/gate-baselines; mkdir -p "$base"
# the carried sessions join the clone's by `gpuperf baseline merge` (a copy would put an
# older carried file over sessions this machine saved since: 2026-12-06, an H100's second
# session of two modules was lost that way and merged back from the calls' copies)
if [ -n "$carried" ]; then
  for f in "$carried"/*.json; do
    [ -e "$f" ] || continue
    b=$base/$(basename "$f")
    if [ -e "$b" ]; then python3 -m pytest_gpuperf baseline merge "$b" "$f" -o "$b" || exit 4
    else cp -a "$f" "$b"; fi
  done
fi
echo "clone at $(git -C "$clone" rev-parse --short HEAD)" | tee -a "$out/s.log"
module() { case $1 in all) echo benchmarks ;; *) echo "benchmarks/test_$1.py" ;; esac; }
for part in $parts; do
  mode=${part%%:*}; m=${part#*:}; label="$mode-$m-$(date +%H%M%S)"; s=$SECONDS
  sel=(); [ -z "${SUITE_K:-}" ] || sel=(-k "$SUITE_K")
  # shellcheck disable=SC2206  # SUITE_OPTS: more pytest options, split on spaces
  more=(${SUITE_OPTS:-})
  (cd "$clone" && timeout -s INT "${SUITE_TIMEOUT:-560}" python3 -m pytest "$(module "$m")" \
    -m "not scale" -q -p no:cacheprovider -rs --durations=12 "${sel[@]}" "${more[@]}" \
    "--gpu-profile=${SUITE_PROFILE:-h200}" "--gpuperf-baseline=$mode" \
    "--gpuperf-baseline-dir=$base" "--gpuperf-json=$out/$label.json") > "$out/$label.log" 2>&1
  rc=$?
  [ -z "$carried" ] || cp -a "$base/." "$carried/"
  echo "$label rc=$rc $((SECONDS - s)) s $(grep -E '^verdicts:' "$out/$label.log" | tail -1)" | tee -a "$out/s.log"
  grep -E "gpuperf: paired stage" "$out/$label.log" | sed 's/^/    /' | tee -a "$out/s.log"
  python3 - "$out/$label.json" <<'PY' | tee -a "$out/s.log"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:  # noqa: BLE001
    print(f"    no JSON ({exc})"); raise SystemExit
DECIDED = ("unchanged", "regressed", "improved")
n = dec = nb = decb = 0
for r in d.get("results", []):
    speed = {name: v for name, v in (r.get("verdicts") or {}).items()
             if name.startswith(("throughput", "latency")) and not name.endswith("_per_clock")}
    for name, v in speed.items():
        n += 1
        dec += v.get("status") in DECIDED
        if v.get("status") in ("regressed", "improved"):
            print(f"    {v['status'].upper()} {r['key']} {name} {100 * (v.get('change') or 0):+.2f}%")
    if speed:  # a benchmark's speed: its wall-time figure, or for launch-bound work its kernels'
        nb += 1
        decb += any(v.get("status") in DECIDED for v in speed.values())
if n:
    print(f"    decided {dec} of {n} speed figures ({100 * dec / n:.0f}%); "
          f"{decb} of {nb} benchmarks' speed ({100 * decb / nb:.0f}%)")
PY
done

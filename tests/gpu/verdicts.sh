#!/usr/bin/env bash
# The verdicts and the confirmation on a GPU (the verdict and fresh-process issues), from the
# repository's root on a GPU machine: tests/gpu/verdicts.sh PARTS OUTDIR, PARTS a list of
#   save  3 baseline sessions of tests/gpu/test_verdicts.py, each a fresh pytest process
#   aa    3 sessions judged against them (confirmation on: the default)
#   10    3 sessions with the GPU-bound work 10% slower (GPUPERF_SLOWDOWN=0.10)
#   k     each test alone (-k), baselines off: its peak memory against the whole file's
#   suite 2 baseline sessions of the dtype module and one fine-tuning preset, then 1 A/A
# Each session's log and JSON go to OUTDIR; one summary line per session to OUTDIR/v.log.
set -u
parts=$1; out=$2; mkdir -p "$out"
bl=${VERDICT_BASELINES:-/tmp/verdict-baselines}; mkdir -p "$bl"
opts=(-q -p no:cacheprovider -rs "--gpuperf-baseline-dir=$bl" --gpuperf-max-time=2)
summary() {  # label json
  python3 - "$1" "$2" <<'PY' >> "$out/v.log"
import json, sys
label, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except Exception as exc:  # noqa: BLE001
    print(f"  {label}: no JSON ({exc})"); raise SystemExit
for r in d.get("results", []):
    mem = {k: r.get(k) for k in r if "peak" in k or "resident" in k}
    def one(n, v):
        text = (f"{n} {v.get('status')} {100 * (v.get('change') or 0):+.2f}%"
                f"±{100 * (v.get('uncertainty') or 0):.2f}%")
        if v.get("per_cycle"):
            text += f" per-cycle {v['per_cycle']} {100 * (v.get('per_cycle_worse') or 0):+.2f}% worse"
        if v.get("confirmed") is not None:
            text += " confirmed" if v["confirmed"] else " NOT confirmed"
        if v.get("status") not in ("unchanged", "new"):
            text += f" [{(v.get('reason') or '')[:160]}]"
        return text
    vs = "; ".join(one(n, v) for n, v in (r.get("verdicts") or {}).items())
    clk = (r.get("telemetry") or {}).get("sm_clock_median_mhz")
    key = r.get("nodeid", "?") + (f"::{r['metric']}" if r.get("metric") else "")
    print(f"  {label} {key.split('::', 1)[-1]}: {vs or '-'} sm={clk} mem={mem}")
for s in d.get("class_shifts") or []:
    print(f"  {label} {s}")
PY
}
run() {  # label mode slowdown [pytest args...]
  local label=$1 mode=$2 slow=$3; shift 3
  local s=$SECONDS
  GPUPERF_SLOWDOWN=$slow timeout 300 python3 -m pytest "$@" "${opts[@]}" \
    "--gpuperf-baseline=$mode" "--gpuperf-json=$out/$label.json" > "$out/$label.log" 2>&1
  local rc=$?
  echo "$label rc=$rc $((SECONDS - s)) s $(grep -E '^verdicts:' "$out/$label.log" | tail -1)" | tee -a "$out/v.log"
  summary "$label" "$out/$label.json"
}
f=tests/gpu/test_verdicts.py
for part in $parts; do
  case $part in
    save) for i in 1 2 3; do run "save-$i" save 0 $f; done ;;
    aa) for i in 1 2 3; do run "aa-$i" compare 0 $f; done ;;
    5) for i in 1 2 3; do run "slow5-$i" compare 0.05 $f; done ;;
    10) for i in 1 2 3; do run "slow10-$i" compare 0.10 $f; done ;;
    k) for t in copy mlp attention "sweep and 8" "sweep and 256" "sweep and 2048"; do
         run "k-${t// /_}" off 0 $f -k "$t"; done ;;
    suite) sel=(benchmarks/test_dtype.py "benchmarks/test_finetune.py::test_lora_step")
       for i in 1 2; do run "suite-save-$i" save 0 "${sel[@]}" --gpu-profile=h200; done
       run "suite-aa-1" compare 0 "${sel[@]}" --gpu-profile=h200 ;;
  esac
done

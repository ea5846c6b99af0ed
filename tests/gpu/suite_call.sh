#!/usr/bin/env bash
# One device call of the shipped suite's judged parts (tests/gpu/suite_gate.sh), from the
# repository's root on a GPU machine: tests/gpu/suite_call.sh TAG PART..., PART one of
#   sweeps    the finetune module's QLoRA batch sweeps only (181 s judged in run 4)
#   finetune  the finetune module but the batch sweeps (396 s)
#   finetune-all  the whole finetune module (a save: 452-457 s on an H100)
#   dtype     the dtype module (131 s)
#   generate  the generation module (162 s)
# each judged (compare) against the baseline sessions carried in SUITE_BASELINES, or with
# SUITE_MODE=save saved as one more session of them, from the bundle .carry/main.bundle
# (its HEAD is what is judged or saved). The card picks the profile and its sessions: an
# H200 h200 and .carry/sb, an H100 h100 and .carry/sb100 (a call for one kind may be served
# by the other; SUITE_PROFILE and SUITE_BASELINES override); another card ends the call at
# once, exit 0. It installs the wheels carried in .whl (the two lines of
# ../shared/tools/gpu-wheels.sh), re-installs the plugin editable from the suite's clone
# where one is left from an earlier call (tests/gpu/own_call.sh installs the runner's copy,
# whose paired stage would then import the wrong build), skips a part that would not end
# by DEADLINE (570 s) at its own expected time (pytest is stopped at that time + 90 s, the
# last part's at DEADLINE + 20 s where that is later), and leaves under $OUT: call.log, s-TAG.tgz
# (each part's log, JSON and s.log) and sb-TAG.tgz (the baseline files after the call:
# sessions saved here come back only so).
set -u
tag=$1; shift
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "$card" > "$OUT/gpu.txt"
case $card in
  *H200*) profile=h200; sessions=.carry/sb ;;
  *H100*) profile=h100; sessions=.carry/sb100 ;;
  *) echo "no baseline sessions carried for '$card': nothing run" | tee -a "$OUT/call.log"; exit 0 ;;
esac
export SUITE_PROFILE=${SUITE_PROFILE:-$profile} SUITE_BASELINES=${SUITE_BASELINES:-$sessions}
mode=${SUITE_MODE:-compare}
case $mode in compare|save) ;; *) echo "SUITE_MODE must be compare or save, not '$mode'" >&2; exit 2 ;; esac
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 2
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || exit 3
if [ -d "${SUITE_CLONE:-/tmp/suite}/.git" ]; then
  (cd "${SUITE_CLONE:-/tmp/suite}" && python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1) || exit 3
fi
nvidia-smi --query-gpu=name,serial,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,driver_version --format=csv >> "$OUT/call.log" 2>&1
echo "$tag $mode ($SUITE_PROFILE, $SUITE_BASELINES) start $(date -u +%FT%TZ) bundle $(git bundle list-heads .carry/main.bundle 2>/dev/null | cut -c1-12)" >> "$OUT/call.log"
finish() {
  tar czf "$OUT/s-$tag.tgz" -C "$OUT" s 2>/dev/null && rm -rf "$OUT/s"
  tar czf "$OUT/sb-$tag.tgz" -C "$(dirname "$SUITE_BASELINES")" "$(basename "$SUITE_BASELINES")" 2>/dev/null
}
trap finish EXIT
last=${!#}
for part in "$@"; do
  case $part in
    sweeps) need=200; mod=finetune; k='qlora_batch_sweep' ;;
    finetune) need=430; mod=finetune; k='not qlora_batch_sweep' ;;
    finetune-all) need=490; mod=finetune; k='' ;;
    dtype) need=200; mod=dtype; k='' ;;
    generate) need=200; mod=generate; k='' ;;
    *) echo "unknown part $part" >> "$OUT/call.log"; continue ;;
  esac
  if [ $((SECONDS + need)) -gt "${DEADLINE:-570}" ]; then
    echo "skipped $part at ${SECONDS}s" >> "$OUT/call.log"; continue
  fi
  # pytest is stopped (SIGINT: it still writes its JSON) at need + 90 s; the call's last
  # part, later where the call's DEADLINE leaves more (an H100's judged finetune part may
  # pass 520 s)
  limit=$((need + 90)); left=$((${DEADLINE:-570} + 20 - SECONDS))
  [ "$part" = "$last" ] && [ "$left" -gt "$limit" ] && limit=$left
  SUITE_K=$k SUITE_TIMEOUT=$limit timeout $((limit + 10)) \
    tests/gpu/suite_gate.sh "$mode:$mod" "$OUT/s"
  echo "$part rc=$? done at ${SECONDS}s" >> "$OUT/call.log"
done

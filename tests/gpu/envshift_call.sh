#!/usr/bin/env bash
# The no-wrong-pass issue's GPU run and the strict gate's, from the repository's root on a
# GPU machine: tests/gpu/envshift_call.sh PART..., PART one of
#   save  a git repository of tests/gpu/test_envshift.py in /tmp/env-repo and 3 baseline
#         sessions saved there on this card (each a fresh pytest process; each records its commit)
#   aa    a judged run of the unchanged code under --gpuperf-strict (must exit 0)
#   env   a judged run with GPUPERF_ENV_SLOWDOWN=0.10 (the copy 10% slower in both builds,
#         an environment change): must fail as a regression outside the code
#   env4  the same at 0.04: a copy stage 1 confirmed regressed reads inconclusive (the base
#         off beyond the tolerance, within the tolerance and the machines' band: this card
#         and the environment not told apart); one it left undecided may read unchanged
#   slow  a judged run with the copy 10% slower in a committed change (the paired stage's
#         base build is the baseline's commit): must fail as a regression of the code
# It installs the plugin, restores /tmp/env-repo from .carry/env-repo.tgz on a fresh machine,
# and leaves under $OUT: call.log, e.tgz (each run's log and JSON) and env-repo.tgz.
set -u
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || exit 3
repo=/tmp/env-repo
if [ ! -d $repo/.git ] && [ -f .carry/env-repo.tgz ]; then
  tar xzf .carry/env-repo.tgz -C /tmp && echo "restored $repo" | tee -a "$OUT/call.log"
fi
nvidia-smi --query-gpu=name,serial,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv >> "$OUT/call.log" 2>&1
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
  *H200*) profile=h200 ;; *H100*) profile=h100 ;; *) echo "another card: stop" >> "$OUT/call.log"; exit 0 ;;
esac
echo "start $(date -u +%FT%TZ) profile $profile plugin $(git rev-parse --short HEAD 2>/dev/null)" >> "$OUT/call.log"
mkdir -p "$OUT/e"
finish() {
  tar czf "$OUT/e.tgz" -C "$OUT" e 2>/dev/null && rm -rf "$OUT/e"
  [ -d $repo ] && tar czf "$OUT/env-repo.tgz" -C /tmp env-repo
}
trap finish EXIT
opts=(-p no:cacheprovider -rs --gpuperf-max-time=2 "--gpu-profile=$profile")
run() {  # label mode [env...]
  local label=$1 mode=$2 s=$SECONDS; shift 2
  (cd $repo && env "$@" timeout -s INT 400 python3 -m pytest test_envshift.py "${opts[@]}" \
    "--gpuperf-baseline=$mode" "--gpuperf-json=$OUT/e/$label.json" ${EXTRA:-}) > "$OUT/e/$label.log" 2>&1
  echo "$label rc=$? $((SECONDS - s)) s $(date -u +%T)" | tee -a "$OUT/call.log"
  grep -iE "REGRESS|IMPROVED|paired stage|base |blind|undecided|strict|outside" "$OUT/e/$label.log" | cut -c1-400 | sed 's/^/    /' >> "$OUT/call.log"
}
for part in "$@"; do
  case $part in
    save) rm -rf $repo && mkdir -p $repo && cp tests/gpu/test_envshift.py $repo/ &&
          (cd $repo && git init -q && git add -A && git -c user.email=gpu@gpu -c user.name=gpu commit -qm benchmarks) || exit 1
          for i in 1 2 3; do run "save-$i" save; done ;;
    aa) EXTRA=--gpuperf-strict run aa compare ;;
    env) run env compare GPUPERF_ENV_SLOWDOWN=0.10 ;;
    env4) run env4 compare GPUPERF_ENV_SLOWDOWN=0.04 ;;
    slow) sed -i 's/^ENV_SLOWDOWN = .*/ENV_SLOWDOWN = 0.10/' $repo/test_envshift.py &&
          (cd $repo && git -c user.email=gpu@gpu -c user.name=gpu commit -qam "copy 10% slower")
          run slow compare
          (cd $repo && git reset -q --hard HEAD~1) ;;
  esac
done

#!/bin/sh
# The two-stage gate in gate-sim's fast simulator: stage 1 (vecgate.new of 2026-12-01, at 0.5%,
# with the fresh-process confirmation) + stage 2 (6 paired rounds, at 0.5%), tolerance 3%.
#   sh run_fast.sh            launch-bound figures as they are (wall time, left to stage 1)
#   sh run_fast.sh 0.011      launch-bound figures given a GPU kernel-time figure with 1.1% spread,
#                             in the model class, re-measured in stage 2 (any spread: sh run_fast.sh 0.02)
# PAIR_R (rounds, default 6), RULES (a comma list), SCENS (scenarios, e.g. aa,d5,d10,cw5,kst)
# KPAIR (the kernel-time figures' spread of one paired round, or a comma list given to them in
# turn; default their class's) and KPOOL_KIND=1 (stage 2 pools kernel figures only with kernel figures:
# the project's rule since 149eb60, with RULES=new+paired-projloo-kcheck+confirm)
# override the defaults; the
# leave-one-out screen of 2026-12-02: RULES=new+paired-proj+confirm,new+paired-projloo+confirm.
# EXT_R (default 0: nothing drawn, every output as before): the two-look rule's extra rounds,
# RULES=new+paired-projloo-kcheck-ext+confirm (gate-sim-2026-12-02-ext).
# Needs numpy and scipy (e.g. /work/venv). Prints the table to stdout.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
SIM=${GATE_SIM:-/work/shared/gate-sim}
T=$(mktemp -d)
cp -r "$SIM/." "$T"                                   # sim.py and noise_model.json (gate-sim is not edited)
cp "$HERE/../gate-sim-2026-12-01/vecgate.py" "$HERE/../gate-sim-2026-12-01/evaluate.py" "$T/fast/"
cp "$HERE/evaluate_paired.py" "$T/fast/"
cd "$T/fast"
LB=${1:-0}
nice -n 10 python3 evaluate_paired.py --sim-dir .. --aa 20000 --det 2000 --ks 3,5,10 --tols 0.03 \
    --fa 0.005 --fa2 0.005 --pair-r "${PAIR_R:-6}" --ext-r "${EXT_R:-0}" --scens "${SCENS:-aa,d5,d10,cw5}" --lb-gpu "$LB" --kpair "${KPAIR:-}" ${KPOOL_KIND:+--kpool-kind} \
    --rules "${RULES:-new+confirm,new+paired+confirm,new+paired-exlb+confirm,new+paired-proj+confirm}"

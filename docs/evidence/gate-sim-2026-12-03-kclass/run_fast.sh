#!/bin/sh
# gate-sim-2026-12-02-paired/run_fast.sh, copied 2026-12-03 (gate-sim-2026-12-03-kclass) with five
# more switches, which kclass.patch adds to that folder's evaluate_paired.py (nothing else changed; without them every output is as the 2026-12-02 script's):
#   KCLASS=1      with a launch-bound GPU spread (sh run_fast.sh 0.0073): the RULE judges the 8
#                 kernel-time figures in a class of their own ("kernels": pooled among themselves,
#                 no session or run offsets, no class line); the data is simulated as before
#                 (their session offsets are still the model class's); --kclass
#   KTAU=3        the kernel-time figures' simulated session offsets 3 x the model class's; --ktau-scale
#   KSTATS=1      one more line per rule: the 8 kernel-time figures alone; --kstats
#   VG_SCREEN3=1  stage 1's screen as the plugin's since c170601/a73d48a (vecgate_screen3.patch):
#                 a class it would take below three metrics has no pool, its line the last pool's
#   KSTATE=0.10   the kst/kss scenarios' state offset sd (default 5%); SCENS=...,kss: one offset a run
#                 shared by the 8 kernel-time figures (kst: one per figure); --kstate
# Everything else (the positional launch-bound spread, PAIR_R, RULES, SCENS, KPAIR, KPOOL_KIND,
# EXT_R) as ../gate-sim-2026-12-02-paired/run_fast.sh says.
# AA / DET (default 20000 / 2000): runs per A/A row and per detection row (a quick check: AA=2000 DET=200).
# Needs numpy and scipy (e.g. /work/venv). Prints the table to stdout.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
SIM=${GATE_SIM:-/work/shared/gate-sim}
T=$(mktemp -d)
cp -r "$SIM/." "$T"                                   # sim.py and noise_model.json (gate-sim is not edited)
cp "$HERE/../gate-sim-2026-12-01/vecgate.py" "$HERE/../gate-sim-2026-12-01/evaluate.py" "$T/fast/"
patch -s "$T/fast/vecgate.py" "$HERE/vecgate_screen3.patch"  # inert unless VG_SCREEN3=1: the screen of c170601
cp "$HERE/../gate-sim-2026-12-02-paired/evaluate_paired.py" "$T/fast/"   # the 2026-12-02 script,
patch -s "$T/fast/evaluate_paired.py" "$HERE/kclass.patch"                # with this folder's switches
cd "$T/fast"
LB=${1:-0}
nice -n 10 python3 evaluate_paired.py --sim-dir .. --aa "${AA:-20000}" --det "${DET:-2000}" --ks "${KS:-3,5,10}" --tols 0.03 \
    --fa 0.005 --fa2 0.005 --pair-r "${PAIR_R:-6}" --ext-r "${EXT_R:-0}" --scens "${SCENS:-aa,d5,d10,cw5}" --lb-gpu "$LB" --kpair "${KPAIR:-}" ${KPOOL_KIND:+--kpool-kind} \
    ${KCLASS:+--kclass} --ktau-scale "${KTAU:-1}" ${KSTATS:+--kstats} ${KSTATE:+--kstate "$KSTATE"} \
    --rules "${RULES:-new+confirm,new+paired+confirm,new+paired-exlb+confirm,new+paired-proj+confirm}"
rm -rf "$T"

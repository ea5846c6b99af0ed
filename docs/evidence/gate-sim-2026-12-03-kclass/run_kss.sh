#!/bin/sh
# The shared kernel-state scenario (kss, added 2026-12-03) before and with --kclass, 2 at a time.
cd "$(dirname "$0")"
S="PAIR_R=6 EXT_R=12 KPAIR=0.0103 KPOOL_KIND=1 SCENS=aa,kss RULES=new+paired-projloo-kcheck-ext+confirm KSTATS=1"
( env $S sh run_fast.sh 0.0073 > fast_kss_before_lb0073.txt 2>&1 ) &
( env $S KCLASS=1 sh run_fast.sh 0.0073 > fast_kss_kclass_lb0073.txt 2>&1 ) &
wait

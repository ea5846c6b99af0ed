#!/bin/sh
# The three full runs of REPORT.md (2 at a time on a 2-core machine), from this folder.
cd "$(dirname "$0")"
S="PAIR_R=6 EXT_R=12 KPAIR=0.0103 KPOOL_KIND=1 SCENS=aa,d5,d10,cw5,kst RULES=new+paired-projloo-kcheck-ext+confirm KSTATS=1"
( env $S sh run_fast.sh 0.0073 > fast_before_lb0073.txt 2>&1 ) &
( env $S KCLASS=1 sh run_fast.sh 0.0073 > fast_kclass_lb0073.txt 2>&1 ) &
wait
env $S KCLASS=1 KTAU=3 sh run_fast.sh 0.0073 > fast_kclass_ktau3_lb0073.txt 2>&1

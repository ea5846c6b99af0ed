#!/usr/bin/env bash
# Issue 58's scale targets timed (wall, user CPU, peak memory), in the environment where
# gpuperf is installed: tools/large_suite_times.sh [DIR] generates a 5-test run against a
# 20,000-entry baseline and a 50,000-test suite with tools/large_suite.py into DIR (default
# /tmp/scale, kept for the next call), then times compare, show, report and merge on them.
set -u
cd "$(dirname "$0")/.."
d=${1:-/tmp/scale}
mkdir -p "$d"
t() { /usr/bin/time -f "%e s wall, %U s user, %M KB peak :: $*" "$@" > /dev/null 2>> "$d/err.log"; tail -1 "$d/err.log"; }
[ -f $d/a/cpu.json ] || python tools/large_suite.py $d/a --entries 20000 --results 5 > /dev/null
[ -f $d/b/cpu.json ] || python tools/large_suite.py $d/b --entries 50000 --results 50000 > /dev/null
cat /proc/loadavg
t gpuperf compare $d/a/run.json --baseline $d/a/cpu.json
t gpuperf compare $d/b/run.json --baseline $d/b/cpu.json
t gpuperf baseline show $d/b/cpu.json
t gpuperf report $d/b/run.json -o $d/b/report.html
cp $d/b/cpu.json $d/b/cpu2.json
t gpuperf baseline merge $d/b/cpu.json $d/b/cpu2.json -o $d/b/merged.json
cat /proc/loadavg

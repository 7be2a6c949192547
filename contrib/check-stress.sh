#!/bin/sh
# Runs the cluster tests N times each beside busy loops and counts the runs
# that failed, per test: races that a quiet machine hides (a test green on a
# Zen 3 failed every run on a Zen 4) show up here.  `make check-stress` runs
# it from the build directory with the suite's environment.
#
#   check-stress.sh [-n N] [-l LOOPS] [TEST ...]
#
# N runs of each (default 10), LOOPS busy loops beside them (default 2, one
# per core of the CI machine), TESTs the test scripts (default: every
# tests/test_cluster_*.sh and tests/cluster/test_comm_cluster.sh; relative
# to the source tree).  Each
# failed run's log is kept as stress-TEST-RUN.log in the working directory.
# SVP_CHECK_STRESS=1 is exported: a test may run more cases under it.
# Exit status 1 when any run failed.
set -u
runs=10 loops=2
while getopts n:l: opt; do
    case $opt in
    n) runs=$OPTARG ;;
    l) loops=$OPTARG ;;
    *) echo "usage: $0 [-n N] [-l LOOPS] [TEST ...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
top=${SVP_TOP_SRCDIR:?run through make check-stress}
: "${SVP_TOP_BUILDDIR:?run through make check-stress}"
# tests with a longer set of cases for stress runs read it (e.g. every rank
# position of tests/kill_pairs_cluster.sh instead of one)
SVP_CHECK_STRESS=1
export SVP_CHECK_STRESS
if [ $# -eq 0 ]; then
    set -- "$top"/tests/cluster/test_comm_cluster.sh "$top"/tests/test_cluster_*.sh
fi
# tests named relative to the source tree
for t in "$@"; do
    case $t in
    /*) set -- "$@" "$t" ;;
    *)  set -- "$@" "$top/$t" ;;
    esac
    shift
done

busy=""
i=0
while [ "$i" -lt "$loops" ]; do
    sh -c 'while :; do :; done' &
    busy="$busy $!"
    i=$((i + 1))
done
trap 'kill $busy 2>/dev/null' EXIT INT TERM

total=0
printf '%-32s %5s %7s %9s\n' test runs failed seconds
for t in "$@"; do
    name=$(basename "$t" .sh)
    failed=0 t0=$(date +%s)
    r=1
    while [ "$r" -le "$runs" ]; do
        log=stress-$name-$r.log
        if sh "$t" >"$log" 2>&1 && ! grep -q '^not ok' "$log"; then
            rm -f "$log"
        else
            failed=$((failed + 1))
        fi
        r=$((r + 1))
    done
    printf '%-32s %5d %7d %9d\n' "$name" "$runs" "$failed" $(($(date +%s) - t0))
    total=$((total + failed))
done
echo "check-stress: $total failed run(s) in all, $loops busy loop(s) beside"
[ "$total" -eq 0 ]

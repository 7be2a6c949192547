#!/bin/sh
# SIGKILL of one rank of 64 on 8 nodes of a throwaway local Slurm cluster:
# one error line.  Under make check-stress only (SVP_CHECK_STRESS): 64 ranks
# take a minute of the suite's 2 cores.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [ -z "${SVP_CHECK_STRESS:-}" ]; then
    echo "1..0 # SKIP 64 ranks run under make check-stress only"
    exit 0
fi
"$top/tests/cluster/with-cluster.sh" --nodes 8 --cpus 8 --timeout 400 -- "$top/tests/kill64_cluster.sh"
rc=$?
if [ $rc -eq 77 ]; then
    echo "1..0 # SKIP no local Slurm cluster could be started (see tests/cluster/)"
    exit 0
fi
exit $rc

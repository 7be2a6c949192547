#!/bin/sh
# SIGKILL of one rank of a 6-rank guidance-pairs job on 3 nodes of a
# throwaway local Slurm cluster: one story in the log.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$top/tests/cluster/with-cluster.sh" --nodes 3 --timeout 900 -- "$top/tests/kill_pairs_cluster.sh"
rc=$?
if [ $rc -eq 77 ]; then
    echo "1..0 # SKIP no local Slurm cluster could be started (see tests/cluster/)"
    exit 0
fi
exit $rc

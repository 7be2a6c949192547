#!/bin/sh
# A job suspended past the lease's takeover, on 2 nodes of a throwaway local
# Slurm cluster: it stops on resuming, all ranks together.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$top/tests/cluster/with-cluster.sh" --nodes 2 --timeout 200 -- "$top/tests/lease_cluster.sh"
rc=$?
if [ $rc -eq 77 ]; then
    echo "1..0 # SKIP no local Slurm cluster could be started (see tests/cluster/)"
    exit 0
fi
exit $rc

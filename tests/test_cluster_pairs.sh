#!/bin/sh
# Guidance pairs on a throwaway local Slurm cluster of 2 nodes.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$top/tests/cluster/with-cluster.sh" --nodes 2 --timeout 400 -- "$top/tests/pairs_cluster.sh"
rc=$?
if [ $rc -eq 77 ]; then
    echo "1..0 # SKIP no local Slurm cluster could be started (see tests/cluster/)"
    exit 0
fi
exit $rc

#!/bin/sh
# The distributed pipeline on a throwaway local Slurm cluster of 3 node(s).
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
"$top/tests/cluster/with-cluster.sh" --nodes 3 --timeout 400 -- "$top/tests/pipeline_cluster.sh" 3
rc=$?
if [ $rc -eq 77 ]; then
    echo "1..0 # SKIP no local Slurm cluster could be started (see tests/cluster/)"
    exit 0
fi
exit $rc

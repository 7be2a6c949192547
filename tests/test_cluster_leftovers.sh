#!/bin/bash
# Runs last (tests/Makefile.inc): no process of this suite's Slurm clusters
# (slurmctld, slurmd, slurmstepd, srun, a task) outlived its cluster, and no
# cluster directory is left.  The suite's clusters are told from others on
# the machine by their directory's prefix (svp_cluster_prefix: one per build
# tree); whatever is found is named, then killed, so that the next run
# starts clean.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=cluster/slurm-cluster.sh
. "$here/cluster/slurm-cluster.sh"
prefix=$(svp_cluster_prefix)
echo "1..2"
pids=$(svp_cluster_pids "$prefix")
if [ -z "$pids" ]; then
    echo "ok 1 - no process of this suite's clusters ($prefix*) is running"
else
    echo "not ok 1 - processes of this suite's clusters ($prefix*) outlived them"
    for p in $pids; do
        echo "# pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    done
    svp_cluster_kill_all "$prefix" 2>/dev/null
fi
left=$(ls -d "$prefix"* 2>/dev/null)
if [ -z "$left" ]; then
    echo "ok 2 - no cluster directory left"
else
    echo "not ok 2 - cluster directories left: $(echo $left)"
fi

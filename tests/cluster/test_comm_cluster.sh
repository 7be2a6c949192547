#!/bin/bash
# Integration test of src/rt and src/comm on a real (local) Slurm cluster and
# under Open MPI's mpirun: a ring of framed messages between 4 ranks, then
# injected failures.  Speaks TAP.  Skips (never passes) what cannot run here:
# no Slurm, not root, no mpirun.
#
# Every launch has an outer `timeout`, and srun gets -W (a hung rank keeps
# srun waiting forever otherwise).  No --kill-on-bad-exit: it makes srun
# kill the survivors ~0.3 s after the first failure, racing the error they
# are about to log; comm_ring calls PMIx_Abort itself once it has said why.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
builddir=${SVP_TOP_BUILDDIR:-$(cd "$here/../.." && pwd)}
ring=$builddir/tests/cluster/comm_ring
deadline=2          # seconds each wait may take in the failure cases
grace=5             # how much later than the deadline everything must be over
ntests=10
n=0
out=$(mktemp -d /tmp/svp-comm-test.XXXXXX)

ok()   { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
check() { local desc=$1; shift; if "$@"; then ok "$desc"; else fail "$desc"; fi; }
# Prints the log of the last run as TAP diagnostics.
diag() { sed 's/^/# /' "$out/log" | tail -n 25; }

# run NAME LIMIT CMD...: runs CMD with an outer timeout; leaves its exit
# status in $rc, its wall time in $dt and stdout+stderr in $out/log.
run() {
    local limit=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    timeout --kill-after=5 "$limit" "$@" >"$out/log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}

# the 4 ranks of a good run said ok
all_ok() { [ "$rc" -eq 0 ] && [ "$(grep -c '^comm_ring: rank [0-3] ok' "$out/log")" -eq 4 ]; }
# non-zero, within deadline + grace, and the log says $1
failed_with() {
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
        awk -v t="$dt" -v m=$((deadline + grace)) 'BEGIN { exit !(t < m) }' &&
        grep -q -E -- "$1" "$out/log"
}

echo "1..$ntests"

if [ ! -x "$ring" ]; then
    for _ in $(seq 1 $ntests); do skip "comm_ring not built"; done
    rm -rf "$out"
    exit 0
fi

# ---- Slurm ----------------------------------------------------------------
# shellcheck source=slurm-cluster.sh
. "$here/slurm-cluster.sh"
why=""
[ "$(id -u)" -eq 0 ] || why="needs root to run slurmctld/slurmd"
for prog in slurmctld slurmd srun sinfo; do
    command -v $prog >/dev/null 2>&1 || why="$prog not installed"
done
cluster=""
if [ -z "$why" ]; then
    cluster=$(mktemp -d "$(svp_cluster_prefix)XXXXXX")
    trap 'svp_cluster_down "$cluster"; rm -rf "$out"' EXIT
    # 4 nodes: the rank killed alone on its node is a different case for Slurm
    if svp_cluster_up 4 8 "$cluster" 2>"$out/up.log"; then
        eval "$(svp_cluster_print_env "$cluster")"
    else
        why="local Slurm cluster did not start: $(tail -n 1 "$out/up.log")"
        svp_cluster_down "$cluster"
        cluster=""
    fi
else
    trap 'rm -rf "$out"' EXIT
fi

srun_ring() {
    local limit=$1; shift
    run "$limit" srun --mpi=pmix -W $((limit - 5)) "$@"
}

if [ -n "$cluster" ]; then
    ok "local Slurm cluster of 4 nodes is up"

    srun_ring 60 -N 1 -n 4 "$ring" --samples 32 --bytes 2097152
    all_ok || diag
    check "srun -n 4: 32 framed 2 MB messages around the ring" all_ok

    # a rank dies by SIGKILL; its neighbours notice within milliseconds
    srun_ring 30 -N 1 -n 4 "$ring" --deadline $deadline --fail kill --fail-rank 2
    failed_with "rank 2 (was lost|is gone)" || diag
    check "srun: killed rank named as lost, step over in ${dt}s" failed_with "rank 2 (was lost|is gone)"

    # alone on its node, a dead rank does not make Slurm kill the step
    srun_ring 30 -N 4 -n 4 "$ring" --deadline $deadline --fail kill --fail-rank 1
    # named where a wait notices it, or by the neighbour watch, whichever
    # logs first before Slurm ends the step
    failed_with "rank 1 (was lost|is gone)" || diag
    check "srun -N 4: killed rank alone on its node named as lost (${dt}s)" \
        failed_with "rank 1 (was lost|is gone)"

    # dead before the comm's address exchange: the fence must not sit out
    # its timeout (PMIx_Fence cannot be interrupted; the runtime waits in poll)
    # (the fence's failure, or the ring's watch where it hears the loss first:
    # one error line either way, naming rank 2)
    srun_ring 30 -N 4 -n 4 "$ring" --deadline $deadline --fail kill-at-start --fail-rank 2
    lost2="error (fence of 4 ranks failed: rank 2 was lost|rank 2 is gone)"
    failed_with "$lost2" || diag
    check "srun -N 4: rank dead before the comm is up fails the fence, named (${dt}s)" \
        failed_with "$lost2"

    srun_ring 30 -N 1 -n 4 "$ring" --deadline $deadline --fail silent --fail-rank 2
    failed_with "receiving sample 1 step 3 from rank 2: timed out" || diag
    check "srun: a rank that never sends -> receiver's deadline error (${dt}s)" \
        failed_with "receiving sample 1 step 3 from rank 2: timed out"

    srun_ring 30 -N 1 -n 4 "$ring" --deadline $deadline --fail wrong-sample --fail-rank 2
    failed_with "sample: expected 1, got 2" || diag
    check "srun: wrong sample -> mismatch naming expected and got (${dt}s)" \
        failed_with "sample: expected 1, got 2"
else
    for _ in 1 2 3 4 5 6 7; do skip "$why"; done
fi

# ---- Open MPI's mpirun as the PMIx server --------------------------------
if command -v mpirun >/dev/null 2>&1; then
    mpirun_ring() {
        run "$1" mpirun -n 4 --oversubscribe --allow-run-as-root \
            "$ring" "${@:2}"
    }
    mpirun_ring 60 --samples 32 --bytes 2097152
    all_ok || diag
    check "mpirun -n 4: 32 framed 2 MB messages around the ring" all_ok

    mpirun_ring 30 --deadline $deadline --fail kill --fail-rank 2
    failed_with "rank 2 (was lost|is gone)" || diag
    check "mpirun: killed rank named as lost (${dt}s)" failed_with "rank 2 (was lost|is gone)"
else
    skip "mpirun not installed"
    skip "mpirun not installed"
fi

# ---- teardown leaves nothing behind ----------------------------------------
if [ -n "$cluster" ]; then
    pids=$(awk '{print $2}' "$cluster/pids")
    svp_cluster_down "$cluster"
    alive=""
    for pid in $pids; do
        svp_cluster_pid_dead "$pid" || alive="$alive $pid"
    done
    trap 'rm -rf "$out"' EXIT
    check "cluster torn down, no daemon left${alive:+ (alive:$alive)}" [ -z "$alive" ]
else
    skip "$why"
fi

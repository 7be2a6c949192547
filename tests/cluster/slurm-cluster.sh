#!/bin/bash
# A throwaway Slurm cluster on this machine, for tests and benchmarks.
#
#   slurm-cluster.sh up [--nodes N] [--cpus C] [--dir DIR]   start; prints env
#   slurm-cluster.sh env --dir DIR                           print env again
#   slurm-cluster.sh down --dir DIR                          stop, remove DIR
#
# `up` prints shell assignments (SLURM_CONF, SVP_CLUSTER_DIR) for `eval`.
# Run that way, the daemons outlive the script and are reaped by PID 1 after
# `down` (they show as zombies for a moment).  Sourced instead of run, the
# script only defines svp_cluster_up/svp_cluster_down, so that the caller
# (with-cluster.sh, the tests) is the daemons' parent and reaps them itself.
#
# Needs root (the daemons run as root and /etc/hosts may need fixing), the
# Debian packages slurmctld, slurmd, slurm-client and libpmix-dev (Slurm's
# mpi_pmix plugin dlopens the unversioned libpmix.so, which only the -dev
# package ships; without it `srun --mpi=pmix` says "Invalid MPI type").
#
# Every file lives under one temporary directory; nothing is installed and no
# system daemon is touched.  Ports are picked free at start, so two clusters
# (or a site's own Slurm) can coexist.

svp_cluster_log() {
    echo "slurm-cluster: $*" >&2
}

# 0 when PID is gone or a zombie: `kill -0` succeeds on zombies, so it alone
# would make teardown wait for a process that is already dead.
svp_cluster_pid_dead() {
    local state
    [ -r "/proc/$1/status" ] || return 0
    state=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)
    [ -z "$state" ] || [ "$state" = Z ]
}

# A TCP port nobody listens on, starting at $1, stepping by 1.
svp_cluster_free_port() {
    local port=$1 used
    used=$(ss -Hltn 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
    while printf '%s\n' "$used" | grep -qx "$port"; do
        port=$((port + 1))
    done
    echo "$port"
}

# PMIx resolves localhost and the short host name at every step: without both
# in /etc/hosts every other `srun --mpi=pmix` stalled 5 s on DNS.
svp_cluster_fix_hosts() {
    local name
    for name in localhost "$(hostname -s)"; do
        if ! awk -v n="$name" '$1 !~ /^#/ { for (i = 2; i <= NF; i++) if ($i == n) f = 1 } END { exit !f }' /etc/hosts; then
            if [ -w /etc/hosts ]; then
                echo "127.0.0.1 $name" >>/etc/hosts
            else
                svp_cluster_log "warning: $name is not in /etc/hosts (PMIx steps will stall on DNS)"
            fi
        fi
    done
}

svp_cluster_write_conf() {
    local dir=$1 nodes=$2 cpus=$3 ctld_port=$4 node_port=$5 i names
    names=$(seq -f 'n%g' 1 "$nodes" | paste -sd, -)
    cat >"$dir/slurm.conf" <<EOF
# written by slurm-cluster.sh; removed with its directory
ClusterName=svp$$
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
# auth/none + cred/none: no munge daemon, so no shared socket with other
# clusters on the machine and nothing outside this directory to clean up.
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
# mandatory with several slurmd on one machine: their PMIx temp dirs collide
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# lets a 2-core machine declare more CPUs: more tasks than declared CPUs pend
# forever (reason PartitionConfig) instead of failing
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
# No SchedulerParameters: Slurm matches its options by substring, and an
# entry containing "defer" (even "defer_batch=0") turns off scheduling at
# submit time; every srun then waited 2-3 s for the periodic scheduler
# instead of starting in ~0.1 s.
SlurmctldTimeout=10
SlurmdTimeout=10
InactiveLimit=0
KillWait=2
EOF
    for i in $(seq 1 "$nodes"); do
        echo "NodeName=n$i NodeAddr=127.0.0.1 NodeHostname=$(hostname -s) Port=$((node_port + i - 1)) CPUs=$cpus State=UNKNOWN" >>"$dir/slurm.conf"
        mkdir -p "$dir/spool/n$i" "$dir/tmp/n$i"
    done
    echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"
    # slurmd 22.05 always loads a cgroup plugin and autodetection kills it
    # where /sys/fs/cgroup is not fully usable; v1 is always loadable.
    echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
    mkdir -p "$dir/state"
}

svp_cluster_print_env() {
    echo "SLURM_CONF='$1/slurm.conf'; export SLURM_CONF;"
    echo "SVP_CLUSTER_DIR='$1'; export SVP_CLUSTER_DIR;"
}

# svp_cluster_up NODES CPUS DIR: starts the daemons as children of the
# calling shell; their pids go to DIR/pids (teardown order).
svp_cluster_up() {
    local nodes=$1 cpus=$2 dir=$3 base ctld_port node_port i pid t0 idle
    for prog in slurmctld slurmd sinfo srun; do
        command -v "$prog" >/dev/null 2>&1 || { svp_cluster_log "$prog not found"; return 1; }
    done
    svp_cluster_fix_hosts
    # another attempt (SVP_CLUSTER_ATTEMPT) starts from other ports
    base=$((20000 + ($$ * 7 + ${SVP_CLUSTER_ATTEMPT:-0} * 997) % 30000))
    ctld_port=$(svp_cluster_free_port "$base")
    node_port=$(svp_cluster_free_port $((ctld_port + 1)))
    for i in $(seq 2 "$nodes"); do
        # consecutive ports are checked one by one when the nodes start
        [ "$(svp_cluster_free_port $((node_port + i - 1)))" = $((node_port + i - 1)) ] ||
            { svp_cluster_log "port $((node_port + i - 1)) is taken"; return 1; }
    done
    svp_cluster_write_conf "$dir" "$nodes" "$cpus" "$ctld_port" "$node_port"
    : >"$dir/pids"

    # no core files: a slurmstepd that crashes while a test kills its ranks
    # would leave one in the job's working directory (the build tree)
    ulimit -c 0 2>/dev/null || true
    # -D: foreground, so $! is the daemon itself (no pid-file race)
    slurmctld -D -c -f "$dir/slurm.conf" >"$dir/slurmctld.out" 2>&1 </dev/null &
    echo "slurmctld $!" >>"$dir/pids"
    for i in $(seq 1 "$nodes"); do
        slurmd -D -N "n$i" -f "$dir/slurm.conf" >"$dir/slurmd.n$i.out" 2>&1 </dev/null &
        echo "slurmd $!" >>"$dir/pids"
    done

    # Nodes turned idle 1.0-1.2 s after launch on a 2-core machine.
    t0=$(date +%s)
    while :; do
        idle=$(SLURM_CONF="$dir/slurm.conf" sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')
        [ "$idle" -eq "$nodes" ] && break
        while read -r name pid; do
            if svp_cluster_pid_dead "$pid"; then
                svp_cluster_log "$name (pid $pid) died at start; its log:"
                tail -n 20 "$dir/$name"*.log "$dir/$name"*.out >&2 2>/dev/null
                return 1
            fi
        done <"$dir/pids"
        if [ $(($(date +%s) - t0)) -ge 20 ]; then
            svp_cluster_log "nodes not idle after 20 s"
            SLURM_CONF="$dir/slurm.conf" sinfo -N >&2 2>&1
            return 1
        fi
        sleep 0.1
    done
    return 0
}

# Where clusters are made: /tmp/svp-slurm.XXXXXX, and under `make check`
# /tmp/svp-slurm-TAG.XXXXXX with TAG from the build tree, so that the suite
# can tell its own clusters (and their leftovers) from others running on the
# same machine at the same time (another build tree, a person's own).
svp_cluster_prefix() {
    local tag
    if [ -n "${SVP_TOP_BUILDDIR:-}" ]; then
        tag=$(printf '%s' "$SVP_TOP_BUILDDIR" | cksum | awk '{print $1}')
        echo "/tmp/svp-slurm-$tag."
    else
        echo "/tmp/svp-slurm."
    fi
}

# svp_cluster_pids PATTERN: the live processes of the clusters whose
# directory starts with PATTERN ("DIR/" for one cluster, a prefix for
# several), found three ways, since none alone finds all: the daemons name
# their slurm.conf on their command line; slurmstepd, srun and every task
# carry SLURM_CONF in their environment (srun hands it down); slurmstepd
# keeps its node's slurmd log open.  slurmstepd is no child of slurmd (it
# is reparented to PID 1), so the process tree alone would miss it.  The
# calling shell, its ancestors and its descendants (which may have
# SLURM_CONF set, or the pattern on their command line: this very grep) are
# left out.
svp_cluster_pids() {
    local pat=$1 p q skip
    skip=" $$ "
    p=$$
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
        skip="$skip$p "
    done
    {
        grep -lzsF -- "$pat" /proc/[0-9]*/cmdline 2>/dev/null
        grep -lzs -- "^SLURM_CONF=$pat" /proc/[0-9]*/environ 2>/dev/null
        find /proc/[0-9]*/fd -maxdepth 1 -lname "$pat*" 2>/dev/null
    } | awk -F/ '{print $3}' | sort -un | while read -r p; do
        case $skip in *" $p "*) continue ;; esac
        q=$p
        while [ -n "$q" ] && [ "$q" -gt 1 ] && [ "$q" != $$ ]; do
            q=$(awk '/^PPid:/ {print $2}' "/proc/$q/status" 2>/dev/null)
        done
        [ "$q" = $$ ] && continue
        svp_cluster_pid_dead "$p" || echo "$p"
    done
}

# svp_cluster_kill_all PATTERN: TERM, then KILL after 2 s, every process
# svp_cluster_pids finds (CONT first: a stopped task ignores TERM).
svp_cluster_kill_all() {
    local pids p
    pids=$(svp_cluster_pids "$1")
    [ -n "$pids" ] || return 0
    for p in $pids; do
        svp_cluster_log "killing leftover pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-60)"
        kill -CONT "$p" 2>/dev/null
        kill -TERM "$p" 2>/dev/null
    done
    for _ in $(seq 1 20); do
        pids=$(svp_cluster_pids "$1")
        [ -n "$pids" ] || return 0
        sleep 0.1
    done
    for p in $pids; do
        kill -KILL "$p" 2>/dev/null
    done
}

# Cancels what still runs and waits (5 s at most) until the queue is empty,
# so that every slurmstepd ends while slurmd and slurmctld can still see it.
svp_cluster_drain() {
    local conf=$1/slurm.conf
    [ -n "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] || return 0
    SLURM_CONF=$conf scancel --full --signal=KILL --user=root 2>/dev/null
    SLURM_CONF=$conf scancel --user=root 2>/dev/null
    for _ in $(seq 1 50); do
        [ -n "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ] || return 0
        sleep 0.1
    done
    svp_cluster_log "jobs still queued after 5 s"
}

# svp_cluster_down DIR: slurmd first, then slurmctld, each by pid; SIGKILL
# what is still alive after 5 s; reaps our own children; removes DIR.
svp_cluster_down() {
    local dir=$1 name pid n left=0
    [ -f "$dir/pids" ] || { rm -rf "$dir"; return 0; }
    svp_cluster_drain "$dir"
    for name in slurmd slurmctld; do
        while read -r n pid; do
            [ "$n" = "$name" ] && kill -TERM "$pid" 2>/dev/null
        done <"$dir/pids"
        for _ in $(seq 1 50); do
            left=0
            while read -r n pid; do
                [ "$n" = "$name" ] && ! svp_cluster_pid_dead "$pid" && left=1
            done <"$dir/pids"
            [ $left -eq 0 ] && break
            sleep 0.1
        done
        while read -r n pid; do
            if [ "$n" = "$name" ] && ! svp_cluster_pid_dead "$pid"; then
                svp_cluster_log "$name (pid $pid) ignored SIGTERM; killing it"
                kill -KILL "$pid" 2>/dev/null
            fi
        done <"$dir/pids"
    done
    # reap the ones that are our children (no-op for others)
    while read -r n pid; do
        wait "$pid" 2>/dev/null
    done <"$dir/pids"
    # whatever outlived the daemons: slurmstepd of a step slurmd could not
    # end, tasks whose slurmstepd was killed hard, a stopped task
    svp_cluster_kill_all "$dir/"
    rm -rf "$dir"
}

svp_cluster_main() {
    local cmd=${1:-} nodes=1 cpus=8 dir=""
    [ $# -gt 0 ] && shift
    while [ $# -gt 0 ]; do
        case $1 in
        --nodes) nodes=$2; shift 2 ;;
        --cpus) cpus=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) svp_cluster_log "unknown option '$1'"; return 2 ;;
        esac
    done
    case $cmd in
    up)
        [ -n "$dir" ] || dir=$(mktemp -d "$(svp_cluster_prefix)XXXXXX") || return 1
        mkdir -p "$dir"
        if ! svp_cluster_up "$nodes" "$cpus" "$dir"; then
            svp_cluster_down "$dir"
            return 1
        fi
        svp_cluster_print_env "$dir"
        ;;
    env)
        [ -f "$dir/slurm.conf" ] || { svp_cluster_log "no cluster in '$dir'"; return 1; }
        svp_cluster_print_env "$dir"
        ;;
    down)
        [ -n "$dir" ] || { svp_cluster_log "down needs --dir"; return 2; }
        svp_cluster_down "$dir"
        ;;
    *)
        echo "usage: $0 up [--nodes N] [--cpus C] [--dir DIR] | env --dir DIR | down --dir DIR" >&2
        return 2
        ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    svp_cluster_main "$@"
    exit $?
fi

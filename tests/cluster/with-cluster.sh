#!/bin/bash
# Runs one command inside a fresh local Slurm cluster and tears the cluster
# down afterwards, whatever happens (exit, error, signal, timeout).
#
#   with-cluster.sh [--nodes N] [--cpus C] [--timeout SEC] -- CMD [ARG...]
#
# CMD sees SLURM_CONF and SVP_CLUSTER_DIR.  Exit status: CMD's; 124 when the
# outer timeout (default 120 s) killed it; 77 when no cluster could be
# started (automake's "skip").
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=slurm-cluster.sh
. "$here/slurm-cluster.sh"

nodes=1 cpus=8 limit=120
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--nodes N] [--cpus C] [--timeout SEC] -- CMD..." >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "with-cluster: no command" >&2; exit 2; }

dir=$(mktemp -d "$(svp_cluster_prefix)XXXXXX") || exit 77
# The daemons are children of this shell, so teardown can reap them: no
# zombie is left even where PID 1 does not reap orphans.
trap 'svp_cluster_down "$dir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# A port found free can be taken before the daemon binds it (another
# process's ephemeral port): a failed start is tried again on other ports.
SVP_CLUSTER_ATTEMPT=0
until svp_cluster_up "$nodes" "$cpus" "$dir"; do
    SVP_CLUSTER_ATTEMPT=$((SVP_CLUSTER_ATTEMPT + 1))
    [ "$SVP_CLUSTER_ATTEMPT" -lt 3 ] || exit 77
    svp_cluster_log "start failed; trying again on other ports"
    svp_cluster_down "$dir"
    rm -rf "$dir" && mkdir -p "$dir" || exit 77
done
eval "$(svp_cluster_print_env "$dir")"
timeout --kill-after=5 "$limit" "$@"

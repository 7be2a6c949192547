#!/bin/sh
# Submits an sbatch script, prints the job's progress as it comes, and exits
# with the job's status as soon as it ends.
#
#   contrib/sbatch-follow.sh SCRIPT LOG_PATTERN [SAMPLES]
#
# LOG_PATTERN is the job's output file with %j for the job id (the spec's
# cluster.output).  Every "sample N done" line a rank logs, warnings and
# errors are printed as they come; with SAMPLES (the job's sample count)
# each finished sample is prefixed with the job-wide count, [done/SAMPLES].
# The job is polled every half second (sbatch --wait polls far less often,
# which added 8-30 s after the job's end).
set -u
script=$1 pattern=$2 samples=${3:-}
id=$(sbatch --parsable "$script") || exit 1
id=${id%%;*}
log=$(printf '%s' "$pattern" | sed "s/%j/$id/g")
echo "follow: job $id queued; its log: $log"

shown=0 state='' gone=0 nd=0
# prints lines from+1..to of the log that say something, numbering samples
show() {
    sed -n "$(($1 + 1)),$2p" "$log" | grep -E ' done in | warn | error ' |
    while IFS= read -r line; do
        case $line in
        *" done in "*) nd=$((nd + 1))
                       [ -z "$samples" ] || line="[$nd/$samples] $line" ;;
        esac
        echo "  $line"
    done
}
while :; do
    state=$(scontrol -o show job "$id" 2>/dev/null |
            sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    if [ -f "$log" ]; then
        total=$(wc -l <"$log")
        # a shorter file is a new one (a log of an earlier job of that id)
        [ "$total" -ge "$shown" ] || shown=0
        if [ "$total" -gt "$shown" ]; then
            nd=$(head -n "$shown" "$log" | grep -c ' done in ')
            show "$shown" "$total"
            shown=$total
        fi
    fi
    case $state in
    PENDING|CONFIGURING|RUNNING|COMPLETING|REQUEUED|RESIZING|SUSPENDED)
        sleep 0.5 ;;
    "")
        # not known (yet, or any more): give slurmctld a few tries
        gone=$((gone + 1))
        [ "$gone" -lt 10 ] || { echo "follow: job $id is gone" >&2; exit 1; }
        sleep 0.5 ;;
    *)
        break ;;
    esac
done
if [ -f "$log" ]; then
    nd=$(head -n "$shown" "$log" | grep -c ' done in ')
    show "$shown" '$'
fi
echo "follow: job $id $state"
[ "$state" = COMPLETED ]

#!/bin/sh
# Submits an sbatch script, prints the job's progress as it comes, and exits
# with the job's status as soon as it ends.
#
#   contrib/sbatch-follow.sh SCRIPT LOG_PATTERN
#
# LOG_PATTERN is the job's output file with %j for the job id (the spec's
# cluster.output).  Every rank's "sample N done" line (count, percentage,
# elapsed, eta), warnings and errors are printed as the ranks log them.
# The job is polled every half second (sbatch --wait polls far less often,
# which added 8-30 s after the job's end).
set -u
script=$1 pattern=$2
id=$(sbatch --parsable "$script") || exit 1
id=${id%%;*}
log=$(printf '%s' "$pattern" | sed "s/%j/$id/g")
echo "follow: job $id queued; its log: $log"

shown=0 state= gone=0
while :; do
    state=$(scontrol -o show job "$id" 2>/dev/null |
            sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    if [ -f "$log" ]; then
        total=$(wc -l <"$log")
        if [ "$total" -gt "$shown" ]; then
            sed -n "$((shown + 1)),${total}p" "$log" |
                grep -E ' done in | warn | error ' | sed 's/^/  /'
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
    sed -n "$((shown + 1)),\$p" "$log" | grep -E ' done in | warn | error ' | sed 's/^/  /'
fi
echo "follow: job $id $state"
[ "$state" = COMPLETED ]

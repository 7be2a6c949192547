#!/bin/bash
# SIGKILL of one rank of a 6-rank job of guidance pairs (3 stages, spread
# placement, pipeline.guidance_parallel: 2, 2 MB latents, default UCX
# transports) on 3 nodes of a local Slurm cluster (runs inside
# with-cluster.sh; prints TAP).  For each run the log tells one story:
#  - one error line, naming the killed rank, its node and how it was seen;
#    the other ranks end at warn level naming the same cause;
#  - no other rank is named as lost (a rank ending because of the loss says
#    so in its notice), nobody fails to connect or reports a failed goodbye;
#  - the rerun resumes to the uninterrupted run's bytes.
# `make check` kills rank 4; with SVP_CHECK_STRESS set (contrib/check-stress.sh)
# each of the 6 positions is killed SVP_KILL_RUNS times (default 3).
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d /tmp/svp-killpairs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok()  { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 25; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v d="$1" -v l="$2" 'BEGIN { exit !(d < l) }'; }
wait_idle() {
    for _ in $(seq 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.1
    done
}
# the pid of rank R of the step writing to output dir D
rank_pid() {
    local pid
    for pid in $(pgrep -f "svdworker .*output.dir=$2\$"); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$1"; then
            echo "$pid"; return 0
        fi
    done
    return 1
}

if [ -n "${SVP_CHECK_STRESS:-}" ]; then
    victims="0 1 2 3 4 5" runs=${SVP_KILL_RUNS:-3}
else
    victims=4 runs=1
fi
echo "1..$(( $(echo $victims | wc -w) * runs ))"

nsamples=12
cat >"$tmp/job.yaml" <<YAML
steps: 12
samples: $nsamples
latent_shape: [1, 8, 4, 128, 128]
model: {dummy: {cost: sleep, step_ms: 60}}
pipeline: {stages: 3, guidance_parallel: 2, placement: spread}
comm: {deadline: 20}
log: {level: warn}
YAML
# the uninterrupted run, on the same layout (a pair's outputs are within
# round-off of one rank's, and bit-identical between runs of one layout)
timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 "$w" "$tmp/job.yaml" \
    --set output.dir="$tmp/ref" >"$tmp/ref.log" 2>&1 ||
    { echo "Bail out! the uninterrupted run failed"; cat "$tmp/ref.log"; exit 1; }
same_as_ref() {
    local f k=0
    for f in "$tmp"/ref/sample_*.safetensors; do
        cmp -s "$f" "$1/$(basename "$f")" || return 1
        k=$((k + 1))
    done
    [ "$k" -eq $nsamples ]
}

for victim in $victims; do
    for i in $(seq "$runs"); do
        wait_idle
        out=$tmp/o_${victim}_$i
        log=$tmp/kill_${victim}_$i.log
        timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 "$w" "$tmp/job.yaml" \
            --set output.dir="$out" >"$log" 2>&1 &
        srun_pid=$!
        pid=""
        for _ in $(seq 200); do pid=$(rank_pid "$victim" "$out") && break; sleep 0.05; done
        # mid-run: every rank up, halves and samples on the wire
        for _ in $(seq 200); do [ -n "$(ls "$out" 2>/dev/null | grep '^sample_.*safetensors$')" ] && break; sleep 0.05; done
        sleep 0.3
        t0=$(now)
        [ -n "$pid" ] && kill -KILL "$pid"
        wait "$srun_pid"; rc=$?
        dt=$(since "$t0")
        wait_idle
        timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 "$w" "$tmp/job.yaml" \
            --set output.dir="$out" >"$log.rerun" 2>&1
        rc2=$?
        errors=$(grep -c -E ":r[0-9]+ error" "$log")
        named=$(grep -c -E ":r[0-9]+ error rank $victim( of pipeline [0-9]+ \(ranks [0-9]+-[0-9]+\))? is gone: .* \(seen by rank [0-9]+\); it ran on n[0-9]+; the job ends" "$log")
        warned=$(grep -E ":r[0-9]+ warn  (ending: rank $victim( of pipeline [^)]*\))? is gone: .*; it ran on n[0-9]+|rank [0-9]+ is ending: rank $victim on n[0-9]+ was lost)" "$log" |
                 sed -E 's/.*:(r[0-9]+) .*/\1/' | sort -u | wc -l)
        others=$(grep -E "rank [0-9]+( of pipeline [^)]*\))? is gone" "$log" |
                 grep -v -c -E "rank $victim( of pipeline [^)]*\))? is gone")
        if [ -n "$pid" ] && [ $rc -ne 0 ] && below "$dt" 10 && [ "$errors" -eq 1 ] &&
           [ "$named" -eq 1 ] && [ "$warned" -eq 4 ] && [ "$others" -eq 0 ] &&
           ! grep -q -E "cannot connect|Endpoint timeout|said goodbye: failed|its connection closed without a goodbye.*rank [0-9]+ is gone" "$log" &&
           ! grep -q -E "Aborted|process_vm_readv|backtrace|UCX  (ERROR|FATAL)" "$log" &&
           [ $rc2 -eq 0 ] && same_as_ref "$out"; then
            ok "SIGKILL of rank $victim of 6 (pairs, 3 nodes): one error line naming it, 4 ranks end at warn on that cause, no second loss; ended in ${dt}s; the rerun resumed bit-identical"
        else
            nok "SIGKILL of rank $victim of 6, run $i (pid '$pid', rc=$rc, ${dt}s, $errors error lines, named $named, $warned warned, $others other losses, rerun rc=$rc2)" "$log"
        fi
    done
done

#!/bin/bash
# Start-up failures and stops across nodes, on a local 3-node Slurm cluster
# (runs inside with-cluster.sh; prints TAP):
#  - a rank that never arrives (stopped right after launch, a wrapper that
#    sleeps before exec, an exit 0 before PMIx_Init, an exit 2 on a bad
#    spec) ends the job within comm.deadline + 5 s, the rank and its node
#    named;
#  - a rank whose own spec fails the step layout (steps=6 on 6 ranks) says
#    which key differs;
#  - scancel of a running job with 2 MB latents: one line per rank, no error
#    line, no UCX warning, neighbours log the signal at warn level.
# No --kill-on-bad-exit: the job must end by the workers' own bounds.
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d /tmp/svp-startup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok()  { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 25; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v d="$1" -v l="$2" 'BEGIN { exit !(d < l) }'; }

deadline=5
# 6 ranks, 2 per node: rank 5 is on n3 beside rank 4
cat >"$tmp/job.yaml" <<YAML
steps: 24
samples: 6
latent_shape: [1, 4, 4, 6, 8]
comm: {deadline: $deadline, transport: 'tcp,self'}
log: {level: warn}
YAML

echo "1..16"

# rank 5 does $CASE before (or instead of) the worker
cat >"$tmp/wrap.sh" <<SH
#!/bin/sh
if [ "\$SLURM_PROCID" = 5 ]; then
    case "\$SVP_CASE" in
    stop)  kill -STOP \$\$ ;;
    sleep) sleep 60 ;;
    exit0) exec "$w" --version ;;
    stall) LD_PRELOAD=$bld/tests/cluster/stall_fence.so exec "$w" "\$@" ;;
    bad)   exec "$w" "\$@" --set steps=abc ;;
    esac
fi
exec "$w" "\$@"
SH
chmod +x "$tmp/wrap.sh"

# leftovers of a case: the wrapper of rank 5, stopped or sleeping, if the
# job's end did not take it (it must)
left_of() {
    local pid
    for pid in $(pgrep -f "$tmp/wrap.sh"); do
        kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null
        echo "$pid"
    done
}

# stall: rank 5 published its address and stalls before the first fence
# (tests/cluster/stall_fence.c); the presence probe tells it from a rank in
# the fence.  Every node's ranks name the absent rank, not only its own.
for c in stop sleep exit0 bad stall; do
    t0=$(now)
    SVP_CASE=$c timeout -k 5 40 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 \
        "$tmp/wrap.sh" "$tmp/job.yaml" --set output.dir="$tmp/o_$c" >"$tmp/$c.log" 2>&1
    rc=$?
    dt=$(since "$t0")
    left=$(left_of)
    case $c in
    stall) window="published its address but never reached the fence" ;;
    *)     window="never started" ;;
    esac
    named=0
    for r in 0 1 2 3 4; do
        grep -q -E ":r$r error rank 5 on n3 $window" "$tmp/$c.log" && named=$((named + 1))
    done
    if [ $rc -ne 0 ] && below "$dt" $((deadline + 5)) && [ -z "$left" ] &&
       [ "$named" -eq 5 ]; then
        ok "rank 5 $c: job ended in ${dt}s (deadline $deadline s), rank 5 on n3 named by all 5 ranks ($window)"
    else
        nok "rank 5 $c (rc=$rc, ${dt}s, left '$left', named by $named of 5)" "$tmp/$c.log"
    fi
done

# one rank's own spec fails the layout (6 steps on 6 ranks is fine, 8 is
# not): the spec agreement names the key before the layout is checked
cat >"$tmp/multi.conf" <<CONF
0-4 $w $tmp/job.yaml --set output.dir=$tmp/o_steps
5 $w $tmp/job.yaml --set output.dir=$tmp/o_steps --set steps=8
CONF
t0=$(now)
timeout -k 5 40 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 --multi-prog "$tmp/multi.conf" \
    >"$tmp/steps.log" 2>&1
rc=$?
dt=$(since "$t0")
if [ $rc -ne 0 ] && below "$dt" 10 &&
   grep -q -F "rank 5's job spec differs from rank 0's (this rank vs rank 0): steps: 8 vs 24" "$tmp/steps.log"; then
    ok "steps=8 on one rank of 6: the differing key named, job failed in ${dt}s"
else
    nok "steps=8 on one rank of 6 (rc=$rc, ${dt}s)" "$tmp/steps.log"
fi

# ---- stops: 2 MB latents (1x8x4x128x128 floats) through 6 ranks on 3 nodes
cat >"$tmp/big.yaml" <<YAML
steps: 24
samples: 40
latent_shape: [1, 8, 4, 128, 128]
model: {dummy: {cost: sleep, step_ms: 100}}
comm: {deadline: 20}
log: {level: warn}
YAML

# the pid of rank R of the step writing to output dir D
rank_pid() {
    local pid
    for pid in $(pgrep -f "svdworker .*output.dir=$2"); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$1"; then
            echo "$pid"; return 0
        fi
    done
    return 1
}

# scancel: every rank logs its own stop, once; nothing else, no error
timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 -J svp-scancel "$w" "$tmp/big.yaml" \
    --set output.dir="$tmp/o_sc" >"$tmp/sc.log" 2>&1 &
srun_pid=$!
# mid-run: every rank up, frames on the wire
for _ in $(seq 100); do rank_pid 5 "$tmp/o_sc" >/dev/null && break; sleep 0.1; done
sleep 3
t0=$(now)
scancel --name=svp-scancel
wait "$srun_pid"; rc=$?
dt=$(since "$t0")
ours=$(grep -c -E ":r[0-9]+ " "$tmp/sc.log")
stops=$(grep -c -E ":r[0-9]+ warn  stopping on SIGTERM: [0-9]+ samples done" "$tmp/sc.log")
if [ $rc -ne 0 ] && below "$dt" 5 && [ "$stops" -eq 6 ] && [ "$ours" -eq 6 ] &&
   ! grep -q -E ":r[0-9]+ error" "$tmp/sc.log"; then
    ok "scancel: one stop line per rank (6), no error line, ended in ${dt}s"
else
    nok "scancel (rc=$rc, ${dt}s, $stops stop lines of $ours)" "$tmp/sc.log"
fi
# Rendezvous sends to a peer that stopped first, and messages that came for a
# step never run, are drained at teardown (svp_comm_destroy), so UCX has no
# request or unmatched message left to warn about when the worker goes.
if ! grep -q "UCX  WARN" "$tmp/sc.log"; then
    ok "scancel with 2 MB latents: no UCX warning"
else
    nok "scancel with 2 MB latents: no UCX warning" "$tmp/sc.log"
fi

# one rank stopped by SIGTERM alone: it tells the ring before it drains, so
# every other rank logs the stop once at warn level, connects to it no more,
# and ends with "ending: rank 2 was stopped by SIGTERM" in its goodbye: no
# error line, no "said goodbye: failed", no abort.  A race (a rank first
# connecting to the stopped one, spread placement) failed this 5 of 5 on a
# Zen 4 and 7 of 7 runs here before the notice existed, so the case runs
# SVP_STOP_RUNS times (default 10) under each placement.
wait_idle() {
    for _ in $(seq 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.1
    done
}
runs=${SVP_STOP_RUNS:-10}
for placement in spread ends; do
    bad=0 worst=0 first_bad=""
    for i in $(seq "$runs"); do
        wait_idle
        log=$tmp/term_${placement}_$i.log
        out=$tmp/o_term_${placement}_$i
        timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 --ntasks-per-node=2 "$w" "$tmp/big.yaml" \
            --set output.dir="$out" --set pipeline.placement=$placement >"$log" 2>&1 &
        srun_pid=$!
        pid=""
        for _ in $(seq 100); do pid=$(rank_pid 2 "$out") && break; sleep 0.1; done
        sleep 3
        t0=$(now)
        if [ -n "$pid" ]; then kill -TERM "$pid"; else kill -TERM "$srun_pid"; fi
        wait "$srun_pid"; rc=$?
        dt=$(since "$t0")
        worst=$(awk -v a="$worst" -v b="$dt" 'BEGIN { print (b > a) ? b : a }')
        # every rank but 2 names the stop exactly once, at warn level
        named=0
        for r in 0 1 3 4 5; do
            c=$(grep -c -E ":r$r warn  rank 2 was stopped by SIGTERM$" "$log")
            [ "$c" -eq 1 ] && named=$((named + 1))
        done
        if [ -n "$pid" ] && [ $rc -ne 0 ] && below "$dt" 10 && [ "$named" -eq 5 ] &&
           grep -q -E ":r2 warn  stopping on SIGTERM" "$log" &&
           ! grep -q -E ":r[0-9]+ error|said goodbye: failed|Aborted|process_vm_readv|UCX  (ERROR|WARN)" "$log"; then
            :
        else
            bad=$((bad + 1))
            [ -n "$first_bad" ] || first_bad="$log (pid '$pid', rc=$rc, ${dt}s, named by $named of 5)"
        fi
    done
    if [ "$bad" -eq 0 ]; then
        ok "rank 2 alone stopped by SIGTERM, placement $placement: $runs of $runs runs named by every rank once, no error, ended within ${worst}s"
    else
        nok "rank 2 alone stopped by SIGTERM, placement $placement: $bad of $runs runs failed; first: $first_bad" "${first_bad%% *}"
    fi
done

# ---- SIGKILL of each rank position of a 4-rank job on 3 nodes, default
# transports (shared memory with cma between a node's ranks): the lost rank
# is named, no rank aborts inside UCX (a receive posted, or progressed, for
# a rendezvous message the dead rank had announced fetched from a process
# that no longer existed: SIGABRT in cma, 8 of 8 before), and a rerun makes
# the missing samples, every output bit-identical to one process.
cat >"$tmp/kill.yaml" <<YAML
steps: 8
samples: 12
latent_shape: [1, 8, 4, 128, 128]
model: {dummy: {cost: sleep, step_ms: 60}}
comm: {deadline: 20}
log: {level: warn}
YAML
"$w" "$tmp/kill.yaml" --set output.dir="$tmp/kill_ref" >"$tmp/kill_ref.log" 2>&1
same_as_ref() {
    local f n=0
    for f in "$tmp"/kill_ref/sample_*.safetensors; do
        cmp -s "$f" "$1/$(basename "$f")" || return 1
        n=$((n + 1))
    done
    [ "$n" -eq 12 ]
}
for victim in 0 1 2 3; do
    wait_idle
    out=$tmp/o_kill_$victim
    log=$tmp/kill_$victim.log
    timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 -n 4 "$w" "$tmp/kill.yaml" \
        --set output.dir="$out" >"$log" 2>&1 &
    srun_pid=$!
    pid=""
    for _ in $(seq 100); do pid=$(rank_pid "$victim" "$out") && break; sleep 0.05; done
    sleep 0.8
    t0=$(now)
    [ -n "$pid" ] && kill -KILL "$pid"
    wait "$srun_pid"; rc=$?
    dt=$(since "$t0")
    wait_idle
    timeout -k 5 60 srun --mpi=pmix -W 30 -N 3 -n 4 "$w" "$tmp/kill.yaml" \
        --set output.dir="$out" >"$log.rerun" 2>&1
    rc2=$?
    if [ -n "$pid" ] && [ $rc -ne 0 ] && below "$dt" 10 &&
       grep -q -E ":r[0-9]+ error (rank $victim (is gone|of pipeline)|.*rank $victim was lost)" "$log" &&
       ! grep -q -E "Aborted|process_vm_readv|backtrace|UCX  (ERROR|FATAL)" "$log" &&
       [ $rc2 -eq 0 ] && same_as_ref "$out"; then
        ok "SIGKILL of rank $victim of 4 on 3 nodes: named, no abort in UCX, ended in ${dt}s; the rerun resumed bit-identical"
    else
        nok "SIGKILL of rank $victim of 4 (pid '$pid', rc=$rc, ${dt}s, rerun rc=$rc2)" "$log"
    fi
done

# ---- one job per output directory: a second job on a busy output.dir is
# refused (exit 2, the holder named) before it touches anything, and the
# first job's samples are all intact; a lease whose holder is gone is taken
# over with a warning
wait_idle
cat >"$tmp/lease.yaml" <<YAML
steps: 8
samples: 12
latent_shape: [1, 8, 4, 32, 32]
model: {dummy: {cost: sleep, step_ms: 150}}
comm: {deadline: 20}
log: {level: warn}
YAML
"$w" "$tmp/lease.yaml" --set output.dir="$tmp/lease_ref" >"$tmp/lease_ref.log" 2>&1
timeout -k 5 60 srun --mpi=pmix -W 30 -N 2 -n 2 -J svp-lease-a "$w" "$tmp/lease.yaml" \
    --set output.dir="$tmp/lease_out" >"$tmp/lease_a.log" 2>&1 &
a_pid=$!
for _ in $(seq 100); do [ -f "$tmp/lease_out/lease.json" ] && break; sleep 0.1; done
sleep 0.5
t0=$(now)
timeout -k 5 60 srun --mpi=pmix -W 30 -N 2 -n 2 -J svp-lease-b "$w" "$tmp/lease.yaml" \
    --set output.dir="$tmp/lease_out/." >"$tmp/lease_b.log" 2>&1
rc_b=$?
dt=$(since "$t0")
wait "$a_pid"; rc_a=$?
same=1
for f in "$tmp"/lease_ref/sample_*.safetensors; do
    cmp -s "$f" "$tmp/lease_out/$(basename "$f")" || same=0
done
if [ $rc_b -eq 2 ] && below "$dt" 10 && [ $rc_a -eq 0 ] && [ $same -eq 1 ] &&
   grep -q -E "error output.dir .* is in use: its lease.json is held by job 'lease' \(.*lease.yaml, Slurm job [0-9]+\) on [^ ]+, pid [0-9]+" "$tmp/lease_b.log" &&
   ! grep -q "error" "$tmp/lease_a.log" && [ ! -e "$tmp/lease_out/lease.json" ]; then
    ok "a second job on a busy output.dir (2 nodes each): exit 2 in ${dt}s naming the holder; the first job's 12 samples intact, its lease released"
else
    cat "$tmp/lease_a.log" >>"$tmp/lease_b.log"
    nok "second job on a busy output.dir (rc b=$rc_b in ${dt}s, a=$rc_a, intact=$same)" "$tmp/lease_b.log"
fi

# a stale lease (another node, silent for 10 minutes) is taken over
wait_idle
rm -rf "$tmp/lease_out"
mkdir -p "$tmp/lease_out"
now_s=$(date +%s)
printf '{"job": "old", "spec_file": "old.yaml", "spec_key": "x", "shard": [0, 1], "slurm_job": "1", "array_job": "", "array_task": "", "host": "gone-node", "pid": 4242, "started": %s, "renewed": %s, "beat_s": 30}\n' \
    $((now_s - 900)) $((now_s - 600)) >"$tmp/lease_out/lease.json"
timeout -k 5 60 srun --mpi=pmix -W 30 -N 2 -n 2 "$w" "$tmp/lease.yaml" \
    --set output.dir="$tmp/lease_out" >"$tmp/lease_c.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "warn  output.dir .*: took over the lease of job 'old' (old.yaml, Slurm job 1) on gone-node, pid 4242" "$tmp/lease_c.log" &&
   [ "$(ls "$tmp/lease_out" | grep -c 'sample_.*safetensors$')" -eq 12 ]; then
    ok "a stale lease (another node, not renewed for 10 minutes): taken over with a warning, the job ran"
else
    nok "stale lease (rc=$rc)" "$tmp/lease_c.log"
fi

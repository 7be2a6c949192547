#!/bin/bash
# SIGKILL of one rank of a 64-rank job (8 nodes of 8 ranks, the dummy
# model) on a local Slurm cluster: exactly one error line in the whole
# job's log, naming the killed rank; every other survivor ends at warn
# level for that cause.  (Runs inside with-cluster.sh; prints TAP.)
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d /tmp/svp-kill64.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v d="$1" -v l="$2" 'BEGIN { exit !(d < l) }'; }

victim=${SVP_KILL64_VICTIM:-31}
echo "1..1"
cat >"$tmp/job.yaml" <<YAML
steps: 64
samples: 64
latent_shape: [1, 2, 4, 8, 8]
model: {dummy: {cost: sleep, step_ms: 20}}
comm: {deadline: 60}
log: {level: warn}
YAML
out=$tmp/out
log=$tmp/kill.log
timeout -k 5 240 srun --mpi=pmix -W 60 -N 8 --ntasks-per-node=8 "$w" "$tmp/job.yaml" \
    --set output.dir="$out" >"$log" 2>&1 &
srun_pid=$!
pid=""
for _ in $(seq 1200); do
    for p in $(pgrep -f "svdworker .*output.dir=$out\$"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$victim"; then
            pid=$p
        fi
    done
    [ -n "$pid" ] && [ -n "$(ls "$out" 2>/dev/null | grep '^sample_.*safetensors$')" ] && break
    sleep 0.1
done
sleep 0.5
t0=$(now)
[ -n "$pid" ] && kill -KILL "$pid"
wait "$srun_pid"; rc=$?
dt=$(since "$t0")
errors=$(grep -c -E ":r[0-9]+ error" "$log")
named=$(grep -c -E ":r[0-9]+ error rank $victim( of pipeline [^)]*\))? is gone: .*; it ran on n[0-9]+; the job ends" "$log")
warned=$(grep -c -E ":r[0-9]+ warn  (ending: rank $victim( of pipeline [^)]*\))? is gone: |rank [0-9]+ is ending: rank $victim on n[0-9]+ was lost)" "$log")
if [ -n "$pid" ] && [ $rc -ne 0 ] && below "$dt" 30 && [ "$errors" -eq 1 ] && [ "$named" -eq 1 ] &&
   ! grep -q -E "cannot connect|Endpoint timeout|said goodbye: failed" "$log"; then
    echo "ok 1 - SIGKILL of rank $victim of 64 on 8 nodes: one error line, $warned warn lines, ended in ${dt}s"
else
    echo "not ok 1 - SIGKILL of rank $victim of 64 (pid '$pid', rc=$rc, ${dt}s, $errors error lines, named $named, $warned warned)"
    grep -E ":r[0-9]+ error" "$log" | head -n 20 | sed 's/^/# /'
    tail -n 20 "$log" | sed 's/^/# /'
fi

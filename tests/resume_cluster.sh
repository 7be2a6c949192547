#!/bin/bash
# Jobs that survive preemption, on a real (local, throwaway) Slurm cluster:
# scancel then resubmit resumes with outputs identical to an uninterrupted
# run; SIGTERM during a write leaves no temporaries; a long pipeline fill
# under a short deadline is no timeout; an unwritable or full output
# directory fails the job at once.  The time from each fault to the job's
# end is asserted.  Runs inside with-cluster.sh; prints TAP.
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
launch=$bld/src/tools/svdlaunch
# render and check look for the worker on PATH, as they would on a cluster
PATH=$bld/src/tools:$PATH
export PATH
tmp=$(mktemp -d /tmp/svp-resume.XXXXXX)
mnt=""
cleanup() {
    [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
n=0
ok()  { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 30; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v d="$1" -v m="$2" 'BEGIN { exit !(d < m) }'; }
same_outputs() {  # ref dir, other dir, count
    local i f
    for i in $(seq 0 $(($3 - 1))); do
        f=$(printf 'sample_%06d.safetensors' "$i")
        cmp -s "$1/$f" "$2/$f" || return 1
    done
}
count() { ls "$1" 2>/dev/null | grep -c "$2"; }

echo "1..7"

# ---- scancel, then the same job again: finished samples skipped ----------
cat >"$tmp/req.yaml" <<YAML
name: req
model: {dummy: {cost: sleep, step_ms: 40}}
steps: 8
samples: 40
seed: 11
latent_shape: [1, 4, 4, 8, 8]
comm: {deadline: 20, transport: 'posix,self'}
pipeline: {placement: spread}
output: {dir: '$tmp/req'}
log: {level: info}
cluster: {nodes: 1, ranks_per_node: 4, requeue: true, output: '$tmp/req.out'}
YAML
"$w" "$tmp/req.yaml" --set output.dir="$tmp/req_ref" --set model.dummy.step_ms=0 \
    --set log.level=warn >"$tmp/req_ref.log" 2>&1 ||
    { echo "Bail out! the one-process reference run failed"; cat "$tmp/req_ref.log"; exit 1; }
"$launch" render "$tmp/req.yaml" -o "$tmp/req.sh" >"$tmp/render.log" 2>&1
id=$(cd "$tmp" && PATH="$bld/src/tools:$PATH" sbatch --parsable "$tmp/req.sh" 2>>"$tmp/render.log")
done_before=0
for _ in $(seq 300); do  # up to 30 s for a few samples
    done_before=$(count "$tmp/req" 'safetensors$')
    [ "$done_before" -ge 6 ] && break
    sleep 0.1
done
t0=$(now)
scancel "$id"
for _ in $(seq 200); do
    [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break
    sleep 0.05
done
dt=$(since "$t0")
done_after=$(count "$tmp/req" 'safetensors$')
stops=$(grep -c "stopping on SIGTERM: [0-9]* samples done, [0-9]* in flight abandoned" "$tmp/req.out")
if grep -q -- "--open-mode=append" "$tmp/req.sh" && grep -q -- "--requeue" "$tmp/req.sh" &&
   [ "$done_before" -ge 6 ] && [ "$done_after" -lt 40 ] && [ "$stops" -eq 4 ] &&
   [ "$(count "$tmp/req" '\.tmp\.')" -eq 0 ] && below "$dt" 5; then
    ok "scancel: 4 ranks log the stop, no temporaries, job ended in ${dt}s ($done_after of 40 done)"
else
    nok "scancel (job '$id', $done_before/$done_after done, $stops stop lines, ${dt}s)" "$tmp/req.out"
fi

(cd "$tmp" && PATH="$bld/src/tools:$PATH" timeout -k 5 120 sbatch --wait "$tmp/req.sh" \
    >>"$tmp/render.log" 2>&1)
rc=$?
# one line for the job, the skipped samples as ranges ("0-5, 7, 9-11")
lines=$(grep -c " skipped .* (finished by an earlier run)$" "$tmp/req.out")
skipped=$(sed -n 's/.* skipped \(.*\) (finished by an earlier run)$/\1/p' "$tmp/req.out" |
          tr ',' '\n' | awk -F- 'NF == 2 { s += $2 - $1 + 1 } NF == 1 { s++ } END { print s + 0 }')
if [ $rc -eq 0 ] && [ "$lines" -eq 1 ] && [ "$skipped" -eq "$done_after" ] &&
   grep -q "resuming in .*: $done_after of 40 samples finished by an earlier run" "$tmp/req.out" &&
   same_outputs "$tmp/req_ref" "$tmp/req" 40 &&
   grep -q "\"samples_run\": $((40 - done_after))," "$tmp/req/run.json"; then
    ok "resubmitted: $skipped finished samples skipped (one line of ranges), all 40 bit-identical to an uninterrupted run, run.json counts the $((40 - done_after)) run"
else
    nok "resubmitted (rc=$rc, $skipped skipped of $done_after)" "$tmp/req.out"
fi

# ---- the same output directory, another seed: named, exit 2, quickly -----
t0=$(now)
timeout -k 5 60 srun --mpi=pmix --kill-on-bad-exit=1 -W 30 -n 4 "$w" "$tmp/req.yaml" \
    --set seed=12 >"$tmp/mm.log" 2>&1
rc=$?
dt=$(since "$t0")
if [ $rc -eq 2 ] && below "$dt" 10 &&
   grep -q "sample_0000[0-9][0-9].safetensors was made with other parameters: seed: '11', this job has '12' (output.overwrite: true replaces it)" "$tmp/mm.log"; then
    ok "outputs of another seed: named, exit 2 in ${dt}s"
else
    nok "outputs of another seed (rc=$rc, ${dt}s)" "$tmp/mm.log"
fi

# ---- SIGTERM while a sample is being written: no temporaries -------------
# 2 MB samples with fsync: a write is a window of milliseconds
cat >"$tmp/big.yaml" <<YAML
model: {dummy: {cost: sleep, step_ms: 1}}
steps: 2
samples: 12
latent_shape: [1, 8, 4, 128, 128]
output: {dir: '$tmp/big'}
YAML
"$w" "$tmp/big.yaml" --set output.dir="$tmp/big_ref" >"$tmp/big_ref.log" 2>&1
"$w" "$tmp/big.yaml" >"$tmp/big.log" 2>&1 &
pid=$!
seen=""
limit=$((SECONDS + 30))
while [ $SECONDS -lt $limit ]; do  # compgen: no process per look
    if compgen -G "$tmp/big/sample_*.safetensors.tmp.$pid@*" >/dev/null; then seen=1; break; fi
    kill -0 $pid 2>/dev/null || break
done
t0=$(now)
kill -TERM $pid
wait $pid
rc=$?
dt=$(since "$t0")
good=1
for f in "$tmp"/big/sample_*.safetensors; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$tmp/big_ref/$(basename "$f")" || good=0
done
if [ -n "$seen" ] && [ $rc -eq 143 ] && below "$dt" 1.5 && [ $good -eq 1 ] &&
   [ "$(count "$tmp/big" '\.tmp\.')" -eq 0 ] &&
   grep -q "stopping on SIGTERM: [0-9]* samples done, 1 in flight abandoned" "$tmp/big.log"; then
    ok "SIGTERM during a write: exit 143 in ${dt}s, no temporaries, finished samples intact"
else
    ls "$tmp/big" >>"$tmp/big.log"
    nok "SIGTERM during a write (write seen: '${seen}', rc=$rc, ${dt}s)" "$tmp/big.log"
fi

# ---- SIGINT inside one long step: the watchdog ends the rank -------------
"$w" "$tmp/big.yaml" --set model.dummy.step_ms=5000 --set output.dir="$tmp/long" \
    >"$tmp/long.log" 2>&1 &
pid=$!
sleep 1
t0=$(now)
kill -INT $pid
wait $pid
rc=$?
dt=$(since "$t0")
if [ $rc -eq 130 ] && below "$dt" 1.5 &&
   grep -q "stopping on SIGINT: 0 samples done, 1 in flight abandoned" "$tmp/long.log"; then
    ok "SIGINT during a 5 s step: exit 130 in ${dt}s"
else
    nok "SIGINT during a 5 s step (rc=$rc, ${dt}s)" "$tmp/long.log"
fi

# ---- a long fill under a short deadline: no false timeout ----------------
# rank 3 of 4 waits 3 x 2 x 0.4 = 2.4 s for its first input, deadline 2 s
cat >"$tmp/fill.yaml" <<YAML
model: {dummy: {cost: sleep, step_ms: 400}}
steps: 8
samples: 3
latent_shape: [1, 4, 4, 8, 8]
comm: {deadline: 2, transport: 'posix,self'}
pipeline: {placement: ends}
cluster: {nodes: 1, ranks_per_node: 4}
YAML
"$w" "$tmp/fill.yaml" --set output.dir="$tmp/fill_ref" --set model.dummy.step_ms=0 \
    >/dev/null 2>&1
"$launch" check "$tmp/fill.yaml" >"$tmp/fill_check.log" 2>&1
"$launch" plan "$tmp/fill.yaml" --set comm.deadline=0.5 >"$tmp/fill_plan.log" 2>&1
t0=$(now)
timeout -k 5 60 srun --mpi=pmix --kill-on-bad-exit=1 -W 30 -n 4 "$w" "$tmp/fill.yaml" \
    --set output.dir="$tmp/fill" >"$tmp/fill.log" 2>&1
rc=$?
dt=$(since "$t0")
if [ $rc -eq 0 ] && same_outputs "$tmp/fill_ref" "$tmp/fill" 3 &&
   grep -q ": ok: 4 ranks" "$tmp/fill_check.log" && ! grep -q "warn" "$tmp/fill_check.log" &&
   below "$dt" 20 &&
   grep -q "comm.deadline (0.5 s) is shorter than the longest expected gap between hand-offs (0.8 s" "$tmp/fill_plan.log"; then
    ok "fill of 2.4 s under a 2 s deadline: no timeout, no check warning, bit-identical (${dt}s); plan warns at 0.5 s"
else
    cat "$tmp/fill_check.log" "$tmp/fill_plan.log" >>"$tmp/fill.log"
    nok "fill under a short deadline (rc=$rc, ${dt}s)" "$tmp/fill.log"
fi

# ---- unwritable and full output directories: the job fails at once -------
# comm.deadline 20: failing at once means well before it.  Placement ends:
# only the last rank writes, the others must not wait for it.
touch "$tmp/file"
t0=$(now)
timeout -k 5 60 srun --mpi=pmix --kill-on-bad-exit=1 -W 30 -n 4 "$w" "$tmp/req.yaml" \
    --set pipeline.placement=ends --set output.dir="$tmp/file/out" >"$tmp/unw.log" 2>&1
rc=$?
dt1=$(since "$t0")
full_ok=skip
mnt="$tmp/small"
mkdir -p "$mnt"
if mount -t tmpfs -o size=256k tmpfs "$mnt" 2>/dev/null; then
    t0=$(now)
    timeout -k 5 60 srun --mpi=pmix --kill-on-bad-exit=1 -W 30 -n 4 "$w" "$tmp/big.yaml" \
        --set steps=8 --set comm.deadline=20 --set output.dir="$mnt/out" \
        >"$tmp/full.log" 2>&1
    rc2=$?
    dt2=$(since "$t0")
    full_ok=no
    if [ $rc2 -ne 0 ] && below "$dt2" 8 &&
       grep -q "output directory $mnt/out: [1-9][0-9]*\.[0-9] kB free, one sample needs about 2.1 MB" "$tmp/full.log"; then
        full_ok=yes
    fi
else
    mnt=""
fi
if [ $rc -ne 0 ] && below "$dt1" 8 &&
   grep -q "output directory $tmp/file/out cannot be created" "$tmp/unw.log" &&
   [ "$full_ok" != no ]; then
    if [ "$full_ok" = yes ]; then
        ok "unwritable output: failed in ${dt1}s; full (256 kB tmpfs): failed in ${dt2}s; paths named"
    else
        ok "unwritable output: failed in ${dt1}s, path named (full filesystem: no tmpfs mount here)"
    fi
else
    cat "$tmp/full.log" >>"$tmp/unw.log" 2>/dev/null
    nok "unwritable/full output (rc=$rc, ${dt1}s; full: $full_ok)" "$tmp/unw.log"
fi

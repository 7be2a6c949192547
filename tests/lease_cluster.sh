#!/bin/bash
# A 4-rank job on 2 nodes of a local Slurm cluster, suspended (scontrol
# suspend: SIGSTOP to every rank, as PreemptMode=SUSPEND does) past the
# lease's takeover threshold while a second job takes its output.dir over,
# then resumed: rank 0 finds the lease another job's at once and says why,
# every other rank ends on its notice (warn, no second error, no loss), the
# job exits 2 having written nothing more; the second job ends 0 with every
# sample once and byte-identical to an uninterrupted run.  (Runs inside
# with-cluster.sh; prints TAP.)
#
# All nodes of the local cluster are one host, where a stopped holder's
# live pid keeps its lease: the suspended job's lease is made to look like
# a lease of another host that stopped renewing (its host rewritten), which
# is what the second job finds on a real cluster.
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d /tmp/svp-lease.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok()  { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 25; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v d="$1" -v l="$2" 'BEGIN { exit !(d < l) }'; }
count() { ls "$1" 2>/dev/null | grep -c '^sample_.*\.safetensors$'; }

echo "1..4"
nsamples=24
cat >"$tmp/job.yaml" <<YAML
steps: 8
samples: $nsamples
latent_shape: [1, 4, 4, 32, 32]
model: {dummy: {cost: sleep, step_ms: 60}}
comm: {deadline: 20}
log: {level: warn}
YAML
"$w" "$tmp/job.yaml" --set output.dir="$tmp/ref" >"$tmp/ref.log" 2>&1 ||
    { echo "Bail out! the uninterrupted run failed"; cat "$tmp/ref.log"; exit 1; }

# beats of 0.25 s: the takeover threshold (4 beats) is 1 s
export SVP_TASK_BEAT=0.25
timeout -k 5 90 srun --mpi=pmix -W 30 -N 2 --ntasks-per-node=2 -J svp-lease-a "$w" \
    "$tmp/job.yaml" --set output.dir="$tmp/out" >"$tmp/a.log" 2>&1 &
a_srun=$!
for _ in $(seq 300); do [ "$(count "$tmp/out")" -ge 3 ] && break; sleep 0.1; done
id=$(squeue -h -n svp-lease-a -o %i | head -n 1)
if [ -z "$id" ] || ! scontrol suspend "$id" >"$tmp/suspend.log" 2>&1; then
    echo "Bail out! cannot suspend job '$id'"; cat "$tmp/suspend.log"; kill "$a_srun"; exit 1
fi
sleep 2
a_before=$(count "$tmp/out")
sed 's/"host": "[^"]*"/"host": "suspended-node"/' "$tmp/out/lease.json" >"$tmp/lease.new" &&
    mv "$tmp/lease.new" "$tmp/out/lease.json" ||
    { echo "Bail out! cannot rewrite the lease"; scontrol resume "$id"; exit 1; }
# the second job: another spelling of the same directory
timeout -k 5 90 srun --mpi=pmix -W 30 -N 2 --ntasks-per-node=2 -J svp-lease-b "$w" \
    "$tmp/job.yaml" --set output.dir="$tmp/out/." >"$tmp/b.log" 2>&1 &
b_srun=$!
for _ in $(seq 300); do
    grep -q '"host": "suspended-node"' "$tmp/out/lease.json" 2>/dev/null || break
    sleep 0.1
done
sleep 1
t0=$(now)
scontrol resume "$id"
wait "$a_srun"; rc_a=$?
dt=$(since "$t0")
wait "$b_srun"; rc_b=$?

errors=$(grep -c -E ":r[0-9]+ error" "$tmp/a.log")
# each other rank ends on rank 0's notice (or its own check before a
# publish), at warn level
told=$(grep -E ":r[123] warn  (rank [0-9] is ending: the job lost output.dir's lease to another job|output.dir's lease is lost: .* this rank stops now)" "$tmp/a.log" |
       sed -E 's/.*:(r[0-9]+) .*/\1/' | sort -u | wc -l)
if [ $rc_a -eq 2 ] && below "$dt" 5 && [ "$errors" -eq 1 ] &&
   grep -q -E ":r0 error output.dir's lease is lost: this job was suspended for [0-9]+(\.[0-9])? s \(or its clock jumped\), past the takeover threshold of 4 beats of 0.25 s, and another job took the directory over: job 'job' \([^)]*job.yaml, Slurm job [0-9]+\) on [^ ]+, pid [0-9]+" "$tmp/a.log" &&
   [ "$told" -eq 3 ]; then
    ok "resumed after the takeover: exit 2 in ${dt}s; rank 0 names the new holder, ranks 1-3 end on its notice"
else
    nok "resumed job (rc=$rc_a in ${dt}s, $errors error lines, $told ranks told)" "$tmp/a.log"
fi
if ! grep -q -E "is gone|cannot connect|said goodbye: failed|UCX  (WARN|ERROR)" "$tmp/a.log"; then
    ok "no rank of the resumed job is taken for lost, no UCX complaint"
else
    nok "a rank taken for lost" "$tmp/a.log"
fi
if [ $rc_b -eq 0 ] && grep -q "warn  output.dir .*: took over the lease of job 'job' .* on suspended-node" "$tmp/b.log" &&
   ! grep -q -E ":r[0-9]+ error" "$tmp/b.log"; then
    ok "the job that took the directory over ran to the end: exit 0, no error"
else
    nok "new holder (rc=$rc_b)" "$tmp/b.log"
fi
same=0
for f in "$tmp"/ref/sample_*.safetensors; do
    cmp -s "$f" "$tmp/out/$(basename "$f")" && same=$((same + 1))
done
if [ "$(count "$tmp/out")" -eq $nsamples ] && [ $same -eq $nsamples ] &&
   [ -z "$(find "$tmp/out" -name '*.tmp.*')" ] && grep -q '"state": "done"' "$tmp/out/task.json"; then
    ok "every sample once ($a_before before the suspension), byte-identical to the uninterrupted run"
else
    nok "samples: $(count "$tmp/out") of $nsamples, $same identical" "$tmp/b.log"
fi

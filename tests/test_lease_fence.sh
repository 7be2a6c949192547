#!/bin/sh
# A job suspended past the lease's takeover threshold, whose output.dir
# another job took over meanwhile, stops when it resumes: exit 2 naming the
# new holder, nothing more written; the new holder finishes the samples,
# each once and byte-identical to a clean run (TAP).
#
# One host: job A is stopped with SIGSTOP (as Slurm's PreemptMode=SUSPEND
# does), and its lease is made to look like a lease of another node that
# stopped renewing (its host rewritten), so that job B, started here, takes
# it over as a job on another node would.  Beats of 0.25 s (SVP_TASK_BEAT)
# make the threshold of 4 beats 1 s.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d)
a_pid=
b_pid=
cleanup() {
    [ -n "$a_pid" ] && kill -CONT "$a_pid" 2>/dev/null && kill -KILL "$a_pid" 2>/dev/null
    [ -n "$b_pid" ] && kill -KILL "$b_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "$2" ] && sed 's/^/# /' "$2" | tail -20; }
echo "1..6"

nsamples=24
cat >"$tmp/fence.yaml" <<YAML
steps: 6
samples: $nsamples
latent_shape: [1, 4, 4, 16, 16]
model: {dummy: {cost: sleep, step_ms: 40}}
YAML
count() { ls "$1" 2>/dev/null | grep -c '^sample_.*\.safetensors$'; }
done_lines() { grep -c ' info  sample [0-9]* done in ' "$1"; }

"$w" "$tmp/fence.yaml" --set output.dir="$tmp/ref" >"$tmp/ref.log" 2>&1 ||
    { echo "Bail out! the clean run failed"; cat "$tmp/ref.log"; exit 1; }

SVP_TASK_BEAT=0.25
export SVP_TASK_BEAT
"$w" "$tmp/fence.yaml" --set output.dir="$tmp/out" >"$tmp/a.log" 2>&1 &
a_pid=$!
for _ in $(seq 200); do [ "$(count "$tmp/out")" -ge 3 ] && break; sleep 0.05; done
kill -STOP "$a_pid"
a_before=$(done_lines "$tmp/a.log")
sleep 1.5
# the suspended job's lease, as a node that stopped renewing would leave it
sed 's/"host": "[^"]*"/"host": "suspended-node"/' "$tmp/out/lease.json" >"$tmp/out/lease.json.new" &&
    mv "$tmp/out/lease.json.new" "$tmp/out/lease.json" &&
    grep -q '"host": "suspended-node"' "$tmp/out/lease.json" ||
    { echo "Bail out! cannot rewrite the lease"; exit 1; }
"$w" "$tmp/fence.yaml" --set output.dir="$tmp/out" >"$tmp/b.log" 2>&1 &
b_pid=$!
for _ in $(seq 200); do grep -q "\"pid\": $b_pid," "$tmp/out/lease.json" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
t0=$(date +%s%N)
kill -CONT "$a_pid"
wait "$a_pid"; rc_a=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
a_after=$(done_lines "$tmp/a.log")
a_was=$a_pid
a_pid=
wait "$b_pid"; rc_b=$?
b_pid=

if [ $rc_a -eq 2 ] && grep -q -E "error output.dir's lease is lost: this job was suspended for [0-9]+(\.[0-9])? s \(or its clock jumped\), past the takeover threshold of 4 beats of 0.25 s, and another job took the directory over: job 'fence' \([^)]*fence.yaml\) on [^ ]+, pid [0-9]+, .*; [^ ]*/out/lease.json is that job's now; this job stops now and writes nothing more there" "$tmp/a.log" &&
   [ $ms -lt 3000 ]; then
    ok "the resumed job stops: exit 2 in ${ms} ms, the new holder and the gap named"
else
    nok "resumed job (rc=$rc_a in ${ms} ms)" "$tmp/a.log"
fi
if [ "$a_after" -eq "$a_before" ]; then
    ok "the resumed job wrote no sample ($a_before before its suspension)"
else
    nok "the resumed job wrote $((a_after - a_before)) sample(s) after its resume" "$tmp/a.log"
fi
if [ $rc_b -eq 0 ] &&
   grep -q "warn  output.dir .*: took over the lease of job 'fence' .* on suspended-node, pid $a_was," "$tmp/b.log"; then
    ok "the job that took the directory over ran to the end: exit 0"
else
    nok "new holder (rc=$rc_b)" "$tmp/b.log"
fi
same=0
for f in "$tmp"/ref/sample_*.safetensors; do
    cmp -s "$f" "$tmp/out/$(basename "$f")" && same=$((same + 1))
done
if [ "$(count "$tmp/out")" -eq $nsamples ] && [ $same -eq $nsamples ] &&
   [ -z "$(find "$tmp/out" -name '*.tmp.*')" ]; then
    ok "every sample once, byte-identical to the clean run, no temporaries"
else
    nok "samples: $(count "$tmp/out") of $nsamples, $same identical" "$tmp/b.log"
fi
if grep -q '"state": "done"' "$tmp/out/task.json" && [ ! -e "$tmp/out/lease.json" ] &&
   [ "$(grep -c '"slurm_job"' "$tmp/out/run.json")" -eq 1 ]; then
    ok "task.json and run.json are the new holder's alone; it released its lease"
else
    nok "records" "$tmp/b.log"
fi
if ! grep -q " error " "$tmp/b.log"; then
    ok "the new holder logged no error"
else
    nok "errors in the new holder's log" "$tmp/b.log"
fi

#!/bin/sh
# The sample list as a user meets it (TAP): svdlaunch check decodes every
# image and parses the manifest before anything is queued, svdworker says
# what a job makes and takes --shard, a manifest's parameters reach the
# outputs, and svdlaunch status reads a directory.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
l=$tools/svdlaunch
w=$tools/svdworker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | head -20; }
echo "1..12"
PATH=$tools:$PATH
export PATH

if "$tools/svdtool" init --model-config-dir "$top/etc/models/svd-mini" --seed 5 \
        --output "$tmp/model" >"$tmp/err" 2>&1; then :; else
    echo "Bail out! svdtool init failed"; cat "$tmp/err"; exit 1
fi
mkdir -p "$tmp/img"
cp "$top/etc/demo/input.png" "$tmp/img/a.png"
cp "$top/etc/demo/input.png" "$tmp/img/b.png"
head -c 7 "$top/etc/demo/input.png" >"$tmp/broken.png"
echo "not an image" >"$tmp/notes.txt"
cat >"$tmp/job.yaml" <<YAML
model: {kind: svd, path: model}
steps: 2
video: {inputs: [img], seeds: [3, 4], width: 112, height: 64, num_frames: 3,
        decode_chunk_size: 3}
output: {dir: out}
YAML

"$l" check "$tmp/job.yaml" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "4 samples" "$tmp/err"; then
    ok "check: 2 images x 2 seeds counted"; else nok "check of a good job (rc=$rc)"; fi

"$l" check "$tmp/job.yaml" --set video.inputs="$tmp/img/a.png,$tmp/broken.png,$tmp/notes.txt" \
    >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "video.inputs: 2 of 3 images do not decode: .*broken.png (malformed input file), .*notes.txt" "$tmp/err"; then
    ok "check: a 7-byte PNG and a .txt named, exit 2"; else nok "check of bad images (rc=$rc)"; fi

printf '{"image": "img/a.png"}\n{"image": "broken.png", "seed": 1}\n' >"$tmp/m1.jsonl"
"$l" check "$tmp/job.yaml" --set video.inputs= --set video.seeds= \
    --set video.manifest="$tmp/m1.jsonl" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "video.manifest: 1 of 2 images does not decode: .*broken.png" "$tmp/err"; then
    ok "check: a manifest's bad image named, exit 2"; else nok "manifest with a bad image (rc=$rc)"; fi

printf '{"image": "img/a.png"}\n\n{"image": "img/b.png", "motion_bucket_id": "high"}\n' >"$tmp/m2.jsonl"
"$l" check "$tmp/job.yaml" --set video.inputs= --set video.seeds= \
    --set video.manifest="$tmp/m2.jsonl" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "m2.jsonl:3: key 'motion_bucket_id': expected an integer, found a string" "$tmp/err"; then
    ok "check: a bad manifest line named file:line and key, exit 2"; else nok "bad manifest line (rc=$rc)"; fi

"$l" check "$tmp/job.yaml" --set cluster.array=0-6:2 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "cluster.array: expected a range of task ids" "$tmp/err"; then
    ok "check: a stepped array, whose tasks are no shards, refused before the queue"
else nok "stepped array (rc=$rc)"; fi

"$w" "$tmp/job.yaml" --shard 2/2 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "--shard: expected I/N with 0 <= I < N" "$tmp/err" && [ ! -e "$tmp/out" ]; then
    ok "svdworker --shard 2/2: exit 2, nothing written"; else nok "bad --shard (rc=$rc)"; fi

# a manifest's own parameters reach sample.json; shard 1 of 2 makes 1 and 3
printf '{"image": "img/a.png", "seed": 9, "fps": 5}\n{"image": "img/b.png", "motion_bucket_id": 40, "name": "bee"}\n{"image": "img/a.png", "max_guidance": 1.0}\n{"image": "img/b.png", "noise_aug_strength": 0.1}\n' >"$tmp/m3.jsonl"
(cd "$tmp" && SVP_THREADS=1 "$w" job.yaml --set video.inputs= --set video.seeds= \
    --set video.manifest=m3.jsonl --shard 1/2 >"$tmp/err" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ -f "$tmp/out/bee/sample.json" ] && [ -f "$tmp/out/sample_000003/sample.json" ] &&
   [ ! -e "$tmp/out/sample_000000" ] && [ ! -e "$tmp/out/sample_000002" ] &&
   jq -e '.motion_bucket_id == 40 and .params.fps == 7 and .params.motion_bucket_id == 40 and
          .params.name == "bee" and (.params.image_sha256 | test("^[0-9a-f]{64}$")) and
          ([.params | keys_unsorted[]] == ([.params | keys[]]))' "$tmp/out/bee/sample.json" >/dev/null &&
   ! grep -q 'manifest_line' "$tmp/out/bee/sample.json" &&
   jq -e '.noise_aug_strength == 0.1' "$tmp/out/sample_000003/sample.json" >/dev/null &&
   grep -q "4 samples from the manifest m3.jsonl; task 1 of 2 makes 2 of them" "$tmp/err" &&
   [ -f "$tmp/out/run.shard-1-of-2.json" ] && [ -f "$tmp/out/task.shard-1-of-2.json" ]; then
    ok "shard 1 of 2: samples 1 and 3, each sample.json with its line's parameters, per-shard run files"
else nok "manifest run (rc=$rc)"; fi

"$l" status "$tmp/out" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "2 of 4 samples done (50%), 2 tasks" "$tmp/err" &&
   grep -q "task 0 of 2: not started" "$tmp/err" && grep -q "task 1 of 2: 2 of 2 done, done" "$tmp/err"; then
    ok "status: 2 of 4 done, task 0 not started, task 1 done"; else nok "status (rc=$rc)"; fi

# the other shard resumes nothing of shard 1's and makes its own
(cd "$tmp" && SVP_THREADS=1 "$w" job.yaml --set video.inputs= --set video.seeds= \
    --set video.manifest=m3.jsonl --shard 0/2 >"$tmp/err" 2>&1); rc=$?
"$l" status "$tmp/out" --json >"$tmp/status.json" 2>&1
if [ $rc -eq 0 ] && ! grep -q "skipped" "$tmp/err" && grep -q "task 0 of 2 makes 2 of them" "$tmp/err" &&
   grep -q '"done": 4,' "$tmp/status.json" && grep -q '"failed_count": 0,' "$tmp/status.json" &&
   grep -q '"seed": 9,' "$tmp/out/sample_000000/sample.json" && grep -q '"fps": 5,' "$tmp/out/sample_000000/sample.json"; then
    ok "shard 0 of 2 makes 0 and 2; status --json: 4 done, none failed"; else nok "second shard (rc=$rc)"; fi

# a running job: status gives a rate and an ETA; stopped, the samples left
cat >"$tmp/run.yaml" <<YAML
model: {dummy: {cost: sleep, step_ms: 25}}
steps: 2
samples: 60
latent_shape: [1, 2, 2, 4, 4]
output: {dir: '$tmp/running'}
YAML
"$w" "$tmp/run.yaml" >"$tmp/run.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
    [ "$(ls "$tmp/running" 2>/dev/null | grep -c '\.safetensors$')" -ge 8 ] && break
    sleep 0.05
done
"$l" status "$tmp/running" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "job 'run' in $tmp/running: [0-9]* of 60 samples done" "$tmp/err" &&
   grep -q "^rate [0-9.]* samples/s, eta .* for the [0-9]* samples the 1 running task will make" "$tmp/err"; then
    ok "status of a running job: done of 60, rate, eta"; else nok "status while running (rc=$rc)"; fi
kill -TERM $pid
wait $pid
done=$(ls "$tmp/running" | grep -c '\.safetensors$')
"$l" status "$tmp/running" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$done" -lt 60 ] &&
   grep -q "job 'run' in $tmp/running: $done of 60 samples done" "$tmp/err" &&
   grep -q "failed: $((60 - done)) samples not made by a failed, stopped or lost task: $done-59 " "$tmp/err"; then
    ok "status of a stopped job: $done done, samples $done-59 named as not made"
else nok "status after SIGTERM (rc=$rc, $done done)"; fi

# killed outright (SIGKILL): no last word, but the record is rewritten every
# beat while the task runs, and silence reads as lost
rm -rf "$tmp/running"
SVP_TASK_BEAT=0.5 "$w" "$tmp/run.yaml" >"$tmp/run.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
    [ "$(ls "$tmp/running" 2>/dev/null | grep -c '\.safetensors$')" -ge 4 ] && break
    sleep 0.05
done
u1=$(jq '.updated' "$tmp/running/task.json" 2>/dev/null)
sleep 1.2
u2=$(jq '.updated' "$tmp/running/task.json" 2>/dev/null)
"$l" status "$tmp/running" >"$tmp/err" 2>&1
kill -KILL $pid
wait $pid 2>/dev/null
sleep 2.5   # lost after 4 beats of silence: 2 s
done=$(ls "$tmp/running" | grep -c '\.safetensors$')
"$l" status "$tmp/running" >"$tmp/err2" 2>&1; rc=$?
"$l" status "$tmp/running" --json >"$tmp/err2.json" 2>&1
if [ $rc -eq 0 ] && awk -v a="${u1:-0}" -v b="${u2:-0}" 'BEGIN { exit !(b > a && a > 0) }' &&
   grep -q "the 1 running task will make" "$tmp/err" && ! grep -q "lost" "$tmp/err" &&
   grep -q "the task: lost: its record says running, but it has been silent for" "$tmp/err2" &&
   grep -q "failed: $((60 - done)) samples not made by a failed, stopped or lost task: $done-59 " "$tmp/err2" &&
   [ "$(jq -r '.tasks[0].state' "$tmp/err2.json")" = lost ] && ! grep -q "running task will make" "$tmp/err2"; then
    ok "killed with SIGKILL: its record rewritten while it ran, then status says lost and names samples $done-59"
else
    nok "status after SIGKILL (rc=$rc, updated $u1 then $u2)"
    sed 's/^/# /' "$tmp/err" "$tmp/err2"
fi

#!/bin/sh
# A sample is its parameters (TAP): the same job resumes with nothing redone
# whichever way it is started (by its absolute path, by hand from its
# folder, from another working directory) and after a comment line is added
# to its manifest; a mismatch names the key that differs; two identical
# manifest lines make byte-identical videos; the same folder moved resumes;
# an image replaced under its path is a mismatch naming both digests.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
w=$tools/svdworker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$2" 2>/dev/null | tail -n 20; }
echo "1..12"
SVP_THREADS=1
export SVP_THREADS

if "$tools/svdtool" init --model-config-dir "$top/etc/models/svd-mini" --seed 5 \
        --output "$tmp/job/model" >"$tmp/init.log" 2>&1; then :; else
    echo "Bail out! svdtool init failed"; cat "$tmp/init.log"; exit 1
fi
mkdir -p "$tmp/job/img" "$tmp/elsewhere"
cp "$top/etc/demo/input.png" "$tmp/job/img/a.png"
# b.png: the same picture one pixel row shorter, so another image
cp "$top/etc/demo/input.png" "$tmp/job/img/b.png"
printf '{"image": "img/a.png", "seed": 3, "name": "first"}\n{"image": "img/b.png", "seed": 3}\n{"image": "img/a.png", "seed": 3, "name": "again"}\n' \
    >"$tmp/job/m.jsonl"
cat >"$tmp/job/job.yaml" <<YAML
model: {kind: svd, path: model}
steps: 2
video: {manifest: m.jsonl, width: 112, height: 64, num_frames: 3, decode_chunk_size: 3}
output: {dir: $tmp/out}
YAML

# the outputs' modification times: a sample redone shows
stamps() { find "$tmp/out" -name 'latents.safetensors' -newer "$tmp/stamp" | wc -l; }

"$w" "$tmp/job/job.yaml" >"$tmp/first.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f "$tmp/out/first/sample.json" ] && [ -f "$tmp/out/again/sample.json" ] &&
   [ -f "$tmp/out/sample_000001/sample.json" ]; then
    ok "by its absolute path: 3 samples made"
else
    nok "first run (rc=$rc)" "$tmp/first.log"
fi

# identical lines (same image, seed and parameters): the same video
same=1
for f in "$tmp"/out/first/frame_*.png; do
    cmp -s "$f" "$tmp/out/again/$(basename "$f")" || same=0
done
if [ -f "$tmp/out/first/video.mp4" ]; then
    cmp -s "$tmp/out/first/video.mp4" "$tmp/out/again/video.mp4" || same=0
fi
"$tools/svdtool" compare "$tmp/out/first/latents.safetensors" \
    "$tmp/out/again/latents.safetensors" >"$tmp/cmp.log" 2>&1 || same=0
if [ $same -eq 1 ] && ls "$tmp"/out/first/frame_*.png >/dev/null 2>&1 &&
   grep -q -E "(^| )0(\.0+)?(e\+?0+)?( |$)" "$tmp/cmp.log"; then
    ok "two identical manifest lines: byte-identical frames and video, identical latents"
else
    nok "identical lines differ" "$tmp/cmp.log"
fi

touch "$tmp/stamp"
sleep 1
(cd "$tmp/job" && "$w" job.yaml) >"$tmp/byhand.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(stamps)" -eq 0 ] &&
   grep -q "skipped 0-2 (finished by an earlier run)" "$tmp/byhand.log"; then
    ok "by hand from its folder: all 3 skipped, nothing redone"
else
    nok "by hand from its folder (rc=$rc, $(stamps) redone)" "$tmp/byhand.log"
fi

(cd "$tmp/elsewhere" && "$w" ../job/job.yaml) >"$tmp/other.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(stamps)" -eq 0 ] &&
   grep -q "skipped 0-2 (finished by an earlier run)" "$tmp/other.log"; then
    ok "from another working directory: all 3 skipped, nothing redone"
else
    nok "from another working directory (rc=$rc, $(stamps) redone)" "$tmp/other.log"
fi

# a comment and a blank line above the lines: the same samples
{ printf '# the cat pictures\n\n'; cat "$tmp/job/m.jsonl"; } >"$tmp/job/m2.jsonl"
mv "$tmp/job/m2.jsonl" "$tmp/job/m.jsonl"
"$w" "$tmp/job/job.yaml" >"$tmp/comment.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(stamps)" -eq 0 ] &&
   grep -q "skipped 0-2 (finished by an earlier run)" "$tmp/comment.log"; then
    ok "a comment line added to the manifest: all 3 skipped, nothing redone"
else
    nok "after a comment line (rc=$rc, $(stamps) redone)" "$tmp/comment.log"
fi

# another seed on one line: refused, the one key named with both values
sed 's/"seed": 3, "name": "again"/"seed": 4, "name": "again"/' "$tmp/job/m.jsonl" >"$tmp/job/m3.jsonl"
"$w" "$tmp/job/job.yaml" --set video.manifest="$tmp/job/m3.jsonl" >"$tmp/seed.log" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "again/sample.json was made with other parameters: seed: 3, this job has 4" "$tmp/seed.log" &&
   [ "$(stamps)" -eq 0 ]; then
    ok "another seed on one line: exit 2, 'seed: 3, this job has 4' named, nothing touched"
else
    nok "seed mismatch (rc=$rc)" "$tmp/seed.log"
fi

# the same folder moved elsewhere (same bytes, other paths): nothing redone
mv "$tmp/job" "$tmp/moved"
"$w" "$tmp/moved/job.yaml" >"$tmp/moved.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ "$(stamps)" -eq 0 ] &&
   grep -q "skipped 0-2 (finished by an earlier run)" "$tmp/moved.log"; then
    ok "the job's folder moved: the images' content matches, all 3 skipped, nothing redone"
else
    nok "moved folder (rc=$rc, $(stamps) redone)" "$tmp/moved.log"
fi
mv "$tmp/moved" "$tmp/job"

# b.png replaced in place by another picture: the same path, other bytes
old_sum=$(sha256sum "$tmp/job/img/b.png" | cut -d' ' -f1)
cp "$top/tests/data/clip_preprocess/input0.png" "$tmp/job/img/b.png"
new_sum=$(sha256sum "$tmp/job/img/b.png" | cut -d' ' -f1)
"$w" "$tmp/job/job.yaml" >"$tmp/changed.log" 2>&1; rc=$?
if [ $rc -eq 2 ] && [ "$(stamps)" -eq 0 ] &&
   grep "sample_000001/sample.json was made from another image" "$tmp/changed.log" |
   grep "img/b.png" | grep "$old_sum" | grep "$new_sum" | grep -q "output.overwrite: true"; then
    ok "an image replaced under the same path: exit 2 naming the image, both digests and output.overwrite"
else
    nok "changed image (rc=$rc, $(stamps) redone)" "$tmp/changed.log"
fi
cp "$top/etc/demo/input.png" "$tmp/job/img/b.png"

# the reruns made nothing: the records still describe the run that did
if [ "$(jq '.layout.samples_run' "$tmp/out/run.json")" = 3 ] &&
   [ "$(jq '.attempts | length' "$tmp/out/run.json")" = 5 ] &&
   [ "$(jq '[.attempts[].samples_run] | add' "$tmp/out/run.json")" = 3 ] &&
   [ "$(jq -r '.state' "$tmp/out/task.json")" = done ] &&
   [ "$(jq '.to_run' "$tmp/out/task.json")" = 3 ] &&
   grep -q "still describes the run that made the samples" "$tmp/comment.log"; then
    ok "4 reruns that made nothing: run.json and task.json still the productive run's, 5 attempts listed"
else
    nok "run records after reruns" "$tmp/out/run.json"
fi

# names: svdpipe's own refused where the manifest is read; a job name past
# 64 bytes resumes; a name that is not UTF-8 refused before anything starts
cat >"$tmp/dummy.yaml" <<YAML
model: {kind: dummy}
steps: 2
samples: 2
YAML
bad=0
for name in run.json task.shard-1-of-2.json lease.json sample_000003.tmp.999 x.tmp.host.12 \
        staging shard-000001 shards; do
    printf '{"image": "%s", "name": "%s"}\n' "$tmp/job/img/a.png" "$name" >"$tmp/names.jsonl"
    "$w" "$tmp/dummy.yaml" --set video.manifest="$tmp/names.jsonl" \
        --set output.dir="$tmp/names_out" >"$tmp/names.log" 2>&1; rc=$?
    if [ $rc -ne 2 ] || ! grep -q "names.jsonl:1: key 'name': '$name' is svdpipe's own" "$tmp/names.log" ||
       [ -e "$tmp/names_out" ]; then
        bad=$((bad + 1)); cp "$tmp/names.log" "$tmp/names_bad.log"
    fi
done
if [ $bad -eq 0 ]; then
    ok "sample names that are svdpipe's own (run, task, lease records, temporaries, staging, shards): exit 2, file:line named"
else
    nok "reserved names: $bad accepted" "$tmp/names_bad.log"
fi

long=$(printf 'j%.0s' $(seq 300))
"$w" "$tmp/dummy.yaml" --set name="$long" --set output.dir="$tmp/long" >"$tmp/long1.log" 2>&1 &&
"$w" "$tmp/dummy.yaml" --set name="$long" --set output.dir="$tmp/long" >"$tmp/long2.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "skipped 0-1 (finished by an earlier run)" "$tmp/long2.log"; then
    ok "a 300-byte job name: the rerun resumes"
else
    nok "long job name (rc=$rc)" "$tmp/long2.log"
fi

"$w" "$tmp/dummy.yaml" --set name="$(printf 'ab\377cd')" --set output.dir="$tmp/utf" >"$tmp/utf.log" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q -- "--set: expected UTF-8 text, found the byte 0xff at offset 7" "$tmp/utf.log" &&
   [ ! -e "$tmp/utf" ]; then
    ok "a job name that is not UTF-8: exit 2 before anything starts"
else
    nok "non-UTF-8 name (rc=$rc)" "$tmp/utf.log"
fi

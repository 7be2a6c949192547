#!/bin/sh
# output.format webdataset (TAP): tar shards of complete samples whose bytes
# do not depend on threads, layout or array split; each sample's members are
# the files run's bytes; a run killed mid-shard resumes to the same shards,
# each sample made once; a truncated shard is named and redone; a changed
# image is refused from a shard's record; the Python webdataset reader reads
# the shards (skipped when it is not installed).
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
w=$tools/svdworker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$2" 2>/dev/null | tail -n 20; }
skip() { n=$((n+1)); echo "ok $n # SKIP $1"; }
echo "1..20"
SVP_THREADS=1
export SVP_THREADS

if "$tools/svdtool" init --model-config-dir "$top/etc/models/svd-mini" --seed 5 \
        --output "$tmp/job/model" >"$tmp/init.log" 2>&1; then :; else
    echo "Bail out! svdtool init failed"; cat "$tmp/init.log"; exit 1
fi
mkdir -p "$tmp/job/img"
cp "$top/etc/demo/input.png" "$tmp/job/img/a.png"
cp "$top/tests/data/clip_preprocess/input0.png" "$tmp/job/img/b.png"
cat >"$tmp/job/job.yaml" <<YAML
model: {kind: svd, path: model}
steps: 3
video: {inputs: [img/a.png, img/b.png], seeds: [1, 2, 3], width: 112, height: 64, num_frames: 3, decode_chunk_size: 3}
output: {dir: $tmp/ref, format: webdataset, samples_per_shard: 4}
YAML
job=$tmp/job/job.yaml

# the spec's checks; a sample name with a dot (a reader's key ends there)
printf '{"image": "img/a.png", "name": "cat.v2"}\n' >"$tmp/job/dot.jsonl"
"$w" "$job" --set video.manifest="$tmp/job/dot.jsonl" --set video.inputs= --set video.seeds= \
    --set output.dir="$tmp/bad" >"$tmp/bad1.log" 2>&1; rc1=$?
"$w" "$job" --set output.samples_per_shard=0 --set output.dir="$tmp/bad" >"$tmp/bad2.log" 2>&1; rc2=$?
"$w" "$job" --set output.format=zip --set output.dir="$tmp/bad" >"$tmp/bad3.log" 2>&1; rc3=$?
if [ $rc1 -eq 2 ] && grep -q "dot.jsonl:1: key 'name': expected a name without '.' with output.format webdataset" "$tmp/bad1.log" &&
   [ $rc2 -eq 2 ] && grep -q "key 'output.samples_per_shard'" "$tmp/bad2.log" &&
   [ $rc3 -eq 2 ] && grep -q "key 'output.format'" "$tmp/bad3.log" && [ ! -e "$tmp/bad/staging" ] &&
   [ -z "$(ls "$tmp/bad" 2>/dev/null | grep -v '^lease\|^task\|^run')" ]; then
    ok "a sample name with a dot, 0 samples per shard, an unknown format: exit 2, file:line or the key named"
else
    nok "spec checks (rc $rc1 $rc2 $rc3)" "$tmp/bad1.log"
fi

"$w" "$job" >"$tmp/ref.log" 2>&1; rc=$?
want="sample_000000.json
sample_000000.mp4
sample_000000.latents.safetensors
sample_000000.frame_0000.png
sample_000000.frame_0001.png
sample_000000.frame_0002.png
sample_000001.json"
if [ $rc -eq 0 ] && [ -f "$tmp/ref/shard-000000.tar" ] && [ -f "$tmp/ref/shard-000001.tar" ] &&
   [ ! -e "$tmp/ref/shard-000002.tar" ] && [ ! -e "$tmp/ref/staging" ] &&
   [ -z "$(find "$tmp/ref" -name '*.tmp.*')" ] &&
   [ "$(tar tf "$tmp/ref/shard-000000.tar" | head -n 7)" = "$want" ] &&
   [ "$(tar tf "$tmp/ref/shard-000000.tar" | wc -l)" -eq 24 ] &&
   [ "$(tar tf "$tmp/ref/shard-000001.tar" | wc -l)" -eq 12 ] &&
   [ -z "$(tar tvf "$tmp/ref/shard-000000.tar" | grep -v '^-rw-r--r-- 0/0 .* 2000-01-01 00:00 ')" ]; then
    ok "6 samples, 4 per shard: 2 shards of whole samples in a fixed member order, fixed headers, no staging left"
else
    nok "reference run (rc=$rc)" "$tmp/ref.log"
    tar tvf "$tmp/ref/shard-000000.tar" 2>&1 | head -n 8 | sed 's/^/# /'
fi

# the index: each member's offset and size point at its bytes; stats and listing
bad=0
for s in 0 1; do
    t=$tmp/ref/shard-00000$s.tar
    jq -r '.samples[].members[] | "\(.name) \(.offset) \(.size)"' "$tmp/ref/shard-00000$s.index.json" \
        >"$tmp/members" || bad=1
    while read -r name off size; do
        mkdir -p "$tmp/x$s"
        tar xf "$t" -C "$tmp/x$s" "$name" || bad=1
        tail -c +$((off + 1)) "$t" | head -c "$size" | cmp -s - "$tmp/x$s/$name" || bad=1
    done <"$tmp/members"
    [ "$(jq -r .sha256 "$tmp/ref/shard-00000$s.index.json")" = "$(sha256sum "$t" | cut -d' ' -f1)" ] || bad=1
    [ "$(jq -r .bytes "$tmp/ref/shard-00000$s.index.json")" = "$(stat -c %s "$t")" ] || bad=1
done
if [ $bad -eq 0 ] && [ "$(jq .count "$tmp/ref/shard-000000.stats.json")" = 4 ] &&
   [ "$(jq -c .samples "$tmp/ref/shard-000001.stats.json")" = "[4,5]" ] &&
   [ "$(jq .bytes "$tmp/ref/shard-000001.stats.json")" = "$(stat -c %s "$tmp/ref/shard-000001.tar")" ] &&
   [ "$(jq -r '[.shards[] | .status] | join(",")' "$tmp/ref/shards.json")" = "packed,packed" ] &&
   [ "$(jq '.shards[1].first_sample' "$tmp/ref/shards.json")" = 4 ] &&
   "$tools/svdlaunch" status "$tmp/ref" 2>&1 | grep -q "6 of 6 samples done"; then
    ok "index: every member's offset and size hold its bytes, the tar's size and SHA-256; stats; shards.json; status counts from the indexes"
else
    nok "index, stats or listing" "$tmp/ref/shard-000000.index.json"
fi

same_shards() {  # dir: both shards byte-identical to the reference's
    cmp -s "$tmp/ref/shard-000000.tar" "$1/shard-000000.tar" &&
    cmp -s "$tmp/ref/shard-000001.tar" "$1/shard-000001.tar"
}

SVP_THREADS=2 "$w" "$job" --set output.dir="$tmp/t2" >"$tmp/t2.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && same_shards "$tmp/t2"; then
    ok "2 threads: byte-identical shards"
else
    nok "2 threads (rc=$rc)" "$tmp/t2.log"
fi

if command -v mpirun >/dev/null; then
    timeout -k 5 120 mpirun -n 3 --oversubscribe --allow-run-as-root "$w" "$job" \
        --set output.dir="$tmp/s3" --set pipeline.stages=3 >"$tmp/s3.log" 2>&1; rc=$?
    if [ $rc -eq 0 ] && same_shards "$tmp/s3"; then
        ok "S = 3 on 3 ranks (mpirun): byte-identical shards"
    else
        nok "S = 3 on 3 ranks (rc=$rc)" "$tmp/s3.log"
    fi
    timeout -k 5 120 mpirun -n 3 --oversubscribe --allow-run-as-root "$w" "$job" \
        --set output.dir="$tmp/g3" --set pipeline.stages=1 --set pipeline.placement=spread \
        >"$tmp/g3.log" 2>&1; rc=$?
    if [ $rc -eq 0 ] && same_shards "$tmp/g3"; then
        ok "G = 3 on 3 ranks, placement spread (samples finished by different ranks): byte-identical shards"
    else
        nok "G = 3 on 3 ranks (rc=$rc)" "$tmp/g3.log"
    fi
else
    skip "mpirun not installed: S = 3 on 3 ranks"
    skip "mpirun not installed: G = 3 on 3 ranks"
fi

# each sample's members are the files run's bytes and parameters
"$w" "$job" --set output.format=files --set output.dir="$tmp/files" >"$tmp/files.log" 2>&1; rc=$?
mkdir -p "$tmp/xall"
tar xf "$tmp/ref/shard-000000.tar" -C "$tmp/xall" && tar xf "$tmp/ref/shard-000001.tar" -C "$tmp/xall"
bad=0
for i in 0 1 2 3 4 5; do
    k=$(printf 'sample_%06d' "$i")
    for f in latents.safetensors frame_0000.png frame_0002.png; do
        cmp -s "$tmp/files/$k/$f" "$tmp/xall/$k.$f" || bad=1
    done
    if [ -f "$tmp/files/$k/video.mp4" ]; then
        cmp -s "$tmp/files/$k/video.mp4" "$tmp/xall/$k.mp4" || bad=1
    fi
    [ "$(jq -S 'del(.timings, .cpu)' "$tmp/files/$k/sample.json")" = "$(jq -S . "$tmp/xall/$k.json")" ] || bad=1
done
if [ $rc -eq 0 ] && [ $bad -eq 0 ]; then
    ok "every sample's latents, frames, video and record are the files run's"
else
    nok "members against the files run (rc=$rc)" "$tmp/files.log"
fi

# a 2-task array: each task its own shards, the samples' bytes the same
"$w" "$job" --shard 0/2 --set output.dir="$tmp/arr" >"$tmp/arr0.log" 2>&1 &&
"$w" "$job" --shard 1/2 --set output.dir="$tmp/arr" >"$tmp/arr1.log" 2>&1; rc=$?
mkdir -p "$tmp/xarr"
bad=0
for t in "$tmp"/arr/shard-*.tar; do tar xf "$t" -C "$tmp/xarr" || bad=1; done
for f in "$tmp"/xall/*; do cmp -s "$f" "$tmp/xarr/$(basename "$f")" || bad=1; done
if [ $rc -eq 0 ] && [ $bad -eq 0 ] &&
   [ "$(ls "$tmp/arr" | grep -c '^shard-[01]-of-2-00000[01]\.tar$')" -eq 2 ] &&
   [ "$(tar tf "$tmp/arr/shard-1-of-2-000000.tar" | grep -c '\.json$')" -eq 3 ] &&
   tar tf "$tmp/arr/shard-1-of-2-000000.tar" | grep -q '^sample_000005\.mp4$\|^sample_000005\.json$' &&
   [ -f "$tmp/arr/shards.shard-0-of-2.json" ] && [ -f "$tmp/arr/shards.shard-1-of-2.json" ]; then
    ok "2-task array: shard-0-of-2 and shard-1-of-2, each sample's members byte-identical"
else
    nok "array (rc=$rc)" "$tmp/arr1.log"
fi

# SIGKILL mid-shard: killed once the first shard is packed and a sample of
# the second one staged
"$w" "$job" --set output.dir="$tmp/kill" >"$tmp/kill.log" 2>&1 &
pid=$!
i=0
while [ ! -f "$tmp/kill/staging/sample_000004.tar" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
packed=0
[ -f "$tmp/kill/shard-000000.index.json" ] && packed=$(jq .samples_count "$tmp/kill/shard-000000.index.json")
# the second shard's samples staged (the first's may be left half removed)
staged=$(ls "$tmp"/kill/staging/sample_00000[45].tar 2>/dev/null | wc -l)
# status counts packed and staged samples alike
counted=$("$tools/svdlaunch" status --json "$tmp/kill" 2>/dev/null | jq .done)
"$w" "$job" --set output.dir="$tmp/kill" >"$tmp/rerun.log" 2>&1; rc=$?
done_before=$((packed + staged))
if [ $rc -eq 0 ] && same_shards "$tmp/kill" && [ ! -e "$tmp/kill/staging" ] &&
   [ "$counted" = "$((packed + staged))" ] &&
   { [ $done_before -eq 0 ] ||
     grep -q "$done_before of 6 samples finished by an earlier run, $((6 - done_before)) to run" "$tmp/rerun.log"; } &&
   [ "$(grep -c 'done in' "$tmp/rerun.log")" -eq $((6 - done_before)) ]; then
    ok "SIGKILL mid-shard ($packed packed, $staged staged, as many in svdlaunch status), rerun: each sample made once, shards byte-identical"
else
    nok "kill and rerun (rc=$rc, $packed packed, $staged staged, status counted $counted)" "$tmp/rerun.log"
fi

# killed between a shard's last sample and its packing (all its samples
# staged, no shard), and after packing before its staged samples were all
# removed: the start packs the one, removes the others, and makes nothing
# a staged sample made by hand from a files run's folder (job/wds.h): its
# members in shard order, then staged.sha256, the SHA-256 of each member's
# name, a NUL, its size as 8 bytes little-endian and its bytes
stage_by_hand() {  # FOLDER OUT.tar
    local d=$1 out=$2 m size b members=
    for m in sample.json video.mp4 latents.safetensors $(cd "$d" && ls frame_*.png); do
        [ -f "$d/$m" ] && members="$members $m"
    done
    for m in $members; do
        size=$(stat -c %s "$d/$m")
        printf '%s\0' "$m"
        for b in 0 1 2 3 4 5 6 7; do
            printf "\\$(printf %03o $(( (size >> (8 * b)) & 255 )))"
        done
        cat "$d/$m"
    done | sha256sum | cut -d' ' -f1 | tr -d '\n' >"$d/staged.sha256"
    (cd "$d" && tar cf "$out" $members staged.sha256)
    rm -f "$d/staged.sha256"
}
mkdir -p "$tmp/half/staging"
cp "$tmp"/ref/shard-000000.* "$tmp/half/"
for k in sample_000000 sample_000002 sample_000004 sample_000005; do
    stage_by_hand "$tmp/files/$k" "$tmp/half/staging/$k.tar"
done
"$w" "$job" --set output.dir="$tmp/half" >"$tmp/half.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && same_shards "$tmp/half" && [ ! -e "$tmp/half/staging" ] &&
   grep -q "skipped 0-5 (finished by an earlier run)" "$tmp/half.log" &&
   grep -q "packed $tmp/half/shard-000001.tar: 2 samples" "$tmp/half.log" &&
   ! grep -q "done in" "$tmp/half.log"; then
    ok "a shard's samples all staged, unpacked; a packed shard's samples left staged: packed and removed at start, nothing made"
else
    nok "staged at start (rc=$rc)" "$tmp/half.log"
fi

# a damaged staged sample: named, not packed, made again (alone)
mkdir -p "$tmp/dmg/staging"
cp "$tmp"/ref/shard-000000.* "$tmp/dmg/"
for k in sample_000004 sample_000005; do
    stage_by_hand "$tmp/files/$k" "$tmp/dmg/staging/$k.tar"
done
printf 'X' | dd of="$tmp/dmg/staging/sample_000005.tar" bs=1 seek=700 conv=notrunc 2>/dev/null
"$w" "$job" --set output.dir="$tmp/dmg" >"$tmp/dmg.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && same_shards "$tmp/dmg" && [ ! -e "$tmp/dmg/staging" ] &&
   grep -q "warn .*staged sample $tmp/dmg/staging/sample_000005.tar: .*checksum.*damaged" "$tmp/dmg.log" &&
   grep -q "5 of 6 samples finished by an earlier run, 1 to run" "$tmp/dmg.log" &&
   [ "$(grep -c 'done in' "$tmp/dmg.log")" -eq 1 ]; then
    ok "a damaged staged sample: a warning names it, it alone is made again, not packed; the shard byte-identical"
else
    nok "damaged staged sample (rc=$rc)" "$tmp/dmg.log"
fi

# a truncated shard: named, its samples made again, the same bytes back
cp -r "$tmp/ref" "$tmp/trunc"
truncate -s -1024 "$tmp/trunc/shard-000000.tar"
"$w" "$job" --set output.dir="$tmp/trunc" >"$tmp/trunc.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && same_shards "$tmp/trunc" &&
   grep -q "warn .*shard $tmp/trunc/shard-000000.tar is [0-9]* bytes, its index says [0-9]* (truncated or damaged)" "$tmp/trunc.log" &&
   grep -q "2 of 6 samples finished by an earlier run, 4 to run" "$tmp/trunc.log"; then
    ok "a truncated shard: a warning names it, its 4 samples made again, the shard byte-identical"
else
    nok "truncated shard (rc=$rc)" "$tmp/trunc.log"
fi

# a byte flipped inside a shard: the checksum finds it
cp -r "$tmp/ref" "$tmp/flip"
printf 'X' | dd of="$tmp/flip/shard-000001.tar" bs=1 seek=3000 conv=notrunc 2>/dev/null
"$w" "$job" --set output.dir="$tmp/flip" >"$tmp/flip.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && same_shards "$tmp/flip" &&
   grep -q "shard $tmp/flip/shard-000001.tar has sha256 [0-9a-f]*, its index says" "$tmp/flip.log" &&
   grep -q "4 of 6 samples finished by an earlier run, 2 to run" "$tmp/flip.log"; then
    ok "a damaged byte in a shard: its checksum names it, its 2 samples made again"
else
    nok "damaged shard (rc=$rc)" "$tmp/flip.log"
fi

# a rerun of the finished job: nothing to do
"$w" "$job" >"$tmp/again.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "skipped 0-5 (finished by an earlier run)" "$tmp/again.log"; then
    ok "the finished job again: all 6 skipped from the shards' records"
else
    nok "rerun (rc=$rc)" "$tmp/again.log"
fi

# an image replaced under its path: the shard's record refuses it
cp -r "$tmp/ref" "$tmp/img"
cp "$top/tests/data/clip_preprocess/input2.png" "$tmp/job/img/b.png"
"$w" "$job" --set output.dir="$tmp/img" >"$tmp/img.log" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "shard-000000.tar: sample_000001.json was made from another image: .*img/b.png.*(output.overwrite: true replaces it)" "$tmp/img.log" &&
   cmp -s "$tmp/ref/shard-000000.tar" "$tmp/img/shard-000000.tar"; then
    ok "an image replaced under its path: exit 2 from the shard's record, the shard untouched"
else
    nok "changed image (rc=$rc)" "$tmp/img.log"
fi
# the same with output.overwrite: the shard holding it made again whole
"$w" "$job" --set output.dir="$tmp/img" --set output.overwrite=true >"$tmp/imgw.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "shard-000000.tar: sample 1: .*made from another image.*output.overwrite is set, the shard's 4 samples are made again" "$tmp/imgw.log" &&
   grep -q "shard-000001.tar: sample 5: .*output.overwrite is set, the shard's 2 samples are made again" "$tmp/imgw.log" &&
   [ "$(grep -c 'done in' "$tmp/imgw.log")" -eq 6 ] &&
   ! cmp -s "$tmp/ref/shard-000000.tar" "$tmp/img/shard-000000.tar" &&
   [ "$(jq -r '.samples[1].record.params.image_sha256' "$tmp/img/shard-000000.index.json")" = \
     "$(sha256sum "$tmp/job/img/b.png" | cut -d' ' -f1)" ] && [ ! -e "$tmp/img/staging" ]; then
    ok "output.overwrite: the shards holding the replaced image's samples made again whole"
else
    nok "overwrite (rc=$rc)" "$tmp/imgw.log"
fi
cp "$top/tests/data/clip_preprocess/input0.png" "$tmp/job/img/b.png"

# a job grown from 6 to 8 samples: its last shard regrouped (4 per shard)
cp -r "$tmp/ref" "$tmp/grown"
"$w" "$job" --set output.dir="$tmp/grown" --set video.seeds=1,2,3,4 >"$tmp/grown.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && cmp -s "$tmp/ref/shard-000000.tar" "$tmp/grown/shard-000000.tar" &&
   [ "$(tar tf "$tmp/grown/shard-000001.tar" | grep -c '\.json$')" -eq 4 ] &&
   grep -q "shard-000001.tar holds 2 samples, this job's shard 1 holds 4" "$tmp/grown.log" &&
   grep -q "4 of 8 samples finished by an earlier run, 4 to run" "$tmp/grown.log" &&
   [ ! -e "$tmp/grown/staging" ]; then
    ok "a job grown from 6 to 8 samples: the first shard kept, the last one made again with 4"
else
    nok "grown job (rc=$rc)" "$tmp/grown.log"
fi

# shards packed without frames, then output.frames turned on: made again
"$w" "$job" --set output.dir="$tmp/nof" --set output.frames=false >"$tmp/nof1.log" 2>&1 &&
[ "$(tar tf "$tmp/nof/shard-000000.tar" | grep -c 'frame_')" -eq 0 ] &&
"$w" "$job" --set output.dir="$tmp/nof" >"$tmp/nof.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && same_shards "$tmp/nof" &&
   grep -q "warn .*shard-000000.tar: sample_000000.json: the shard has no sample_000000.frame_0000.png, which this job writes: the shard's 4 samples are made again" "$tmp/nof.log"; then
    ok "shards packed without frames, output.frames on again: made again with them, byte-identical"
else
    nok "frames turned on (rc=$rc)" "$tmp/nof.log"
fi

# the simulator: its latent and record in shards, the files run's bytes
printf 'model: {kind: dummy}\nsteps: 3\nsamples: 10\nlatent_shape: [1, 2, 4, 4, 4]\n' >"$tmp/dummy.yaml"
"$w" "$tmp/dummy.yaml" --set output.dir="$tmp/dw" --set output.format=webdataset \
    --set output.samples_per_shard=4 >"$tmp/dw.log" 2>&1 &&
"$w" "$tmp/dummy.yaml" --set output.dir="$tmp/df" >"$tmp/df.log" 2>&1 &&
"$w" "$tmp/dummy.yaml" --set output.dir="$tmp/dw" --set output.format=webdataset \
    --set output.samples_per_shard=4 >"$tmp/dw2.log" 2>&1; rc=$?
mkdir -p "$tmp/xd"
bad=0
for t in "$tmp"/dw/shard-00000[012].tar; do tar xf "$t" -C "$tmp/xd" || bad=1; done
for i in 0 1 2 3 4 5 6 7 8 9; do
    k=$(printf 'sample_%06d' "$i")
    cmp -s "$tmp/df/$k.safetensors" "$tmp/xd/$k.latents.safetensors" || bad=1
    [ "$(jq .seed "$tmp/xd/$k.json")" = "$(jq .params.seed "$tmp/xd/$k.json")" ] || bad=1
done
if [ $rc -eq 0 ] && [ $bad -eq 0 ] && [ "$(ls "$tmp"/dw/*.tar | wc -l)" -eq 3 ] &&
   grep -q "skipped 0-9 (finished by an earlier run)" "$tmp/dw2.log"; then
    ok "the simulator: 10 samples in 3 shards, each latent the files run's bytes, a rerun skips all"
else
    nok "simulator webdataset (rc=$rc)" "$tmp/dw.log"
fi

# a reader that is not ours: Python's webdataset (optional)
py=${SVP_PYTHON:-python3}
if "$py" -c 'import webdataset' >/dev/null 2>&1; then
    if "$py" "$top/contrib/wds_check.py" "$tmp/files" "$tmp"/ref/shard-*.tar >"$tmp/py.log" 2>&1; then
        ok "webdataset reads every shard: each sample's MP4, JSON and latents are the files run's"
    else
        nok "webdataset reader" "$tmp/py.log"
    fi
else
    skip "Python's webdataset package not installed (SVP_PYTHON names a Python that has it)"
fi

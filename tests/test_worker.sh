#!/bin/sh
# svdworker as a user meets it: exit codes, messages, outputs (TAP).
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | head -20; }
echo "1..18"

printf 'steps: 4\nstpes: 3\n' > "$tmp/bad.yaml"
"$w" "$tmp/bad.yaml" --set output.dir="$tmp/out" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "bad.yaml:2:1: unknown key 'stpes' (did you mean 'steps'?)" "$tmp/err"; then
    ok "unknown key: exit 2 with file:line:col and a suggestion"; else nok "unknown key (rc=$rc)"; fi
if [ ! -e "$tmp/out" ]; then ok "bad spec starts nothing"; else nok "bad spec created outputs"; fi

"$w" "$tmp/missing.yaml" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "missing.yaml" "$tmp/err"; then ok "missing spec file named, exit 2"; else nok "missing spec (rc=$rc)"; fi

"$w" --set steps=abc >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "key 'steps': expected an integer" "$tmp/err"; then ok "--set value checked"; else nok "--set (rc=$rc)"; fi

# comm.gpu_direct: on promises device memory on the wire; the cpu backend has none
"$w" --set comm.gpu_direct=on --set output.dir="$tmp/gd" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "key 'comm.gpu_direct': expected auto or off with device cpu" "$tmp/err" &&
   [ ! -e "$tmp/gd" ]; then
    ok "comm.gpu_direct on with device cpu: exit 2, named, nothing started"; else nok "gpu_direct on, cpu (rc=$rc)"; fi

printf 'steps: 6\nsamples: 2\nlatent_shape: [1, 3, 4, 4, 4]\n' > "$tmp/job.yaml"
"$w" "$tmp/job.yaml" --set output.dir="$tmp/out" >"$tmp/log" 2>&1; rc=$?
cp "$tmp/log" "$tmp/err"
if [ $rc -eq 0 ] && [ -f "$tmp/out/sample_000000.safetensors" ] && [ -f "$tmp/out/sample_000001.safetensors" ]; then
    ok "one-process run writes every sample"; else nok "run (rc=$rc)"; fi
if grep -q "r0 info  rank 0 of 1 runs steps \[0, 6)" "$tmp/log" && grep -q "summary: 2 samples" "$tmp/log" && grep -q "eta" "$tmp/log"; then
    ok "log names host:rank, step range, progress with eta, summary"; else nok "log content"; fi
if [ -z "$(find "$tmp/out" -name '*.tmp.*')" ]; then ok "no temporary files left"; else nok "temporaries left"; fi

# image to video with a small random-weight SVD-architecture model
t=$bld/src/tools/svdtool
if "$t" init --model-config-dir "$top/etc/models/svd-mini" --seed 3 --output "$tmp/model" >"$tmp/err" 2>&1; then
    ok "svdtool init writes the svd-mini model"; else nok "svdtool init"; fi
cat >"$tmp/i2v.yaml" <<YAML
model: {kind: svd, path: '$tmp/model'}
steps: 2
samples: 2
video: {inputs: ['$top/etc/demo/input.png'], width: 112, height: 64, num_frames: 3, decode_chunk_size: 2}
output: {dir: '$tmp/i2v'}
YAML
SVP_THREADS=1 "$w" "$tmp/i2v.yaml" >"$tmp/err" 2>&1; rc=$?
d=$tmp/i2v/sample_000001
if [ $rc -eq 0 ] && [ -f "$d/frame_0002.png" ] && [ -f "$d/sample.json" ] && [ -f "$d/latents.safetensors" ] &&
   grep -q '"seed": 43' "$d/sample.json" && grep -q '"dtype": "f32"' "$d/sample.json" &&
   grep -q "weights in f32, products and activations in f32, on the cpu backend" "$tmp/err" && { [ -s "$d/video.mp4" ] || ! grep -q HAVE_FFMPEG "$bld/config.h"; } &&
   [ -z "$(find "$tmp/i2v" -name '*.tmp.*')" ]; then
    ok "image to video: whole sample directories (frames, mp4, sample.json, latents)"
else
    nok "image to video (rc=$rc)"
fi

# weights held in bf16 on the cpu: said in the log and sample.json, and the
# latents are those of the rounded weights, not an f32 run's.  Where the
# CPU has AVX512-BF16 the products run on those units, and say so; else in
# f32, saying why
if grep -q -w avx512_bf16 /proc/cpuinfo 2>/dev/null && grep -q "HAVE_AVX512BF16_INTRINSICS 1" "$bld/config.h"; then
    products="products in bf16 on the CPU's AVX512-BF16 units with fp32 accumulation"
    pjson="bf16 on the CPU's AVX512-BF16 units"
else
    products="products and activations in f32 (this CPU has no AVX512-BF16 units)"
    pjson="f32"
fi
SVP_THREADS=1 "$w" "$tmp/i2v.yaml" --set dtype=bf16 --set output.dir="$tmp/bf16" >"$tmp/err" 2>&1; rc=$?
b=$tmp/bf16/sample_000001
if [ $rc -eq 0 ] && grep -q '"dtype": "bf16"' "$b/sample.json" &&
   [ "$(jq -r .products "$b/sample.json")" = "$pjson" ] &&
   grep -q "weights in bf16, $products" "$tmp/err" &&
   grep -q "UNet matrix weights .* MiB in bf16" "$tmp/err" &&
   [ -f "$b/latents.safetensors" ] && ! cmp -s "$b/latents.safetensors" "$d/latents.safetensors"; then
    ok "dtype bf16 on the cpu backend: weights held in bf16, products \"$pjson\", logged, other latents"; else nok "dtype bf16 (rc=$rc)"; fi
# the same bits on 3 threads as on 1
SVP_THREADS=3 "$w" "$tmp/i2v.yaml" --set dtype=bf16 --set output.dir="$tmp/bf16_3" >"$tmp/err3" 2>&1; rc=$?
if [ $rc -eq 0 ] && cmp -s "$b/latents.safetensors" "$tmp/bf16_3/sample_000001/latents.safetensors"; then
    ok "dtype bf16 (products \"$pjson\"): 3 threads give the latents of 1, bit for bit"; else nok "dtype bf16 on 3 threads (rc=$rc)"; fi
"$w" "$tmp/job.yaml" --set dtype=f16 --set output.dir="$tmp/f16" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "dummy model computes in f32 only" "$tmp/err" && [ ! -e "$tmp/f16" ]; then
    ok "dtype f16 with the dummy model: exit 2, nothing written"; else nok "dummy dtype f16 (rc=$rc)"; fi

# a bad input image is named before anything runs, and nothing is written
head -c 100 "$top/etc/demo/input.png" >"$tmp/truncated.png"
SVP_THREADS=1 "$w" "$tmp/i2v.yaml" --set video.inputs="$tmp/truncated.png" --set output.dir="$tmp/bad1" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "truncated.png" "$tmp/err" && [ ! -e "$tmp/bad1" ]; then
    ok "truncated image: named, exit 2, nothing written"; else nok "truncated image (rc=$rc)"; fi
SVP_THREADS=1 "$w" "$tmp/i2v.yaml" --set video.inputs="$tmp/nope.png" --set output.dir="$tmp/bad2" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "nope.png" "$tmp/err" && [ ! -e "$tmp/bad2" ]; then
    ok "missing image: named, exit 2, nothing written"; else nok "missing image (rc=$rc)"; fi

# a per-rank trace, merged into one timeline
"$w" "$tmp/job.yaml" --set output.dir="$tmp/tr" --set log.trace="$tmp/trace" >"$tmp/err" 2>&1 &&
    "$bld/src/tools/svdtool" trace-merge "$tmp/all.json" "$tmp/trace.rank0.json" >>"$tmp/err" 2>&1
if [ -s "$tmp/all.json" ] && grep -q '"traceEvents"' "$tmp/all.json" &&
   [ "$(grep -o '"name":"step"' "$tmp/all.json" | wc -l)" -eq 12 ] &&
   grep -q '"name":"rank 0 (' "$tmp/all.json"; then
    ok "trace: 12 step events (2 samples x 6 steps) in a merged Chrome trace"
else
    nok "trace"
fi

# --check of one shard says what the shard makes, then the whole job
printf 'steps: 4\nsamples: 10\n' >"$tmp/shard.yaml"
"$w" "$tmp/shard.yaml" --shard 2/3 --check >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "shard.yaml: ok (4 steps, shard 2 of 3: 3 of 10 samples, 1 ranks" "$tmp/err"; then
    ok "--check with --shard I/N reports the shard's sample count"; else nok "--check --shard (rc=$rc)"; fi

# the --set limit is named with its value
set --
for i in $(seq 0 256); do set -- "$@" --set "seed=$i"; done
"$w" "$tmp/shard.yaml" --check "$@" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "more than 256 --set options: over the limit of 256" "$tmp/err"; then
    ok "the --set limit is named with its value"; else nok "--set limit (rc=$rc)"; fi

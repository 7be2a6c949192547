#!/bin/sh
# make bench-cpu: where this CPU stands, in one run.  The SVD-XT UNet
# (etc/models/svd-xt, seeded random weights written by svdtool init: 6 GB
# of disk under TMPDIR, about 12 GB of memory) at batch 2, 14 frames, 16x16
# latents (XT_HW=32: 32x32), one forward timed RUNS times after a warm-up,
# on SVP_THREADS threads (2):
#   - svdpipe f32 against diffusers' fp32 UNet on current PyTorch;
#   - where the CPU has AVX512-BF16: svdpipe bf16 (weights held in bf16,
#     products on those units, sums in fp32) against diffusers in bfloat16
#     (weights and activations; torch runs its products through oneDNN).
# It names the CPU model, the kernels each side runs, GFLOP/s (2 x the
# reference MAC count, svp_unet_macs) against the cores' nominal FMA peak
# (the clock /proc/cpuinfo reports x FLOP per cycle of the widest FMA the
# CPU has: 64 with AVX-512, 32 with AVX2+FMA, twice that for bf16 pairs;
# a nominal figure: turbo and the ports' real count differ by CPU), and the
# ratios against the goal of 0.9.  The peer makes the inputs; its fp32
# output is what both of svdpipe's runs and its own bf16 run are measured
# against.  Without PEER_PYTHON (a Python with torch and diffusers) only
# svdpipe's figures are printed.
#
#     sh bench/bench-cpu.sh BUILD_DIR SRC_DIR   [PEER_PYTHON=... RUNS=3 XT_HW=16 SVP_THREADS=2]
set -u
bld=$1 src=$2
runs=${RUNS:-3}
hw=${XT_HW:-16}
threads=${SVP_THREADS:-2}
. "$src/bench/kernels.sh"

flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { printf '%s\n' "$flags" | grep -q -w "$1"; }
model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: //')
family=$(grep -m1 '^cpu family' /proc/cpuinfo | sed 's/^[^:]*: //')
cpumodel=$(grep -m1 '^model[^ ]' /proc/cpuinfo | sed 's/^[^:]*: //')
mhz=$(grep -m1 '^cpu MHz' /proc/cpuinfo | sed 's/^[^:]*: //')
if has avx512f; then fpc=64; isa="AVX-512"
elif has avx2 && has fma; then fpc=32; isa="AVX2+FMA"
else fpc=16; isa="SSE/AVX"; fi
bf16=no
has avx512_bf16 && bf16=yes
amx=no
has amx_bf16 && amx=yes
echo "cpu            : $model (family $family, model $cpumodel), $isa, AVX512-BF16 $bf16, AMX-BF16 $amx"
awk -v m="$mhz" -v f="$fpc" -v t="$threads" 'BEGIN {
    printf "nominal peak   : %.0f MHz x %d FLOP/cycle x %d threads = %.0f GFLOP/s f32, %.0f bf16 pairs\n",
           m, f, t, m * f * t / 1e3, 2 * m * f * t / 1e3 }'
echo "threads        : $threads (torch.set_num_threads and SVP_THREADS alike)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/svp-bench-cpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "bench-cpu: writing the SVD-XT UNet with random weights (6 GB) ..."
"$bld/src/tools/svdtool" init --config "$src/etc/models/svd-xt/unet/config.json" \
    --seed 1 --output "$tmp/model" >/dev/null || exit 1

peer=""
if [ -n "${PEER_PYTHON:-}" ]; then
    echo
    echo "== diffusers, float32"
    bench_own "$PEER_PYTHON" "$src/bench/peer_unet.py" "$tmp/model" "$tmp/io.safetensors" \
        "$threads" "$runs" 2 14 "$hw" "$hw" | tee "$tmp/peer32.txt" || exit 1
    peer=yes
else
    echo "bench-cpu: no PEER_PYTHON (a Python with torch and diffusers): svdpipe's figures only"
    # inputs of the same shapes, from the peer's recipe, are what bench_unet
    # needs; without the peer, bench_unet_call makes its own
fi

# svdpipe on DTYPE: its figures, with the kernels it runs
ours() {
    if [ -n "$peer" ]; then
        bench_own "$bld/bench/bench_unet" -r "$runs" -t "$threads" -d "$1" \
            "$tmp/model" "$tmp/io.safetensors" >"$tmp/ours_$1.txt" 2>&1 || {
            cat "$tmp/ours_$1.txt"; return 1; }
        grep -E '^(kernels|products|time|throughput|peak RSS|error vs golden)' "$tmp/ours_$1.txt" |
            sed -e 's/^error vs golden: \([^ ]*\) relative.*/error vs peer  : \1 relative to diffusers fp32/'
    else
        bench_own "$bld/bench/bench_unet_call" -m "$tmp/model" -b 2 -f 14 -H "$hw" \
            -W "$hw" -r "$runs" -t "$threads" -d "$1" >"$tmp/ours_$1.txt" 2>&1 || {
            cat "$tmp/ours_$1.txt"; return 1; }
        grep -E '^(median_s|min_s|max_s|tflops_achieved):' "$tmp/ours_$1.txt"
    fi
}
median_of() {
    sed -n -e 's/^time *: median \([0-9.]*\) s.*/\1/p' -e 's/^median_s: //p' "$1" | head -n 1
}

echo
echo "== svdpipe, f32"
ours f32 || exit 1
if [ -n "$peer" ]; then
    awk -v a="$(median_of "$tmp/ours_f32.txt")" -v b="$(median_of "$tmp/peer32.txt")" \
        -v hw="$hw" 'BEGIN {
        printf "ratio f32      : SVD-XT UNet B2 F14 %dx%d: svdpipe %.3f s / diffusers fp32 %.3f s = %.2f (goal <= 0.9)\n",
               hw, hw, a, b, a / b }'
fi
if [ "$bf16" != yes ]; then
    echo
    echo "bf16           : not measured: this CPU has no AVX512-BF16 units (svdpipe's bf16"
    echo "                 then holds the weights in bf16 and multiplies in f32)"
    exit 0
fi
if [ -n "$peer" ]; then
    echo
    echo "== diffusers, bfloat16"
    PEER_DTYPE=bf16 bench_own "$PEER_PYTHON" "$src/bench/peer_unet.py" "$tmp/model" \
        "$tmp/io.safetensors" "$threads" "$runs" | tee "$tmp/peer16.txt" || exit 1
fi
echo
echo "== svdpipe, bf16"
ours bf16 || exit 1
if [ -n "$peer" ]; then
    awk -v a="$(median_of "$tmp/ours_bf16.txt")" -v b="$(median_of "$tmp/peer16.txt")" \
        -v hw="$hw" 'BEGIN {
        printf "ratio bf16     : SVD-XT UNet B2 F14 %dx%d: svdpipe %.3f s / diffusers bf16 %.3f s = %.2f (goal <= 0.9)\n",
               hw, hw, a, b, a / b }'
fi
exit 0

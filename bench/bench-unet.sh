#!/bin/sh
# make bench-unet: bench_unet on the unet_small case (golden weights when the
# larger reference set is present, else the compact set's config and inputs
# with seeded random weights), then, when PEER_PYTHON names a Python with
# torch and diffusers, the same model and inputs through diffusers on the
# same number of threads (bench/peer_unet.py), and the ratio of the medians.
# The project itself never needs Python: without PEER_PYTHON the built-in
# target line is the comparison.  svdpipe's figures are measured with
# OpenBLAS's own kernel choice for this CPU, then once more under its
# Haswell kernels (bench/kernels.sh); each names the kernels it ran.
#
# With XT=1 the model is the real SVD-XT UNet (etc/models/svd-xt, 1.5 B
# parameters, seeded random weights written by svdtool init: 6 GB of disk
# under TMPDIR and about 12 GB of memory) at batch 2, 14 frames, 16x16
# latents (XT_HW=32: 32x32), 3 runs; the peer makes the inputs and its output is what
# bench_unet measures its difference against.
#
#     sh bench/bench-unet.sh BUILD_DIR SRC_DIR      [PEER_PYTHON=... RUNS=... XT=1 XT_HW=16|32]
set -u
bld=$1 src=$2
runs=${RUNS:-7}
SVP_GOLDEN_DIR=$(sh "$src/tests/golden-dir.sh" "$src")
export SVP_GOLDEN_DIR
. "$src/bench/kernels.sh"
if [ -n "${XT:-}" ]; then
    runs=${RUNS:-3}
    hw=${XT_HW:-16}
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/svp-bench-xt.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    echo "bench-unet: writing the SVD-XT UNet with random weights (6 GB) ..."
    "$bld/src/tools/svdtool" init --config "$src/etc/models/svd-xt/unet/config.json" \
        --seed 1 --output "$tmp/model" >/dev/null || exit 1
    if [ -z "${PEER_PYTHON:-}" ]; then
        bench_own "$bld/bench/bench_unet_call" -m "$tmp/model" -b 2 -f 14 -H "$hw" \
            -W "$hw" -r "$runs" -t "${SVP_THREADS:-2}" || exit 1
        echo "-- the same under the Haswell kernels"
        bench_haswell "$bld/bench/bench_unet_call" -m "$tmp/model" -b 2 -f 14 \
            -H "$hw" -W "$hw" -r "$runs" -t "${SVP_THREADS:-2}" |
            grep -E '^(kernels|median_s|min_s|max_s|tflops_achieved):'
        exit 0
    fi
    threads=${SVP_THREADS:-2}
    "$PEER_PYTHON" "$src/bench/peer_unet.py" "$tmp/model" "$tmp/io.safetensors" \
        "$threads" "$runs" 2 14 "$hw" "$hw" | tee "$tmp/peer.txt" || exit 1
    # the io file's "out" is the peer's; the built-in target is unet_small's
    bench_own "$bld/bench/bench_unet" -r "$runs" -t "$threads" "$tmp/model" \
        "$tmp/io.safetensors" >"$tmp/ours.txt" || exit 1
    sed -e 's/^error vs golden: \([^ ]*\) relative.*/error vs peer  : \1 relative/' \
        -e '/^target/d' "$tmp/ours.txt"
    ours=$(sed -n 's/^time *: median \([0-9.]*\) s.*/\1/p' "$tmp/ours.txt")
    peer=$(sed -n 's/^median_s: //p' "$tmp/peer.txt")
    awk -v a="$ours" -v b="$peer" -v t="$threads" -v hw="$hw" 'BEGIN {
        printf "ratio          : SVD-XT UNet B2 F14 %dx%d: svdpipe %.3f s / peer %.3f s = %.2f (%d threads; target <= 0.7)\n",
               hw, hw, a, b, a / b, t }'
    echo "-- svdpipe under the Haswell kernels"
    bench_haswell "$bld/bench/bench_unet" -r "$runs" -t "$threads" "$tmp/model" \
        "$tmp/io.safetensors" | grep -E '^(kernels|time) '
    exit 0
fi
if [ -z "${PEER_PYTHON:-}" ]; then
    bench_own "$bld/bench/bench_unet" -r "$runs" || exit 1
    echo "-- the same under the Haswell kernels"
    bench_haswell "$bld/bench/bench_unet" -r "$runs" |
        grep -E '^(kernels|time|throughput) '
    exit 0
fi

tmp=$(mktemp -d /tmp/svp-bench-unet.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bench_own "$bld/bench/bench_unet" -r "$runs" -k "$tmp/model" | tee "$tmp/ours.txt" || exit 1
model=$(sed -n 's/^model *: //p' "$tmp/ours.txt")
inputs=$(sed -n 's/^inputs *: //p' "$tmp/ours.txt")
threads=$(sed -n 's/^unet forward.*, \([0-9]*\) threads$/\1/p' "$tmp/ours.txt")
ours=$(sed -n 's/^time *: median \([0-9.]*\) s.*/\1/p' "$tmp/ours.txt")
echo
"$PEER_PYTHON" "$src/bench/peer_unet.py" "$model" "$inputs" "$threads" "$runs" |
    tee "$tmp/peer.txt" || { echo "bench-unet: the peer failed" >&2; exit 1; }
peer=$(sed -n 's/^median_s: //p' "$tmp/peer.txt")
awk -v a="$ours" -v b="$peer" -v t="$threads" 'BEGIN {
    printf "ratio          : svdpipe %.4f s / peer %.4f s = %.2f (%d threads, same model and inputs; target <= 0.7)\n",
           a, b, a / b, t }'
echo "-- svdpipe under the Haswell kernels"
bench_haswell "$bld/bench/bench_unet" -r "$runs" -k "$tmp/model" |
    grep -E '^(kernels|time|throughput) '

#!/bin/sh
# make bench-models: the SVD-XT VAE decode (14 frames of 16x16 latents) and
# image encoder (one 224x224 image) with seeded random weights written by
# svdtool init from etc/models/svd-xt, timed by bench_model.  With
# PEER_PYTHON (a Python with torch, diffusers and transformers) the peer runs
# first on the same weights and makes the inputs; both are timed in turn on
# the same number of threads and the ratios printed (target <= 0.7);
# svdpipe's figure with OpenBLAS's own kernel choice, then under its
# Haswell kernels (bench/kernels.sh).
# Without it there is nothing to compare with, and nothing is timed.
#
#     sh bench/bench-models.sh BUILD_DIR SRC_DIR   [PEER_PYTHON=... RUNS=... SVP_THREADS=...]
bld=$1
src=$2
. "$src/bench/kernels.sh"
runs=${RUNS:-3}
threads=${SVP_THREADS:-2}
if [ -z "${PEER_PYTHON:-}" ]; then
    echo "bench-models: set PEER_PYTHON to a Python with torch, diffusers and transformers;"
    echo "  the inputs come from the peer, so there is nothing to time without it"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svp-bench-models.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
for kind in vae clip; do
    case $kind in
        vae)  dir=vae; shape="14 16 16"; what="SVD-XT VAE decode, 14 frames, 16x16 latents" ;;
        clip) dir=image_encoder; shape="1 224 224"; what="SVD-XT image encoder, 1 image, 224x224" ;;
    esac
    echo "== $what"
    "$bld/src/tools/svdtool" init --config "$src/etc/models/svd-xt/$dir/config.json" \
        --seed 1 --output "$tmp/$kind" >/dev/null || exit 1
    # shellcheck disable=SC2086
    if ! "$PEER_PYTHON" "$src/bench/peer_models.py" "$kind" "$tmp/$kind" "$tmp/$kind.io" \
            "$threads" "$runs" $shape >"$tmp/$kind.peer" 2>"$tmp/$kind.err"; then
        tail -n 5 "$tmp/$kind.err"
        status=1
        continue
    fi
    bench_own "$bld/bench/bench_model" "$kind" -m "$tmp/$kind" -i "$tmp/$kind.io" \
        -r "$runs" -t "$threads" >"$tmp/$kind.ours" || { status=1; continue; }
    cat "$tmp/$kind.peer" "$tmp/$kind.ours"
    ours=$(sed -n 's/^median_s: //p' "$tmp/$kind.ours")
    peer=$(sed -n 's/^median_s: //p' "$tmp/$kind.peer")
    awk -v a="$ours" -v b="$peer" -v t="$threads" -v w="$what" 'BEGIN {
        printf "ratio          : %s: svdpipe %.3f s / peer %.3f s = %.2f (%d threads; target <= 0.7)\n",
               w, a, b, a / b, t }'
    echo "-- svdpipe under the Haswell kernels"
    bench_haswell "$bld/bench/bench_model" "$kind" -m "$tmp/$kind" -i "$tmp/$kind.io" \
        -r "$runs" -t "$threads" | grep -E '^(kernels|median_s):'
    echo
done
exit $status

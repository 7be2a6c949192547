#!/bin/bash
# gpu-frames.sh: the pipeline's device frames and comm.gpu_direct on a GPU.
#
#     bench/gpu-frames.sh [BUILD_DIR]     # default: $SVP_TOP_BUILDDIR, else _build_gpu
#
# The golden pipeline_tiny (SVD UNet, scheduler and conditioning; VAE decode)
# with device: cuda, under srun (a throwaway local Slurm cluster when none is
# set up), both ranks on the one GPU:
#   - 1 rank: the reference;
#   - 2 ranks, comm.gpu_direct off: frames staged through pinned host memory
#     (logged as the "staged path"), latents bit-identical to 1 rank;
#   - 2 ranks, comm.gpu_direct on, where UCX has CUDA support (a cuda memory
#     domain in ucx_info -d): UCX moves the device frames ("device path"),
#     latents bit-identical to 1 rank; where it has none, the job must stop
#     at start naming what UCX lacks, and auto must take the staged path.
# The latents are the same bits on every path because the scheduler runs on
# the device with the CPU scheduler's arithmetic (src/noise/sched_math.h).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
builddir=${1:-${SVP_TOP_BUILDDIR:-$top/_build_gpu}}
builddir=$(cd "$builddir" 2>/dev/null && pwd) || { echo "gpu-frames: no build directory $1" >&2; exit 1; }
worker=$builddir/src/tools/svdworker

fail() { echo "gpu-frames: $*" >&2; echo "gpu-frames: FAIL"; exit 1; }

[ -x "$worker" ] || fail "$worker not built"
[ -x "$builddir/tests/golden/conditioning" ] ||
    fail "tests/golden/conditioning not built (make -C $builddir tests/golden/conditioning)"
[ -f "$builddir/src/ops/cuda/svdpipe_cuda.so" ] || fail "no CUDA module in $builddir (configure found no CUDA toolkit)"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || fail "no GPU visible (nvidia-smi -L)"
g=${SVP_GOLDEN_DIR:-$(sh "$top/tests/golden-dir.sh" "$top")}/pipeline_tiny
[ -r "$g/pipeline.safetensors" ] || fail "golden pipeline_tiny not found (set SVP_GOLDEN_DIR)"

if [ -z "${SLURM_CONF:-}" ]; then
    exec "$top/tests/cluster/with-cluster.sh" --timeout 900 -- "$0" "$builddir"
fi

export SVP_MODULE_DIR=$builddir/src/ops/cuda
ucx_cuda=0
ucx_info -d 2>/dev/null | grep -q 'Memory domain: *cuda' && ucx_cuda=1

tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
"$builddir/tests/golden/conditioning" "$g/pipeline.safetensors" "$tmpd/cond.safetensors" ||
    fail "cannot write the conditioning file"
cat >"$tmpd/svd.yaml" <<YAML
model: {kind: svd, path: '$g', conditioning: '$tmpd/cond.safetensors'}
device: cuda
steps: 4
samples: 2
video: {width: 48, height: 32, num_frames: 3, fps: 7, motion_bucket_id: 127,
        noise_aug_strength: 0.02, min_guidance: 1.0, max_guidance: 3.0,
        decode_chunk_size: 2}
comm: {deadline: 60}
cluster: {share_gpu: true}
log: {level: info}
YAML

status=0
echo "# device: $(nvidia-smi --query-gpu=name,pci.bus_id --format=csv,noheader | head -n 1); UCX cuda support: $ucx_cuda"
"$worker" "$tmpd/svd.yaml" --set output.dir="$tmpd/p1" >"$tmpd/p1.log" 2>&1 ||
    { tail -5 "$tmpd/p1.log"; fail "svdworker on 1 rank (device cuda) failed"; }

# run2 MODE: 2 ranks with comm.gpu_direct MODE; output in $tmpd/p2MODE
run2() {
    timeout 300 srun --mpi=pmix --kill-on-bad-exit=1 -W 240 -n 2 "$worker" "$tmpd/svd.yaml" \
        --set comm.gpu_direct="$1" --set output.dir="$tmpd/p2$1" >"$tmpd/p2$1.log" 2>&1
}

# check MODE PATH: ran on PATH and the latents are 1 rank's
check() {
    local same=yes s
    grep -q "device frames, $2 path" "$tmpd/p2$1.log" ||
        { echo "# gpu_direct $1: no 'device frames, $2 path' line in the log"; status=1; return; }
    for s in sample_000000 sample_000001; do
        cmp -s "$tmpd/p1/$s/latents.safetensors" "$tmpd/p2$1/$s/latents.safetensors" || same=NO
    done
    echo "2 ranks, gpu_direct $1: $2 path, latents bit-identical to 1 rank: $same"
    [ $same = yes ] || status=1
}

run2 off || { tail -5 "$tmpd/p2off.log"; fail "2 ranks, gpu_direct off, failed"; }
check off staged
if [ $ucx_cuda = 1 ]; then
    run2 on || { tail -5 "$tmpd/p2on.log"; fail "2 ranks, gpu_direct on, failed"; }
    check on device
    run2 auto || { tail -5 "$tmpd/p2auto.log"; fail "2 ranks, gpu_direct auto, failed"; }
    check auto device
else
    if run2 on; then
        echo "# gpu_direct on ran although UCX has no cuda memory domain"; status=1
    elif grep -q "comm.gpu_direct is on but this UCX cannot move cuda memory" "$tmpd/p2on.log"; then
        echo "2 ranks, gpu_direct on without UCX cuda support: stopped at start, saying why"
    else
        tail -5 "$tmpd/p2on.log"; echo "# gpu_direct on failed without saying why"; status=1
    fi
    run2 auto || { tail -5 "$tmpd/p2auto.log"; fail "2 ranks, gpu_direct auto, failed"; }
    check auto staged
fi
[ $status = 0 ] && echo "gpu-frames: PASS" || echo "gpu-frames: FAIL"
exit $status

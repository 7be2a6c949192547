#!/bin/sh
# gpu-check.sh: the one-command GPU acceptance run.
#
#     sh bench/gpu-check.sh [BUILD_DIR]        # default BUILD_DIR: _build_gpu
#
# Runs from a source tree (a checkout or the tarball of `make gpu-bundle`).
# Needs an NVIDIA driver, nvcc and the CUDA runtime libraries (cuBLAS); the
# other dependencies come from the system or, when deps/*.deb exist beside
# this tree (the bundle), from those packages unpacked into a private root
# (no root rights, no network).  Steps:
#   1. configure --with-cuda and build;
#   2. tests/test_ops_cuda (every op and the golden forwards against the CPU
#      backend; golden data found by tests/golden-dir.sh: $SVP_GOLDEN_DIR,
#      ../shared/golden or the compact copy in tests/data);
#   3. an SVD-XT model with random weights (svdtool init from
#      etc/models/svd-xt);
#   4. one UNet call at 25 frames, 576x1024 (72x128 latents), batch 2, in
#      bf16 and f16 (each said plainly not available where the build cannot
#      compute in it) and f32: median s/call, arena size, MFU against the
#      counted FLOPs;
#   5. a full image-to-video sample (CLIP, VAE encode, 25 steps, chunked
#      decode) with svdworker;
#   6. where python3 imports torch and diffusers: diffusers' fp16 UNet from
#      the same config and weights (bench/diffusers_unet.py);
#   7. bench/gpu-handoff.sh and bench/gpu-frames.sh when they exist.
# It writes bench/results/gpu-<date>-<gpu>.md and a machine-readable
# gpu-<date>-<gpu>.yaml beside it (svdlaunch plan --measured reads it).
# It exits non-zero when no GPU is visible (after building) or a step fails.
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-"$srcdir/_build_gpu"}
SVP_GOLDEN_DIR=$(sh "$srcdir/tests/golden-dir.sh" "$srcdir")
export SVP_GOLDEN_DIR
peak_bf16=${SVP_PEAK_TFLOPS:-}     # dense bf16/f16 tensor-core peak, TFLOP/s
runs=${SVP_GPU_RUNS:-5}
log() { echo "gpu-check: $*"; }
die() { echo "gpu-check: $*" >&2; exit 1; }

# ---- dependencies from the bundle's packages, unpacked privately ----
if ls "$srcdir"/deps/*.deb >/dev/null 2>&1; then
    root=$srcdir/deps/root
    if [ ! -f "$root/.unpacked" ]; then
        command -v dpkg-deb >/dev/null 2>&1 || [ -x "$srcdir/deps/undeb.sh" ] ||
            die "no dpkg-deb to unpack deps/*.deb"
        mkdir -p "$root"
        for d in "$srcdir"/deps/*.deb; do
            if command -v dpkg-deb >/dev/null 2>&1; then
                dpkg-deb -x "$d" "$root" || die "cannot unpack $d"
            else
                sh "$srcdir/deps/undeb.sh" "$d" "$root" || die "cannot unpack $d"
            fi
        done
        touch "$root/.unpacked"
    fi
    multi=$(ls -d "$root"/usr/lib/*-linux-gnu 2>/dev/null | head -n 1)
    triplet=$(basename "$multi")
    # .pc files name prefix=/usr: point them at the private root.  OpenBLAS
    # is found through its own directories (the alternatives links its
    # package scripts would make are not there).
    blas=$multi/openblas-pthread
    export PKG_CONFIG_SYSROOT_DIR="$root"
    export PKG_CONFIG_PATH="$blas/pkgconfig:$multi/pkgconfig:$root/usr/lib/pkgconfig:$root/usr/share/pkgconfig"
    export CPPFLAGS="-I$root/usr/include -I$root/usr/include/$triplet -I$root/usr/include/$triplet/openblas-pthread ${CPPFLAGS:-}"
    export LDFLAGS="-L$blas -L$multi -L$root/usr/lib -Wl,-rpath-link,$multi -Wl,-rpath,$blas -Wl,-rpath,$multi ${LDFLAGS:-}"
    export LD_LIBRARY_PATH="$multi:$multi/openblas-pthread:$root/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$root/usr/bin:$PATH"
    log "dependencies: the bundle's packages, unpacked under $root"
fi

# ---- 1. build ----
start=$(date +%s)
if [ ! -x "$srcdir/configure" ]; then
    (cd "$srcdir" && autoreconf -fi) || die "no configure and autoreconf failed"
fi
mkdir -p "$builddir" && cd "$builddir" || die "cannot use $builddir"
if [ ! -f Makefile ]; then
    "$srcdir/configure" --with-cuda >configure.log 2>&1 ||
        { tail -n 30 configure.log; die "configure failed (log: $builddir/configure.log)"; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" >make.log 2>&1 &&
    make -j"$jobs" tests/test_ops_cuda tests/golden/conditioning >>make.log 2>&1 ||
    { tail -n 40 make.log; die "build failed (log: $builddir/make.log)"; }
log "build: $(( $(date +%s) - start )) s (make -j$jobs)"

# ---- the device ----
gpu=""
if command -v nvidia-smi >/dev/null 2>&1; then
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version \
              --format=csv,noheader 2>/dev/null | head -n 1)
fi
if [ -z "$gpu" ]; then
    # the binaries load and the device tests say why they skip
    ./tests/test_ops_cuda --verbose=1 >nodev.log 2>&1
    grep -m1 -iE 'cuda.*(device|driver)' nodev.log >&2
    grep -E 'Synthesis' nodev.log >&2
    die "no GPU is visible (nvidia-smi found none); everything is built, nothing was measured"
fi
gpu_name=$(echo "$gpu" | cut -d, -f1 | sed 's/^ *//; s/ *$//')
gpu_tag=$(echo "$gpu_name" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
log "device: $gpu"

stamp=$(date -u +%Y%m%d)
resdir=$srcdir/bench/results
mkdir -p "$resdir"
md=$resdir/gpu-$stamp-$gpu_tag.md
yml=$resdir/gpu-$stamp-$gpu_tag.yaml
fail=0

# ---- 2. test_ops_cuda ----
./tests/test_ops_cuda --tap=tap.log --verbose=1 -j1 >run.log 2>&1
tests_rc=$?
grep -E '^(ok|not ok)' tap.log
[ "$tests_rc" -eq 0 ] || { tail -n 40 run.log; fail=1; }

# ---- 3. the SVD-XT model, random weights ----
model=$builddir/svd-xt-random
if [ ! -d "$model" ]; then
    ./src/tools/svdtool init --model-config-dir "$srcdir/etc/models/svd-xt" \
        --seed 1 --output "$model" >init.log 2>&1 ||
        { tail -n 20 init.log; die "svdtool init of SVD-XT failed"; }
fi

# ---- 4. one UNet call, SVD-XT size ----
peak_opt=""
[ -n "$peak_bf16" ] && peak_opt="-P $peak_bf16"
for dt in bf16 f16 f32; do
    # shellcheck disable=SC2086
    ./bench/bench_unet_call -m "$model/unet" -B cuda -d "$dt" -b 2 -f 25 \
        -H 72 -W 128 -s 1 -r "$runs" $peak_opt >"unet-$dt.txt" 2>&1
    rc=$?
    if [ "$rc" -eq 3 ]; then
        log "unet $dt: NOT AVAILABLE in this build: $(tail -n 1 "unet-$dt.txt")"
    elif [ "$rc" -ne 0 ]; then
        log "unet $dt: FAILED (rc $rc)"; tail -n 5 "unet-$dt.txt"; fail=1
    else
        log "unet $dt: $(grep -E '^median_s' "unet-$dt.txt")"
    fi
done

# ---- 5. a full image-to-video sample ----
cat >i2v.yaml <<YAML
model: {kind: svd, path: '$model'}
device: cuda
steps: 25
samples: 1
video: {inputs: ['$srcdir/etc/demo/input.png'], width: 1024, height: 576, num_frames: 25, decode_chunk_size: 8}
output: {dir: '$builddir/i2v'}
YAML
rm -rf "$builddir/i2v"
t0=$(date +%s.%N)
./src/tools/svdworker i2v.yaml >i2v.log 2>&1
i2v_rc=$?
i2v_s=$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo "?")
[ "$i2v_rc" -eq 0 ] || { tail -n 10 i2v.log; fail=1; }
log "image to video (25 frames, 576x1024, 25 steps): rc $i2v_rc, $i2v_s s"

# ---- 6. diffusers, same config and weights ----
py=${PYTHON:-python3}
dif=""
if "$py" -c 'import torch' >/dev/null 2>&1; then
    if ! "$py" -c 'import diffusers' >/dev/null 2>&1; then
        if ls "$srcdir"/deps/diffusers-*.whl >/dev/null 2>&1; then
            export PYTHONPATH="$builddir/pydeps${PYTHONPATH:+:$PYTHONPATH}"
            "$py" -m pip install --no-deps --no-index --target "$builddir/pydeps" \
                "$srcdir"/deps/*.whl >pip.log 2>&1 ||
                log "cannot install the bundled wheels (pip.log)"
        fi
    fi
    "$py" "$srcdir/bench/diffusers_unet.py" "$model/unet" "$runs" >diffusers.txt 2>&1
    if [ $? -eq 0 ]; then
        dif=$(grep -E '^median_s' diffusers.txt | cut -d' ' -f2)
        log "diffusers fp16 unet: $dif s/call"
    else
        log "diffusers: FAILED"; tail -n 5 diffusers.txt
    fi
else
    log "diffusers: no PyTorch here, not timed"
fi

# ---- 7. the hand-off check ----
handoff=""
if [ -f "$srcdir/bench/gpu-handoff.sh" ]; then
    SVP_TOP_BUILDDIR=$builddir sh "$srcdir/bench/gpu-handoff.sh" >handoff.txt 2>&1 ||
        fail=1
    handoff=$builddir/handoff.txt
fi
frames=""
if [ -f "$srcdir/bench/gpu-frames.sh" ]; then
    SVP_TOP_BUILDDIR=$builddir sh "$srcdir/bench/gpu-frames.sh" >frames.txt 2>&1 ||
        fail=1
    frames=$builddir/frames.txt
fi

# ---- results ----
field() { grep -E "^$2:" "$1" 2>/dev/null | head -n 1 | cut -d' ' -f2; }
{
    echo "# GPU check, $(date -u +%Y-%m-%d), $gpu_name"
    echo
    echo "Device: $gpu. Source: $(cd "$srcdir" && git rev-parse --short HEAD 2>/dev/null || cat "$srcdir/.tarball-version" 2>/dev/null || echo unknown)."
    echo
    echo "## One UNet call: SVD-XT, 25 frames, 576x1024, batch 2"
    echo
    echo "| compute | median s/call | arena (GB) | TFLOP/call | TFLOP/s | MFU |"
    echo "|---|---|---|---|---|---|"
    for dt in bf16 f16 f32; do
        f=unet-$dt.txt
        if [ -n "$(field "$f" median_s)" ]; then
            echo "| svdpipe, weights in $dt (products f32) | $(field "$f" median_s) | $(awk '/^arena_reserved_bytes/ {printf "%.2f", $2 / 1e9}' "$f") | $(field "$f" tflop) | $(field "$f" tflops_achieved) | $(field "$f" mfu) |"
        else
            echo "| svdpipe, weights in $dt | not available in this build | | | | |"
        fi
    done
    [ -n "$dif" ] && echo "| diffusers fp16 (PyTorch, same config and weights) | $dif | | | | |"
    echo "| TensorRT (Stability's figure, H100 PCIe, quoted) | 0.76 | | | | |"
    echo
    echo "MFU is against ${peak_bf16:-no} TFLOP/s (set SVP_PEAK_TFLOPS); FLOPs are 2 x the counted MACs (svp_unet_macs)."
    echo
    echo "## Image to video: 25 frames, 576x1024, 25 steps, chunked decode"
    echo
    echo "svdworker, one rank: exit $i2v_rc, $i2v_s s wall (CLIP, VAE encode, 25 steps x 2 for guidance batch, decode)."
    echo
    echo "## test_ops_cuda"
    echo
    echo '```'
    grep -E '^(ok|not ok)' tap.log
    echo '```'
    if [ -n "$handoff" ]; then
        echo
        echo "## Hand-off (bench/gpu-handoff.sh)"
        echo
        echo '```'
        cat "$handoff"
        echo '```'
    fi
    if [ -n "$frames" ]; then
        echo
        echo "## Pipeline device frames and comm.gpu_direct (bench/gpu-frames.sh)"
        echo
        echo '```'
        cat "$frames"
        echo '```'
    fi
} >"$md"
# the planner's figure: the fastest dtype measured
best=""
best_s=""
for dt in bf16 f16 f32; do
    t=$(field "unet-$dt.txt" median_s)
    [ -n "$t" ] || continue
    if [ -z "$best" ] || awk -v a="$t" -v b="$best_s" 'BEGIN {exit !(a < b)}'; then
        best=$dt
        best_s=$t
    fi
done
{
    echo "# Measured by bench/gpu-check.sh, $(date -u +%Y-%m-%d), on $gpu."
    echo "# For the planner: svdlaunch plan JOB --hardware TABLE --measured THIS"
    for dt in bf16 f16 f32; do
        echo "# unet call $dt: $(field "unet-$dt.txt" median_s) s, arena $(field "unet-$dt.txt" arena_reserved_bytes) bytes"
    done
    echo "# diffusers f16 unet call: ${dif:-not timed} s; image to video: $i2v_s s (exit $i2v_rc)"
    mem_mib=$(echo "$gpu" | cut -d, -f2 | tr -cd '0-9')
    [ -n "$mem_mib" ] && echo "memory_gb: $(awk -v m="$mem_mib" 'BEGIN {printf "%.1f", m * 1.048576 / 1000}')"
    if [ -n "$best" ]; then
        echo "svd:"
        echo "  source: measured"
        echo "  dtype: $best"
        echo "  reference: {batch: 2, frames: 25, height: 576, width: 1024}"
        echo "  unet_step_s: $(field "unet-$best.txt" median_s)"
    fi
} >"$yml"
log "results: $md"
exit $fail

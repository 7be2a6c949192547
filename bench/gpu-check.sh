#!/bin/sh
# gpu-check.sh: the one-command GPU acceptance run.
#
#     sh bench/gpu-check.sh [--quick | --rest] [--out DIR] [--build DIR]
#
#   --out DIR    where the results go (default bench/results); point it at
#                the folder that comes back from the GPU machine
#   --build DIR  the build directory (default _build_gpu; a bare
#                positional argument is taken as it too)
#   --quick      build, test_ops_cuda, the UNet call in bf16 and f16 with
#                3 timed calls each: under 5 minutes on one H100 (doc/GPU-CHECK.md)
#   --rest       the steps --quick leaves out, and any step of it that the
#                build directory does not record as done (a cut-off quick
#                run, or a fresh machine where the build is gone)
#
# Runs from a source tree, in which deps/ (`make gpu-bundle`) may hold the
# non-CUDA dependencies as one root of unpacked Debian packages, diffusers'
# wheel and the generated build system; the root is unpacked privately (no
# root rights, no network).  Needs an NVIDIA driver, nvcc and the CUDA runtime
# libraries (cuBLAS).  The steps, in the order of what a cut-off run should
# still bring back:
#   1. build: configure --with-cuda and make;
#   2. tests/test_ops_cuda (every op and the golden forwards against the
#      CPU backend; golden data found by tests/golden-dir.sh);
#   3. one UNet call at SVD-XT size (25 frames, 576x1024 = 72x128 latents,
#      batch 2) in bf16, with random weights (svdtool init of the UNet
#      alone, written while test_ops_cuda runs): median s/call, arena,
#      MFU against the counted FLOPs;
#   4. the same call in f16, then f32 (a dtype the build cannot compute in
#      is reported as not available, never timed as f32 under its name);
#   5. a full image-to-video sample (CLIP, VAE encode, 25 steps, chunked
#      decode) with svdworker;
#   6. bench/gpu-handoff.sh and bench/gpu-frames.sh;
#   7. diffusers' fp16 UNet from the same config and weights, where python3
#      imports torch (bench/diffusers_unet.py).
# Each result is appended to DIR/gpu-check.md and flushed to disk as soon as
# it is known, with the seconds the step took; DIR/gpu-check.yaml (what
# svdlaunch plan --measured reads) is rewritten whole after each UNet
# figure.  A run killed at any point leaves every figure it had.
# Exit: 0 all steps ran and passed, 1 a step failed, 2 bad usage or no
# usable build, 3 no GPU visible (built; nothing measured).
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=$srcdir/_build_gpu
outdir=$srcdir/bench/results
mode=all
while [ $# -gt 0 ]; do
    case $1 in
        --quick) mode=quick ;;
        --rest)  mode=rest ;;
        --out)   [ $# -ge 2 ] || { echo "gpu-check: --out needs a directory" >&2; exit 2; }
                 outdir=$2; shift ;;
        --out=*) outdir=${1#--out=} ;;
        --build) [ $# -ge 2 ] || { echo "gpu-check: --build needs a directory" >&2; exit 2; }
                 builddir=$2; shift ;;
        --build=*) builddir=${1#--build=} ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "gpu-check: unknown option $1 (--help)" >&2; exit 2 ;;
        *)  builddir=$1 ;;
    esac
    shift
done
mkdir -p "$outdir" "$builddir" || { echo "gpu-check: cannot create $outdir or $builddir" >&2; exit 2; }
outdir=$(cd "$outdir" && pwd)
builddir=$(cd "$builddir" && pwd)
SVP_GOLDEN_DIR=$(sh "$srcdir/tests/golden-dir.sh" "$srcdir")
export SVP_GOLDEN_DIR
peak_bf16=${SVP_PEAK_TFLOPS:-}     # dense bf16/f16 tensor-core peak, TFLOP/s
runs=${SVP_GPU_RUNS:-5}
[ "$mode" = quick ] && runs=${SVP_GPU_RUNS:-3}
md=$outdir/gpu-check.md
yml=$outdir/gpu-check.yaml
done_file=$builddir/gpu-check.done
t_start=$(date +%s)
fail=0

elapsed() { echo $(( $(date +%s) - t_start )); }
log() { echo "gpu-check: [+$(elapsed) s] $*"; }
# flush: the file's data on disk before the next step can be cut off
flush() { sync "$1" 2>/dev/null || sync; }
# result TEXT: one line of the results file, written and flushed now
result() {
    printf '%s\n' "$*" >>"$md"
    flush "$md"
    log "$*"
}
# block FILE: a fenced excerpt of a log in the results file
block() {
    { echo '```'; cat "$1"; echo '```'; } >>"$md"
    flush "$md"
}
# the steps this build directory has finished (for --rest)
is_done() { grep -qx "$1" "$done_file" 2>/dev/null; }
mark_done() { echo "$1" >>"$done_file"; flush "$done_file"; }
# want STEP: whether this run does STEP
want() {
    case $mode in
        all) return 0 ;;
        quick) case $1 in build|test_ops_cuda|unet-bf16|unet-f16) return 0 ;; esac
               return 1 ;;
        rest) [ "$1" = build ] && return 0   # incremental: cheap when done
              is_done "$1" && return 1
              return 0 ;;
    esac
}
finish() {
    result ""
    result "End: $1, $(elapsed) s in all."
    exit "$2"
}

{
    echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M') UTC, mode $mode"
    echo
    echo "Source: $(cd "$srcdir" && git describe --always --dirty 2>/dev/null || cat "$srcdir/deps/source-version" "$srcdir/.tarball-version" 2>/dev/null | head -n 1 || echo unknown)." \
         "Host: $(uname -n), $(nproc 2>/dev/null || echo '?') CPUs." \
         "Each line: the step, its result, the seconds it took."
    echo
} >>"$md"
flush "$md"

# ---- dependencies from deps/, unpacked privately ----
if [ -f "$srcdir/deps/root.tar.xz" ]; then
    t0=$(date +%s)
    root=$srcdir/deps/root
    if [ ! -f "$root/.unpacked" ]; then
        rm -rf "$root" && mkdir -p "$root" &&
        if command -v xz >/dev/null 2>&1; then
            xz -dc "$srcdir/deps/root.tar.xz" | tar -C "$root" -xf -
        else
            python3 -m tarfile -e "$srcdir/deps/root.tar.xz" "$root"
        fi || { result "- deps: FAILED to unpack deps/root.tar.xz (no xz, no python3?)"; finish "failed" 2; }
        touch "$root/.unpacked"
    fi
    multi=$(ls -d "$root"/usr/lib/*-linux-gnu 2>/dev/null | head -n 1)
    triplet=$(basename "$multi")
    # .pc files name prefix=/usr: point them at the private root.  OpenBLAS
    # is found through its own directories (the alternatives links its
    # package scripts would make are not there).  Some libraries (zlib)
    # are under /lib.
    blas=$multi/openblas-pthread
    lib2=$root/lib/$triplet
    export PKG_CONFIG_SYSROOT_DIR="$root"
    export PKG_CONFIG_PATH="$blas/pkgconfig:$multi/pkgconfig:$root/usr/lib/pkgconfig:$root/usr/share/pkgconfig"
    export CPPFLAGS="-I$root/usr/include -I$root/usr/include/$triplet -I$root/usr/include/$triplet/openblas-pthread ${CPPFLAGS:-}"
    export LDFLAGS="-L$blas -L$multi -L$lib2 -Wl,-rpath-link,$multi -Wl,-rpath-link,$lib2 -Wl,-rpath,$blas -Wl,-rpath,$multi -Wl,-rpath,$lib2 ${LDFLAGS:-}"
    export LD_LIBRARY_PATH="$multi:$blas:$lib2:$root/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$root/usr/bin:$PATH"
    result "- deps: deps/root.tar.xz unpacked under deps/root, $(( $(date +%s) - t0 )) s"
fi

# ---- 1. build ----
t0=$(date +%s)
if [ ! -x "$srcdir/configure" ]; then
    # a checkout carries no generated files: deps/autotools.tar.gz holds
    # them (made by `make gpu-bundle`), else autoreconf must be here.
    # Extracted with fresh times (-m), in the order make checks them, so
    # that no rule asks for automake.
    if [ -f "$srcdir/deps/autotools.tar.gz" ]; then
        (cd "$srcdir" && gzip -dc deps/autotools.tar.gz | tar -xmf -)
    else
        (cd "$srcdir" && autoreconf -fi) >"$builddir/autoreconf.log" 2>&1
    fi || { result "- build: FAILED, no configure (no deps/autotools.tar.gz and autoreconf failed)"; finish "failed" 2; }
fi
cd "$builddir" || exit 2
if [ ! -f Makefile ]; then
    "$srcdir/configure" --with-cuda >configure.log 2>&1 || {
        result "- build: FAILED, configure ($(( $(date +%s) - t0 )) s); the end of its log:"
        tail -n 30 configure.log >tail.log; block tail.log
        finish "failed" 2; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
if make -j"$jobs" >make.log 2>&1 &&
   make -j"$jobs" tests/test_ops_cuda tests/golden/conditioning >>make.log 2>&1; then
    cuda=$(sed -n 's/^ *CUDA backend *: *//p' configure.log 2>/dev/null | head -n 1)
    result "- build: ok, CUDA backend ${cuda:-?}, $(( $(date +%s) - t0 )) s (make -j$jobs)"
    mark_done build
else
    result "- build: FAILED, $(( $(date +%s) - t0 )) s; the end of make.log:"
    tail -n 40 make.log >tail.log; block tail.log
    finish "failed" 2
fi

# ---- the device ----
gpu=""
if command -v nvidia-smi >/dev/null 2>&1; then
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version \
              --format=csv,noheader 2>/dev/null | head -n 1)
fi

# ---- 2. test_ops_cuda ----
if [ -z "$gpu" ]; then
    # the binaries load, and the device tests say why they skip
    t0=$(date +%s)
    ./tests/test_ops_cuda --verbose=1 >nodev.log 2>&1
    why=$(grep -m1 -E '^\[SKIP\]' nodev.log | sed 's/^\[SKIP\] [^ ]*: //')
    nskip=$(grep -c -E '^\[SKIP\]' nodev.log)
    syn=$(grep -E 'Synthesis' nodev.log | sed 's/^.*Synthesis: //; s/ *$//')
    result "- test_ops_cuda: loads; $nskip tests skipped, saying: ${why:-(nothing)}; the rest: ${syn:-no synthesis}; $(( $(date +%s) - t0 )) s"
    result "- device: none, nvidia-smi found no GPU: nothing was measured"
    finish "no GPU" 3
fi
gpu_name=$(echo "$gpu" | cut -d, -f1 | sed 's/^ *//; s/ *$//')
result "- device: $gpu"

# the UNet's random weights take a while to write: do it while the tests
# run (CPU and disk, beside the GPU)
model=$builddir/svd-xt-random
if { want unet-bf16 || want unet-f16 || want unet-f32 || want diffusers; } &&
   [ ! -f "$model/unet/.whole" ]; then
    (rm -rf "$model/unet" &&
     ./src/tools/svdtool init --config "$srcdir/etc/models/svd-xt/unet/config.json" \
         --seed 1 --output "$model/unet" >init-unet.log 2>&1 &&
     touch "$model/unet/.whole") &
    init_pid=$!
    init_t0=$(date +%s)
else
    init_pid=""
fi

if want test_ops_cuda; then
    t0=$(date +%s)
    ./tests/test_ops_cuda --tap=tap.log --verbose=1 -j1 >run.log 2>&1
    rc=$?
    pass=$(grep -c '^ok' tap.log 2>/dev/null)
    bad=$(grep -c '^not ok' tap.log 2>/dev/null)
    skip=$(grep -c '^ok.*# SKIP' tap.log 2>/dev/null)
    result "- test_ops_cuda: exit $rc, $pass ok ($skip of them skipped), $bad not ok, $(( $(date +%s) - t0 )) s"
    if [ "$rc" -ne 0 ]; then
        fail=1
        { grep -E '^not ok' tap.log; tail -n 20 run.log; } >tail.log; block tail.log
    else
        mark_done test_ops_cuda
    fi
fi

if [ -n "$init_pid" ]; then
    if wait "$init_pid"; then
        result "- svdtool init of the SVD-XT UNet (random weights, f32): ok, $(( $(date +%s) - init_t0 )) s, overlapped with the tests"
    else
        result "- svdtool init of the SVD-XT UNet: FAILED"
        tail -n 20 init-unet.log >tail.log; block tail.log
        finish "failed" 1
    fi
fi

# ---- 3, 4. one UNet call, SVD-XT size ----
field() { grep -E "^$2:" "$1" 2>/dev/null | head -n 1 | cut -d' ' -f2; }
# the planner's file, rewritten whole from every figure so far
write_yaml() {
    best=""
    best_s=""
    for d in bf16 f16 f32; do
        t=$(field "unet-$d.txt" median_s)
        [ -n "$t" ] || continue
        if [ -z "$best" ] || awk -v a="$t" -v b="$best_s" 'BEGIN {exit !(a < b)}'; then
            best=$d
            best_s=$t
        fi
    done
    {
        echo "# Measured by bench/gpu-check.sh, $(date -u +%Y-%m-%d), on $gpu."
        echo "# For the planner: svdlaunch plan JOB --hardware TABLE --measured THIS"
        for d in bf16 f16 f32; do
            echo "# unet call $d: $(field "unet-$d.txt" median_s) s, arena $(field "unet-$d.txt" arena_reserved_bytes) bytes"
        done
        mem_mib=$(echo "$gpu" | cut -d, -f2 | tr -cd '0-9')
        [ -n "$mem_mib" ] && echo "memory_gb: $(awk -v m="$mem_mib" 'BEGIN {printf "%.1f", m * 1.048576 / 1000}')"
        if [ -n "$best" ]; then
            echo "svd:"
            echo "  source: measured"
            echo "  dtype: $best"
            echo "  reference: {batch: 2, frames: 25, height: 576, width: 1024}"
            echo "  unet_step_s: $(field "unet-$best.txt" median_s)"
        fi
    } >"$yml.tmp" && flush "$yml.tmp" && mv "$yml.tmp" "$yml"
}
peak_opt=""
[ -n "$peak_bf16" ] && peak_opt="-P $peak_bf16"
for dt in bf16 f16 f32; do
    want "unet-$dt" || continue
    t0=$(date +%s)
    # shellcheck disable=SC2086
    ./bench/bench_unet_call -m "$model/unet" -B cuda -d "$dt" -b 2 -f 25 \
        -H 72 -W 128 -s 1 -r "$runs" $peak_opt >"unet-$dt.txt" 2>&1
    rc=$?
    s=$(( $(date +%s) - t0 ))
    if [ "$rc" -eq 3 ]; then
        result "- unet $dt: not available in this build ($(tail -n 1 "unet-$dt.txt")), $s s"
        mark_done "unet-$dt"
    elif [ "$rc" -ne 0 ]; then
        result "- unet $dt: FAILED (exit $rc), $s s"
        tail -n 10 "unet-$dt.txt" >tail.log; block tail.log
        fail=1
    else
        result "- unet $dt (SVD-XT, batch 2, 25 frames, 72x128 latents): median $(field "unet-$dt.txt" median_s) s/call of $runs (min $(field "unet-$dt.txt" min_s), max $(field "unet-$dt.txt" max_s)), load $(field "unet-$dt.txt" load_s) s, $(field "unet-$dt.txt" tflops_achieved) TFLOP/s${peak_opt:+, MFU $(field "unet-$dt.txt" mfu)}, arena $(awk '/^arena_reserved_bytes/ {printf "%.2f", $2 / 1e9}' "unet-$dt.txt") GB; $s s"
        mark_done "unet-$dt"
        write_yaml
    fi
done

# ---- 5. a full image-to-video sample ----
if want sample; then
    t0=$(date +%s)
    # the rest of the model folder beside the UNet: the two other models
    # with random weights, and the configs
    cfgdir=$srcdir/etc/models/svd-xt
    ok=1
    for m in vae image_encoder; do
        [ -f "$model/$m/.whole" ] && continue
        rm -rf "$model/$m"
        ./src/tools/svdtool init --config "$cfgdir/$m/config.json" --seed 1 \
            --output "$model/$m" >"init-$m.log" 2>&1 && touch "$model/$m/.whole" || ok=0
    done
    cp "$cfgdir/model_index.json" "$model/" && mkdir -p "$model/scheduler" "$model/feature_extractor" &&
        cp "$cfgdir/scheduler/scheduler_config.json" "$model/scheduler/" &&
        cp "$cfgdir/feature_extractor/preprocessor_config.json" "$model/feature_extractor/" || ok=0
    if [ "$ok" -eq 0 ]; then
        result "- image to video: FAILED to write the VAE and image encoder (init-*.log), $(( $(date +%s) - t0 )) s"
        fail=1
    else
        cat >i2v.yaml <<YAML
model: {kind: svd, path: '$model'}
device: cuda
steps: 25
samples: 1
video: {inputs: ['$srcdir/etc/demo/input.png'], width: 1024, height: 576, num_frames: 25, decode_chunk_size: 8}
output: {dir: '$builddir/i2v'}
YAML
        rm -rf "$builddir/i2v"
        t1=$(date +%s)
        ./src/tools/svdworker i2v.yaml >i2v.log 2>&1
        rc=$?
        result "- image to video (svdworker, one rank, 25 frames, 576x1024, 25 steps, chunked decode): exit $rc, $(( $(date +%s) - t1 )) s wall ($(( t1 - t0 )) s writing the VAE and image encoder before)"
        if [ "$rc" -eq 0 ]; then
            mark_done sample
        else
            fail=1
            tail -n 10 i2v.log >tail.log; block tail.log
        fi
        # the same sample on a guidance pair (pipeline.guidance_parallel: 2),
        # one GPU per rank: the pair's wall time against the one rank's
        ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
        if [ "$rc" -eq 0 ] && [ "$ngpu" -ge 2 ]; then
            rm -rf "$builddir/i2v-pair"
            t1=$(date +%s)
            "$srcdir/tests/cluster/with-cluster.sh" --timeout 900 -- srun --mpi=pmix -n 2 \
                sh -c 'CUDA_VISIBLE_DEVICES=$SLURM_LOCALID exec "$0" "$@"' \
                ./src/tools/svdworker i2v.yaml --set pipeline.guidance_parallel=2 \
                --set output.dir="$builddir/i2v-pair" >i2v-pair.log 2>&1
            result "- the same sample on a guidance pair (2 ranks, a GPU each, pipeline.guidance_parallel: 2): exit $?, $(( $(date +%s) - t1 )) s wall; per sample: $(grep -o 'sample 0 done in [0-9.]*s' i2v.log i2v-pair.log | tr '\n' ' ')"
        else
            result "- a guidance pair (pipeline.guidance_parallel: 2) sample: not timed: it needs 2 GPUs and one rank's sample to have run; $ngpu GPU(s) visible, the one-rank sample exited $rc"
        fi
    fi
fi

# ---- 6. the hand-off checks ----
for h in handoff frames; do
    want "$h" || continue
    script=$srcdir/bench/gpu-$h.sh
    [ -f "$script" ] || continue
    t0=$(date +%s)
    SVP_TOP_BUILDDIR=$builddir sh "$script" >"$h.txt" 2>&1
    rc=$?
    result "- bench/gpu-$h.sh: exit $rc, $(( $(date +%s) - t0 )) s:"
    block "$h.txt"
    if [ "$rc" -eq 0 ]; then mark_done "$h"; else fail=1; fi
done

# ---- 7. diffusers, same config and weights ----
if want diffusers; then
    t0=$(date +%s)
    py=${PYTHON:-python3}
    if "$py" -c 'import torch' >/dev/null 2>&1; then
        if ! "$py" -c 'import diffusers' >/dev/null 2>&1 &&
           ls "$srcdir"/deps/*.whl >/dev/null 2>&1; then
            export PYTHONPATH="$builddir/pydeps${PYTHONPATH:+:$PYTHONPATH}"
            "$py" -m pip install --no-deps --no-index --target "$builddir/pydeps" \
                "$srcdir"/deps/*.whl >pip.log 2>&1 ||
                log "cannot install the wheels of deps/ (pip.log)"
        fi
        "$py" "$srcdir/bench/diffusers_unet.py" "$model/unet" "$runs" >diffusers.txt 2>&1
        if [ $? -eq 0 ]; then
            result "- diffusers fp16 unet (PyTorch, same config and weights): median $(field diffusers.txt median_s) s/call of $runs, $(( $(date +%s) - t0 )) s"
            mark_done diffusers
        else
            result "- diffusers: FAILED, $(( $(date +%s) - t0 )) s"
            tail -n 5 diffusers.txt >tail.log; block tail.log
            fail=1
        fi
    else
        result "- diffusers: no PyTorch for $py here, not timed"
    fi
fi

result ""
result "TensorRT (Stability's figure for this UNet call, H100 PCIe, quoted): 0.76 s/call."
result "MFU is against ${peak_bf16:-no} TFLOP/s (set SVP_PEAK_TFLOPS); FLOPs are 2 x the counted MACs (svp_unet_macs)."
if [ "$fail" -eq 0 ]; then finish "every step of mode $mode passed on $gpu_name" 0; fi
finish "a step failed (above)" 1

#!/bin/sh
# gpu-check.sh: build the CUDA backend and check it on this machine's GPU.
#
# Run from a source checkout on a machine with an NVIDIA GPU and the CUDA
# toolkit (nvcc, cuBLAS):
#
#     sh bench/gpu-check.sh [BUILD_DIR]        # default BUILD_DIR: _build_gpu
#
# It configures (--with-cuda, so a missing toolkit is an error rather than a
# CPU-only build), builds with make -j, then runs tests/test_ops_cuda: every
# op on the CUDA backend against the CPU backend, and the unet_tiny and
# unet_small forwards against the golden data (found through
# tests/golden-dir.sh: $SVP_GOLDEN_DIR, ../shared/golden or tests/data).  It prints
# the device, the build time, each test's time and the UNet forward times.
# A test that skips (no device visible, no golden data) is reported as such;
# the script fails if any test fails or if no device is visible.
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-"$srcdir/_build_gpu"}
SVP_GOLDEN_DIR=$(sh "$srcdir/tests/golden-dir.sh" "$srcdir")
export SVP_GOLDEN_DIR

if command -v nvidia-smi >/dev/null 2>&1; then
    echo "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total \
                      --format=csv,noheader | head -n 1)"
else
    echo "device: nvidia-smi not found" >&2
fi

start=$(date +%s)
if [ ! -x "$srcdir/configure" ]; then
    (cd "$srcdir" && autoreconf -fi)
fi
mkdir -p "$builddir"
cd "$builddir"
[ -f Makefile ] || "$srcdir/configure" --with-cuda >configure.log
make -j"$(nproc)" >make.log 2>&1 || { tail -n 40 make.log; exit 1; }
make -j"$(nproc)" tests/test_ops_cuda >>make.log 2>&1 || { tail -n 40 make.log; exit 1; }
echo "build: $(( $(date +%s) - start )) s (make -j$(nproc))"

# --tap gives one line per test with its time; --verbose the forward times
./tests/test_ops_cuda --tap=tap.log --verbose=1 -j1 >run.log 2>&1 || status=$?
grep -E '^(ok|not ok)' tap.log
grep -E 'forward on cuda' run.log || true
if grep -q 'no cuda device' tap.log; then
    echo "gpu-check: no cuda device visible, the device tests were skipped" >&2
    exit 1
fi
if [ "${status:-0}" -ne 0 ]; then
    tail -n 40 run.log
    exit 1
fi
echo "gpu-check: all device tests passed"

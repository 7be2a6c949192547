#!/bin/sh
# The CUDA backend is a module opened at run time (src/ops/ops_module.h): a
# CPU run maps no CUDA library and runs with the module absent; a job that
# asks for device: cuda without the module, or without a driver, fails
# saying what is missing (TAP).
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
w=$bld/src/tools/svdworker
t=$bld/src/tools/svdtool
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | tail -20; }
skip() { n=$((n+1)); echo "ok $n - $1 # SKIP $2"; }
# CUDA's own libraries (not libicudata and the like)
cudalibs='lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nvrtc|nvJitLink|nvidia-ml)\.so'
echo "1..7"

bad=
for b in "$w" "$t" "$bld/src/tools/svdlaunch"; do
    ldd "$b" >"$tmp/ldd" 2>&1 || bad="$bad $b(ldd failed)"
    grep -Eq "$cudalibs" "$tmp/ldd" && bad="$bad $b"
done
if [ -z "$bad" ]; then ok "svdworker, svdtool, svdlaunch link no CUDA library"
else echo "links CUDA:$bad" >"$tmp/err"; nok "tools link CUDA libraries"; fi

"$t" init --model-config-dir "$top/etc/models/svd-mini" --seed 3 --output "$tmp/model" >"$tmp/err" 2>&1
cat >"$tmp/i2v.yaml" <<YAML
model: {kind: svd, path: '$tmp/model'}
device: cpu
steps: 2
samples: 1
video: {inputs: ['$top/etc/demo/input.png'], width: 112, height: 64, num_frames: 3, decode_chunk_size: 2}
output: {dir: '$tmp/out'}
YAML
mkdir "$tmp/nomodule"

# a CPU job with the module absent: LD_DEBUG=files names every object the
# loader maps, dlopen'ed ones included; /proc/PID/maps is sampled as it runs
SVP_MODULE_DIR=$tmp/nomodule SVP_THREADS=1 LD_DEBUG=files LD_DEBUG_OUTPUT=$tmp/ld \
    "$w" "$tmp/i2v.yaml" >"$tmp/err" 2>&1 &
pid=$!
: >"$tmp/maps"
while kill -0 $pid 2>/dev/null; do
    cat /proc/$pid/maps >>"$tmp/maps" 2>/dev/null
    sleep 0.05
done
wait $pid; rc=$?
if [ $rc -eq 0 ] && [ -f "$tmp/out/sample_000000/latents.safetensors" ]; then
    ok "a CPU job runs with the CUDA module absent"; else nok "CPU job without the module (rc=$rc)"; fi
if [ -s "$tmp/maps" ] && grep -q svdworker "$tmp/maps" && ! grep -Eq "$cudalibs|svdpipe_cuda" "$tmp/maps"; then
    ok "/proc/PID/maps of a CPU run shows no CUDA library"
else
    grep -E "$cudalibs|svdpipe_cuda" "$tmp/maps" | sort -u >"$tmp/err"; nok "CPU run maps CUDA (or maps not read)"
fi
if cat "$tmp"/ld.* 2>/dev/null | grep -q "file=" && ! cat "$tmp"/ld.* | grep -Eq "file=[^ ]*($cudalibs|svdpipe_cuda)"; then
    ok "the loader opened no CUDA library in a CPU run (LD_DEBUG=files)"
else
    cat "$tmp"/ld.* 2>/dev/null | grep -E "$cudalibs|svdpipe_cuda" | head >"$tmp/err"; nok "loader opened CUDA in a CPU run"
fi

# device: cuda with no module: a clear failure naming what and where
SVP_MODULE_DIR=$tmp/nomodule SVP_THREADS=1 "$w" "$tmp/i2v.yaml" --set device=cuda \
    --set output.dir="$tmp/out2" >"$tmp/err" 2>&1; rc=$?
if grep -q '^#define HAVE_CUDA 1' "$bld/config.h"; then
    want="cuda backend module not found (looked for svdpipe_cuda.so in $tmp/nomodule"
else
    want="ops backend 'cuda' is not available in this build"
fi
if [ $rc -ne 0 ] && grep -qF "$want" "$tmp/err" &&
   [ -z "$(find "$tmp/out2" -name 'sample_*' 2>/dev/null)" ]; then
    ok "device: cuda without the module fails, naming the module and where it looked (rc=$rc)"
else nok "device: cuda without the module (rc=$rc)"; fi

# a file that is not a module is refused, not run
echo "not a module" >"$tmp/nomodule/svdpipe_cuda.so"
SVP_MODULE_DIR=$tmp/nomodule SVP_THREADS=1 "$w" "$tmp/i2v.yaml" --set device=cuda \
    --set output.dir="$tmp/out3" >"$tmp/err" 2>&1; rc=$?
if grep -q '^#define HAVE_CUDA 1' "$bld/config.h"; then
    want="cannot load the cuda backend module $tmp/nomodule/svdpipe_cuda.so"
else
    want="ops backend 'cuda' is not available in this build"
fi
if [ $rc -ne 0 ] && grep -qF "$want" "$tmp/err"; then
    ok "a broken module file is named with the loader's reason (rc=$rc)"
else nok "broken module (rc=$rc)"; fi

# the built module on a node without a GPU or driver: named, no CPU fallback
if ! grep -q '^#define HAVE_CUDA 1' "$bld/config.h"; then
    skip "device: cuda without a driver" "built without the CUDA backend"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    skip "device: cuda without a driver" "a GPU is present"
else
    SVP_THREADS=1 "$w" "$tmp/i2v.yaml" --set device=cuda --set output.dir="$tmp/out4" >"$tmp/err" 2>&1; rc=$?
    if [ $rc -ne 0 ] && grep -q "no usable cuda driver or device" "$tmp/err" &&
       [ -z "$(find "$tmp/out4" -name 'sample_*' 2>/dev/null)" ]; then
        ok "device: cuda on a node without a GPU fails clearly, no CPU fallback (rc=$rc)"
    else nok "device: cuda without a driver (rc=$rc)"; fi
fi

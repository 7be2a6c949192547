#!/bin/sh
# Builds svdpipe (installing what it needs) and runs the built-in default job.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SVP_BUILD_DIR:-$top/_build}
"$top/contrib/bootstrap.sh"
out=${SVP_DEMO_DIR:-$top/run/demo}
mkdir -p "$out"
echo "demo: running the built-in default job (dummy simulator model, one process)"
"$build/src/tools/svdworker" --set output.dir="$out" 2>&1 | tee "$out/worker.log"
echo
echo "demo: outputs in $out (final latents as safetensors), log in $out/worker.log"

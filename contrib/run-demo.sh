#!/bin/sh
# The built-in demo, from a fresh Debian 12 machine: installs what svdpipe
# needs, builds it, makes a small random-weight SVD-architecture model,
# starts a throwaway local Slurm cluster, and turns etc/demo/input.png into
# MP4 videos on 4 ranks through the job script svdlaunch renders.
#
# Idempotent: the build and the model are reused; every run writes a fresh
# run/demo/out.  SVP_DEMO_DIR moves run/demo elsewhere.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SVP_BUILD_DIR:-$top/_build}
run=${SVP_DEMO_DIR:-$top/run/demo}
"$top/contrib/bootstrap.sh"

tools=$build/src/tools
mkdir -p "$run"
if [ ! -f "$run/model/model_index.json" ]; then
    echo "demo: writing the svd-mini model (random weights) to $run/model"
    "$tools/svdtool" init --model-config-dir "$top/etc/models/svd-mini" --seed 1 \
        --output "$run/model"
fi
# job ids start at 1 on every new local cluster: no earlier job's log
rm -rf "$run/out" "$run"/demo-*.log

sets="--set model.path=$run/model --set video.inputs=$top/etc/demo/input.png
      --set output.dir=$run/out --set cluster.worker=$tools/svdworker
      --set cluster.output=$run/demo-%j.log"
# shellcheck disable=SC2086
"$tools/svdlaunch" render "$top/etc/demo/demo.yaml" $sets -o "$run/demo.sbatch"
echo "demo: job script $run/demo.sbatch; starting a local Slurm cluster"

# progress while the job runs, and back as soon as it ends
# shellcheck disable=SC2086
samples=$("$tools/svdworker" "$top/etc/demo/demo.yaml" $sets --check |
          sed -n 's/.* ok ([0-9]* steps, \([0-9]*\) samples*.*/\1/p')
# shellcheck disable=SC2016
"$top/tests/cluster/with-cluster.sh" --cpus 8 --timeout 1200 -- \
    sh -c 'cd "$1" && "$2" "$1/demo.sbatch" "$1/demo-%j.log" "$3"' sh "$run" \
    "$top/contrib/sbatch-follow.sh" "$samples" || {
    status=$?
    echo "demo: the job failed (exit $status); its log:" >&2
    cat "$run"/demo-*.log >&2 2>/dev/null
    exit "$status"
}

log=$(ls -t "$run"/demo-*.log | head -n 1)
grep -E "summary|job: " "$log" || true
echo
# the job-level view: what an array of such jobs would show while it runs
"$tools/svdlaunch" status "$run/out"
echo
echo "demo: done."
for d in "$run"/out/sample_*; do
    echo "  $d/video.mp4  ($(ls "$d" | grep -c '^frame_') PNG frames, sample.json)"
done
echo "  log: $log"
echo
echo "Real videos need the real weights and a GPU: an SVD-XT sample (1024x576,"
echo "25 frames, 28 steps) takes hours on this CPU backend.  See README.md, 'Real"
echo "weights': get the diffusers folder, 'svdtool check-model DIR', then set"
echo "model.path, video.inputs and device: cuda in a copy of"
echo "  $top/etc/svd_7gpu.yaml   (or etc/svd_2x4gpu.yaml for 2 nodes x 4 GPUs)"
echo "and run 'svdlaunch submit' with it on the GPU cluster."
# the run's report: timeline, utilisation, planner against measured, MFU
echo
if "$tools/svdtool" report "$run/out" -o "$run/report" >/dev/null; then
    echo "demo: report in $run/report/report.html (open it in a browser; report.md beside it)"
else
    echo "demo: could not write the report (see above)" >&2
fi

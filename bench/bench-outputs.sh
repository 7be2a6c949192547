#!/bin/bash
# Outputs at scale: the same simulator job (the dummy model, cost: sleep)
# written as files and as WebDataset shards, one process each, and for each
# format the files it created, their bytes, the job's samples/s and its
# pipeline efficiency (samples/s against the stand-ins' ideal
# 1 / (steps * step_ms + encode_ms + decode_ms)); then `svdlaunch status`'s
# wall time on each output.  Targets (100,000 samples, 1000 per shard):
# webdataset at most samples / 1000 + 20 files, its efficiency within 1 % of
# files', status under 2 s.
#
#   make bench-outputs [N=100000] [PER=1000] [STEP_MS=1] [STEPS=2]
set -u
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
launch=$bld/src/tools/svdlaunch
N=${N:-100000}
PER=${PER:-1000}
STEP_MS=${STEP_MS:-1}
STEPS=${STEPS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svp-outputs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/job.yaml" <<YAML
name: outputs
model: {kind: dummy, dummy: {cost: sleep, step_ms: $STEP_MS, encode_ms: 0, decode_ms: 0}}
steps: $STEPS
samples: $N
latent_shape: [1, 2, 4, 8, 8]
YAML
ideal=$(awk -v t="$STEPS" -v s="$STEP_MS" 'BEGIN { printf "%.3f", 1000 / (t * s) }')
echo "== $N samples of the simulator, $STEPS steps of $STEP_MS ms (ideal $ideal samples/s), one process"

# run FORMAT: prints "files bytes rate efficiency status_s"
run() {
    local fmt=$1 out=$tmp/$1 rate files bytes t0 t1
    SVP_THREADS=1 "$w" "$tmp/job.yaml" --set output.dir="$out" --set output.format="$fmt" \
        --set output.samples_per_shard="$PER" >"$tmp/$fmt.log" 2>&1 || {
        echo "the $fmt run failed:" >&2; tail -n 20 "$tmp/$fmt.log" >&2; return 1; }
    rate=$(sed -n 's/.* job: \([0-9.]*\) samples\/s.*/\1/p' "$tmp/$fmt.log" | tail -n 1)
    files=$(find "$out" -type f | wc -l)
    bytes=$(du -sb "$out" | cut -f1)
    t0=$(date +%s.%N)
    "$launch" status "$out" >"$tmp/$fmt.status" 2>&1
    t1=$(date +%s.%N)
    awk -v f="$files" -v b="$bytes" -v r="$rate" -v i="$ideal" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "%d %d %.3f %.4f %.3f\n", f, b, r, r / i, t1 - t0 }'
}

files_line=$(run files) || exit 1
wds_line=$(run webdataset) || exit 1
printf "%-11s %10s %14s %12s %11s %9s\n" format files bytes samples/s efficiency status_s
for l in "files $files_line" "webdataset $wds_line"; do
    set -- $l
    printf "%-11s %10d %14d %12.3f %11.4f %9.3f\n" "$1" "$2" "$3" "$4" "$5" "$6"
done
set -- $files_line
fe=$4
set -- $wds_line
awk -v n="$N" -v per="$PER" -v f="$1" -v we="$4" -v fe="$fe" -v st="$5" 'BEGIN {
    max = int(n / per) + 20
    printf "webdataset files %d (target <= %d): %s\n", f, max, (f <= max) ? "met" : "MISSED"
    d = (we - fe) / fe
    printf "webdataset efficiency %.4f against files %.4f (%+.2f %%, target within 1 %%): %s\n",
           we, fe, 100 * d, (d >= -0.01) ? "met" : "MISSED"
    printf "svdlaunch status on the shards %.3f s (target < 2 s): %s\n", st,
           (st < 2) ? "met" : "MISSED"
}'

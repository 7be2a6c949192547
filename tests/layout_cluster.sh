#!/bin/bash
# Layouts (pipeline.stages) under a real local Slurm cluster of 3 nodes:
# every valid layout of 6 ranks gives outputs bit-identical to one process,
# with the dummy and the tiny SVD model (whose ranks run 1 thread each, its
# one process 2, and which also runs as 3 ranks); a bad layout is named before
# anything starts.  Runs inside with-cluster.sh --nodes 3; prints TAP.
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d /tmp/svp-layout.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok()  { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 25; }

# 12 steps on 6 ranks: S = 1, 2, 3 and 6 are valid (4 does not divide 6)
cat >"$tmp/job.yaml" <<YAML
steps: 12
samples: 11
seed: 77
latent_shape: [1, 3, 4, 6, 8]
comm: {deadline: 30, transport: 'posix,self'}
log: {level: info}
YAML

same_outputs() {  # ref dir, other dir, count
    local i f
    for i in $(seq 0 $(($3 - 1))); do
        f=$(printf 'sample_%06d.safetensors' "$i")
        cmp -s "$1/$f" "$2/$f" || return 1
    done
    [ "$(ls "$2" | grep -c "^sample_")" -eq "$3" ]
}

run6() {  # name, yaml, srun layout args, --set args...
    local name=$1 yaml=$2 lay=$3
    shift 3
    timeout -k 5 150 srun --mpi=pmix --kill-on-bad-exit=1 -W 120 $lay -O "$w" "$yaml" \
        --set output.dir="$tmp/$name" "$@" >"$tmp/$name.log" 2>&1
}

echo "1..15"
"$w" "$tmp/job.yaml" --set output.dir="$tmp/ref" >"$tmp/ref.log" 2>&1 || {
    echo "Bail out! the one-process reference run failed"; cat "$tmp/ref.log"; exit 1; }

for S in 1 2 3 6; do
    G=$((6 / S))
    if run6 "s$S" "$tmp/job.yaml" "-n 6" --set pipeline.stages=$S &&
       same_outputs "$tmp/ref" "$tmp/s$S" 11 &&
       grep -q "$G pipelines\? x $S stages\? (6 ranks), 12 steps: $((12 / S)) per stage" "$tmp/s$S.log" &&
       grep -q "job: [0-9.]* samples/s" "$tmp/s$S.log"; then
        ok "dummy, 6 ranks, S=$S ($G x $S): bit-identical to one process, layout logged"
    else
        nok "dummy, 6 ranks, S=$S" "$tmp/s$S.log"
    fi
done

if run6 ends2 "$tmp/job.yaml" "-n 6" --set pipeline.stages=2 --set pipeline.placement=ends &&
   same_outputs "$tmp/ref" "$tmp/ends2" 11; then
    ok "dummy, 6 ranks, S=2, placement ends: bit-identical"
else
    nok "dummy, 6 ranks, S=2, placement ends" "$tmp/ends2.log"
fi

# with traces: the run's record and its report speak of 2 pipelines x 3
# stages (the planner's figures per pipeline, each rank's own steps)
if run6 n3s3 "$tmp/job.yaml" "-N 3 --ntasks-per-node=2" --set pipeline.stages=3 \
       --set log.trace="$tmp/n3s3.trace" &&
   same_outputs "$tmp/ref" "$tmp/n3s3" 11 &&
   jq -e '.layout.stages == 3 and .layout.groups == 2 and
          (.layout.ranges | map(.[0])) == [0, 4, 8, 0, 4, 8]' "$tmp/n3s3/run.json" \
       >/dev/null 2>&1 &&
   "$bld/src/tools/svdtool" report "$tmp/n3s3" -o "$tmp/n3s3.report" >>"$tmp/n3s3.log" 2>&1 &&
   jq -e '.plan.stages == 3 and .plan.groups == 2 and (.plan.ranks | length) == 6 and
          ([.plan.ranks[].predicted_busy_s] | all(. > 0))' "$tmp/n3s3.report/report.json" \
       >/dev/null 2>&1; then
    ok "dummy, 3 nodes x 2 ranks, S=3: bit-identical; run.json and the report show 2 x 3"
else
    nok "dummy, 3 nodes x 2 ranks, S=3" "$tmp/n3s3.log"
fi

# a bad layout: W, S, G, T and the valid choices named; nothing runs; exit 2
run6 bad "$tmp/job.yaml" "-n 6" --set pipeline.stages=4
rc=$?
if [ $rc -ne 0 ] && grep -q "S=4 does not fit W=6 ranks (G=W/S=1.5) and T=12 steps: .*valid S: 1, 2, 3, 6" "$tmp/bad.log" &&
   [ ! -e "$tmp/bad" ]; then
    ok "S=4 on 6 ranks: named before anything starts"
else
    nok "S=4 on 6 ranks (rc=$rc)" "$tmp/bad.log"
fi
run6 bad2 "$tmp/job.yaml" "-n 6" --set pipeline.stages=6 --set steps=9
rc=$?
if [ $rc -ne 0 ] && grep -q "S=6 does not fit W=6 ranks (G=W/S=1) and T=9 steps: T must divide by S; valid S: 1, 3 (nearest: S=3, G=2" "$tmp/bad2.log"; then
    ok "S=6 with T=9: named with the nearest valid S"
else
    nok "S=6 with T=9 (rc=$rc)" "$tmp/bad2.log"
fi

# pipeline.stages: auto, resolved by render, the script run by sbatch --wait
mkdir -p "$tmp/sb"
# (render checks that the worker it names is on PATH, as on a real cluster)
if PATH="$bld/src/tools:$PATH" "$bld/src/tools/svdlaunch" render "$tmp/job.yaml" -o "$tmp/sb/auto.sh" \
       --set cluster.nodes=3 --set cluster.ranks_per_node=2 --set pipeline.stages=auto \
       --set output.dir="$tmp/auto" >"$tmp/auto.log" 2>&1 &&
   grep -q "^# pipeline.stages: auto -> 1 (6 pipelines x 1 stage)" "$tmp/sb/auto.sh" &&
   (cd "$tmp/sb" && PATH="$bld/src/tools:$PATH" timeout -k 5 120 \
        sbatch --wait auto.sh >>"$tmp/auto.log" 2>&1) &&
   same_outputs "$tmp/ref" "$tmp/auto" 11 &&
   grep -q "6 pipelines x 1 stage (6 ranks)" "$tmp"/sb/slurm-*.out; then
    ok "pipeline.stages: auto: render chose 6 x 1, the script ran it, bit-identical"
else
    cat "$tmp"/sb/*.out "$tmp/sb/auto.sh" >>"$tmp/auto.log" 2>/dev/null
    nok "pipeline.stages: auto through render and sbatch" "$tmp/auto.log"
fi

# a rank killed in pipeline 1 of 2: the whole job ends, the log names the
# pipeline of the lost rank
rank_pid() {  # rank, output dir
    local pid
    for pid in $(pgrep -f "svdworker .*output.dir=$2"); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$1"; then
            echo "$pid"; return 0
        fi
    done
    return 1
}
timeout -k 5 60 srun --mpi=pmix --kill-on-bad-exit=1 -W 30 -n 6 -O "$w" "$tmp/job.yaml" \
    --set model.dummy.cost=sleep --set model.dummy.step_ms=100 --set samples=40 \
    --set comm.deadline=4 --set pipeline.stages=3 --set output.dir="$tmp/kill" \
    >"$tmp/kill.log" 2>&1 &
srun_pid=$!
pid=""
for _ in $(seq 50); do pid=$(rank_pid 4 "$tmp/kill") && break; sleep 0.1; done
sleep 1.5
t0=$(date +%s.%N)
[ -n "$pid" ] && kill -9 "$pid"
wait "$srun_pid"; rc=$?
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
if [ -n "$pid" ] && [ $rc -ne 0 ] && awk -v d="$dt" 'BEGIN { exit !(d < 9) }' &&
   grep -q "rank 4 of pipeline 1 (ranks 3-5) is gone" "$tmp/kill.log"; then
    ok "rank 4 killed (S=3): the job ended in ${dt}s, the lost rank's pipeline named"
else
    nok "rank 4 killed (S=3; pid '$pid', rc=$rc, ${dt}s)" "$tmp/kill.log"
fi

# the tiny SVD model (golden pipeline_tiny): 6 steps, 6 ranks, every layout
g=${SVP_GOLDEN_DIR:-}/pipeline_tiny
if [ -n "${SVP_GOLDEN_DIR:-}" ] && [ -r "$g/pipeline.safetensors" ]; then
    "$bld/tests/golden/conditioning" "$g/pipeline.safetensors" "$tmp/cond.safetensors"
    cat >"$tmp/svd.yaml" <<YAML
model: {kind: svd, path: '$g', conditioning: '$tmp/cond.safetensors'}
steps: 6
samples: 3
video: {width: 48, height: 32, num_frames: 3, fps: 7, motion_bucket_id: 127,
        noise_aug_strength: 0.02, min_guidance: 1.0, max_guidance: 3.0,
        decode_chunk_size: 2}
comm: {deadline: 90, transport: 'posix,self'}
log: {level: warn}
YAML
    # the reference is one process of 2 threads, every rank has 1: the bits
    # depend on neither the layout nor the thread count
    export SVP_THREADS=1 OMP_WAIT_POLICY=passive
    SVP_THREADS=2 "$w" "$tmp/svd.yaml" --set output.dir="$tmp/svd1" >"$tmp/svd1.log" 2>&1
    for S in 1 2 3 6 3r; do
        case $S in
        3r) run6 "svd$S" "$tmp/svd.yaml" "-n 3" --set pipeline.stages=3 ;;
        *)  run6 "svd$S" "$tmp/svd.yaml" "-n 6" --set pipeline.stages=$S ;;
        esac
        good=1
        for i in 0 1 2; do
            d=$(printf 'sample_%06d' "$i")
            cmp -s "$tmp/svd1/$d/latents.safetensors" "$tmp/svd$S/$d/latents.safetensors" &&
                cmp -s "$tmp/svd1/$d/frame_0002.png" "$tmp/svd$S/$d/frame_0002.png" || good=0
        done
        if [ $good -eq 1 ]; then
            ok "svd pipeline_tiny, S=${S%r}, $([ "$S" = 3r ] && echo 3 || echo 6) ranks of 1 thread: latents and frames bit-identical to one process of 2 threads"
        else
            nok "svd pipeline_tiny, S=$S" "$tmp/svd$S.log"
        fi
    done
else
    for S in 1 2 3 6 3r; do ok "svd pipeline_tiny S=$S # SKIP no golden data"; done
fi

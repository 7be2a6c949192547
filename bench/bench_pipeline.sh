#!/bin/bash
# Pipeline benchmarks with fixed-wall-time stand-ins (the dummy model with
# cost: sleep): a step, an encode and a decode take a set wall time and leave
# the CPU free, so a 2-core machine can stand in for W GPUs.
#
#  1. efficiency: W=7, 20 samples, 4 steps per rank: measured makespan
#     against the ideal (N + W - 1) * k * t; target >= 0.95.
#  2. balance: decode = 4 steps (SVD-XT on an H100: 3.4 s vs 0.8 s), encode
#     small; W-rank throughput against W x one rank doing everything, for
#     placement ends and spread; target >= 0.9 in steady state (the rate
#     between the first and the last completed sample; overall, fill and
#     drain included, is printed beside it).
#  3. the planner: `svdlaunch plan` predicted makespan against measured, for
#     several (W, N, steps); target within 10 % from the spec's figures, and
#     within 1 % from the run's own task times (the means of its traced
#     steps, encodes and decodes, outputs written included, each up to the
#     rank's next event so that the executor's own work between tasks counts,
#     given to the planner as the stand-ins' times): what is then left is the schedule's,
#     not the stand-ins' (a sleep overshoots by a machine-dependent amount).
#     Each configuration runs 3 times: measured is the median makespan, the
#     task times are the means over the 3 runs.  (One run is not enough on
#     a shared 2-core machine: a rank stalled for 5-15 ms now and then, and
#     a stall on the critical path only ever lengthens the run; one run in
#     four came out 2-3 % long that way, the next ones within 1 %.)
#  4. layouts (pipeline.stages): W=6, T=12; S = 1 (replicas), S = W (one
#     pipeline) and the planner's choice, for a short job (one sample per
#     rank: replicas win) and a long one (the difference shrinks); measured
#     makespan against the planner's; target within 10 % (1 % from the
#     run's own task times, as in 3; median of 3 runs, as in 3).
#  5. latency: one sample, T=12, on one rank against a guidance pair
#     (pipeline.guidance_parallel: 2, half a step each plus the exchange):
#     the sample's wall time measured and predicted (the planner's first
#     outputs); then bench_pair, a step of the SVD UNet's topology
#     (unet_small) at one thread per rank, the pair against one rank.
#
# Runs inside tests/cluster/with-cluster.sh (make bench-pipeline).  With
# SVP_BENCH_REPORT=DIR every run also leaves its report (svdtool report) in
# DIR/NAME/report.html.
set -u
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
launch=$bld/src/tools/svdlaunch
tmp=$(mktemp -d /tmp/svp-bench.XXXXXX)
if [ -n "${SVP_BENCH_REPORT:-}" ]; then
    mkdir -p "$SVP_BENCH_REPORT" && SVP_BENCH_REPORT=$(cd "$SVP_BENCH_REPORT" && pwd) || exit 1
fi
trap 'rm -rf "$tmp"' EXIT

# seconds of day from a log line's ISO timestamp
ts_awk='function ts(s) { split(substr(s, 12, 12), a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }'

# run NAME W N T STEP_MS ENC_MS DEC_MS PLACEMENT [STAGES [PAIRS]]: prints
# "makespan steady_rate"
run() {
    local name=$1 W=$2 N=$3 T=$4 t=$5 e=$6 d=$7 p=$8 S=${9:-0} C=${10:-1}
    cat >"$tmp/$name.yaml" <<YAML
name: $name
model: {kind: dummy, dummy: {cost: sleep, step_ms: $t, encode_ms: $e, decode_ms: $d}}
steps: $T
samples: $N
latent_shape: [1, 4, 4, 8, 8]
comm: {deadline: 60, transport: 'posix,self', inflight: 2}
pipeline: {placement: $p, stages: $S, guidance_parallel: $C}
output: {dir: '$tmp/$name.out'}
cluster: {nodes: 1, ranks_per_node: $W}
YAML
    # the trace records the task times in memory (no I/O while it runs)
    [ -n "${SVP_BENCH_REPORT:-}${COSTS:-}" ] && echo "log: {trace: '$tmp/$name.trace'}" >>"$tmp/$name.yaml"
    [ -n "${DRY:-}" ] && return   # the spec only
    if [ "$W" -eq 1 ]; then
        "$w" "$tmp/$name.yaml" >"$tmp/$name.log" 2>&1
    else
        timeout -k 5 600 srun --mpi=pmix --kill-on-bad-exit=1 -W 120 -n "$W" -O \
            "$w" "$tmp/$name.yaml" >"$tmp/$name.log" 2>&1
    fi || { echo "run $name failed:" >&2; tail -20 "$tmp/$name.log" >&2; echo "nan nan"; return; }
    if [ -n "${SVP_BENCH_REPORT:-}" ]; then
        "$bld/src/tools/svdtool" report "$tmp/$name.out" -o "$SVP_BENCH_REPORT/$name" \
            >/dev/null || echo "bench: no report for $name" >&2
    fi
    # makespan: the longest rank's wall time (ranks start together after the
    # communication fence); steady rate: samples finished per second between
    # the first and the last completion
    awk "$ts_awk"'
        / summary: / { for (i = 1; i <= NF; ++i) if ($i == "in") { v = $(i + 1); sub("s:", "", v); if (v + 0 > m) m = v + 0 } }
        / sample [0-9]+ done in / { t = ts($1); n++; if (first == "" || t < first) first = t; if (t > last) last = t }
        END { printf "%.3f %.3f\n", m, (n > 1 && last > first) ? (n - 1) / (last - first) : 0 }' "$tmp/$name.log"
}

# repeat R NAME ARGS...: run R times (NAME.1 .. NAME.R) and print the
# median makespan: a 2-core machine shared with others stalls a rank now and
# then for several ms, and a stall on the critical path only ever adds
repeat() {
    local r=$1 name=$2 k
    shift 2
    for k in $(seq 1 "$r"); do
        run "$name.$k" "$@"
    done | sort -g | awk '{ m[NR] = $1 } END { printf "%.3f\n", (NR % 2) ? m[(NR + 1) / 2] : (m[NR / 2] + m[NR / 2 + 1]) / 2 }'
}

# costs NAME: the runs' mean task times from their traces (NAME's, or those
# of repeat's NAME.1 ..), as --set options for the planner.  A task's time
# runs from its start to the start of its rank's next event (or to its end
# when last): what the executor does between tasks (a send, a receive
# posted, the output's rename) is the task's, as it is on the rank.
costs() {
    cat "$tmp/$1".trace*.json "$tmp/$1".[0-9]*.trace*.json 2>/dev/null | jq -rs '
        [.[] | [.traceEvents[] | select(.ph == "X" and .name != "run")] | sort_by(.ts) |
         . as $e | range(0; length) | . as $i | $e[$i] |
         {name, d: (if $i + 1 < ($e | length) then
                        ([.dur, $e[$i + 1].ts - .ts] | max) else .dur end)}] as $t |
        {step: "step_ms", begin: "encode_ms", finish: "decode_ms"} | to_entries[] |
        .key as $k | .value as $v | [$t[] | select(.name == $k) | .d] |
        select(length > 0) | "--set model.dummy.\($v)=\(add / length / 1000)"'
}

plan() {  # NAME [--set ...]: the planner's makespan for the same spec
    "$launch" plan "$tmp/$1.yaml" "${@:2}" 2>/dev/null |
        awk '/^pipeline \(placement/ { for (i = 1; i <= NF; ++i) if ($i == "makespan") print $(i + 1) }
             /^one GPU/ && !seen { }' | head -1
}

echo "== 1. pipeline efficiency (fixed 50 ms step, W=7, N=20, k=4 steps per rank)"
read -r m _ < <(run eff 7 20 28 50 0 0 ends)
ideal=$(awk 'BEGIN { printf "%.3f", (20 + 7 - 1) * 4 * 0.050 }')
awk -v m="$m" -v i="$ideal" 'BEGIN {
    printf "measured makespan %.3f s, ideal (N+W-1)*k*t = %.3f s, efficiency %.3f (target >= 0.95): %s\n",
           m, i, i / m, (i / m >= 0.95) ? "met" : "NOT met" }'

echo
echo "== 2. encode/decode balance (step 50 ms, encode 10 ms, decode 200 ms = 4 steps; T=28, W=7, N=42)"
read -r m1 r1 < <(run one 1 7 28 50 10 200 ends)
single=$(awk -v m="$m1" 'BEGIN { printf "%.4f", 7 / m }')
printf 'one rank doing everything: %s samples/s; x7 = %s samples/s\n' "$single" \
    "$(awk -v s="$single" 'BEGIN { printf "%.4f", 7 * s }')"
for p in ends spread; do
    read -r m r < <(run "bal_$p" 7 42 28 50 10 200 "$p")
    awk -v p="$p" -v m="$m" -v r="$r" -v s="$single" 'BEGIN {
        e = r / (7 * s)
        if (p == "spread") note = (e >= 0.9) ? ", target >= 0.9: met" : ", target >= 0.9: NOT met"
        else note = ", the last rank decodes everything: why spread is the default"
        printf "placement %-6s makespan %.3f s: overall %.4f samples/s (%.3f of 7x one rank), steady %.4f samples/s (%.3f%s)\n",
               p, m, 42 / m, 42 / m / (7 * s), r, e, note }'
done

echo
echo "== 3. planner: predicted vs measured makespan (target within 10 %; from the run's task times, 1 %)"
printf '%-22s %3s %4s %5s %8s %10s %7s %10s %7s %10s\n' config W N steps placement predicted error \
    "from-run" error measured
for cfg in "p1 2 10 8 40 10 80 ends" "p2 4 16 8 30 10 60 spread" "p3 4 12 16 20 0 80 ends" \
           "p4 7 14 28 20 10 80 spread" "p5 3 9 12 40 20 120 spread"; do
    set -- $cfg
    m=$(COSTS=1 repeat 3 "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8")
    pr=$(plan "$1.1")
    pl=$(plan "$1.1" $(costs "$1"))
    awk -v c="$1 t=$5 e=$6 d=$7" -v W="$2" -v N="$3" -v T="$4" -v p="$8" -v pr="$pr" -v pl="$pl" -v m="$m" 'BEGIN {
        e = 100 * (m - pl) / pl
        printf "%-22s %3d %4d %5d %8s %9.3fs %+6.1f%% %9.3fs %+6.1f%% %9.3fs%s\n", c, W, N, T, p, pr,
               100 * (m - pr) / pr, pl, e, m, (e <= 1 && e >= -1) ? "" : "  NOT within 1%" }'
done

echo
echo "== 4. layouts: W=6, T=12, step 40 ms, encode 10 ms, decode 80 ms, placement spread"
layout_plan() {  # NAME S [--set ...]: the planner's makespan for S, and its recommendation
    "$launch" plan "$tmp/$1.yaml" --json "${@:3}" 2>/dev/null |
        jq -r --argjson S "$2" '"\(.layouts[] | select(.stages == $S and .pairs == 1) |
                                   .makespan_s) \(.recommended_stages)"'
}
printf '%-6s %4s %3s %10s %7s %10s %7s %10s\n' job N S predicted error "from-run" error measured
for job in "short 6" "long 48"; do
    set -- $job
    name=$1 N=$2
    # the recommendation, from a plan of the job as it stands
    DRY=1 run "l_$name" 6 "$N" 12 40 10 80 spread 6
    read -r _ rec < <(layout_plan "l_$name" 6)
    for S in $(printf '%s\n' 1 6 "$rec" | awk '!seen[$1]++'); do
        m=$(COSTS=1 repeat 3 "l_${name}_$S" 6 "$N" 12 40 10 80 spread "$S")
        read -r pr _ < <(layout_plan "l_${name}_$S.1" "$S")
        read -r pl _ < <(layout_plan "l_${name}_$S.1" "$S" $(costs "l_${name}_$S"))
        awk -v j="$name" -v N="$N" -v S="$S" -v r="$rec" -v pr="$pr" -v pl="$pl" -v m="$m" 'BEGIN {
            e = 100 * (m - pr) / pr; el = 100 * (m - pl) / pl
            printf "%-6s %4d %3d %9.3fs %+6.1f%% %9.3fs %+6.1f%% %9.3fs%s%s%s\n", j, N, S, pr, e, pl, el,
                   m, (S == r) ? "  (recommended)" : "",
                   (e <= 10 && e >= -10) ? "" : "  NOT within 10%",
                   (el <= 1 && el >= -1) ? "" : "  NOT within 1% from the run" }'
    done
done

echo
echo "== 5. latency: one sample, T=12, step 40 ms, encode 10 ms, decode 80 ms"
printf '%-16s %10s %10s %7s\n' layout predicted measured error
for C in 1 2; do
    read -r m _ < <(run "lat$C" "$C" 1 12 40 10 80 spread 1 "$C")
    pr=$("$launch" plan "$tmp/lat$C.yaml" --json 2>/dev/null |
         jq -r --argjson C "$C" '.layouts[] | select(.stages == 1 and .pairs == $C) | .first_out_s')
    awk -v C="$C" -v pr="$pr" -v m="$m" 'BEGIN {
        printf "%-16s %9.3fs %9.3fs %+6.1f%%\n", (C == 1) ? "one rank" : "a pair (2 ranks)",
               pr, m, 100 * (m - pr) / pr }'
    [ "$C" -eq 1 ] && m1=$m
done
awk -v a="$m1" -v b="$m" 'BEGIN { printf "the pair takes %.2fx one rank'"'"'s wall time for the sample\n", b / a }'
if [ -x "$bld/bench/bench_pair" ]; then
    SVP_GOLDEN_DIR=$(sh "${SVP_TOP_SRCDIR:?}/tests/golden-dir.sh" "$SVP_TOP_SRCDIR") \
    SVP_THREADS=1 OMP_WAIT_POLICY=passive timeout -k 5 300 srun --mpi=pmix \
        --kill-on-bad-exit=1 -n 2 "$bld/bench/bench_pair" -r 7 2>&1 | grep -v "^srun"
fi

#!/bin/bash
# gpu-handoff.sh: hand-off of device frames between 2 ranks on one GPU.
#
#     bench/gpu-handoff.sh [BUILD_DIR]     # default: $SVP_TOP_BUILDDIR, else _build_gpu
#
# Two ranks under srun (a throwaway local Slurm cluster when none is set up)
# exchange frames in device memory with bench_comm --device cuda:
#   - gpu_direct on: UCX moves CUDA memory (cuda_ipc between two processes on
#     the same GPU); the script fails if the path is not "device";
#   - gpu_direct off: staged through pinned host memory, for comparison.
# In the same run ucx_perftest -t tag_bw -m cuda measures the same message
# size, iterations and window.  It prints GB/s of each, the ratio of the
# device path to ucx_perftest (target >= 0.9), and whether the received
# device frame is bit-identical to what the sending rank holds.
#
# Fails, saying so, where UCX has no CUDA support (no cuda memory domain in
# ucx_info -d), no GPU is visible, or the build has no CUDA module.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
builddir=${1:-${SVP_TOP_BUILDDIR:-$top/_build_gpu}}
builddir=$(cd "$builddir" 2>/dev/null && pwd) || { echo "gpu-handoff: no build directory $1" >&2; exit 1; }
bench=$builddir/bench/bench_comm
window=${WINDOW:-4}
repeat=${REPEAT:-3}
target=0.9

fail() { echo "gpu-handoff: $*" >&2; echo "gpu-handoff: FAIL"; exit 1; }

[ -x "$bench" ] || fail "$bench not built (make -C $builddir bench/bench_comm)"
[ -f "$builddir/src/ops/cuda/svdpipe_cuda.so" ] || fail "no CUDA module in $builddir (configure found no CUDA toolkit)"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || fail "no GPU visible (nvidia-smi -L)"
command -v ucx_info >/dev/null || fail "ucx_info not found"
command -v ucx_perftest >/dev/null || fail "ucx_perftest not found"
ucx_info -d 2>/dev/null | grep -q 'Memory domain: *cuda' ||
    fail "this UCX has no CUDA support (no cuda memory domain in ucx_info -d): build UCX with --with-cuda"
ucx_info -d 2>/dev/null | grep -q 'Transport: *cuda_ipc' ||
    fail "this UCX has no cuda_ipc transport (ucx_info -d)"

if [ -z "${SLURM_CONF:-}" ]; then
    exec "$top/tests/cluster/with-cluster.sh" --timeout 900 -- "$0" "$builddir"
fi

export UCX_TLS=${UCX_TLS:-cuda_copy,cuda_ipc,sm,self}
export SVP_MODULE_DIR=$builddir/src/ops/cuda

# ours SIZE ITERS WARMUP MODE: prints "GBPS PATH IDENTICAL"
ours() {
    timeout 300 srun --mpi=pmix -n 2 -W 240 "$bench" --device cuda --gpu-direct "$4" \
        --bytes "$1" --iters "$2" --warmup "$3" --window "$window" --checksum 0 \
        2>"$tmpd/err.$4" |
        sed -n 's/.*GBps=\([0-9.]*\) path=\([a-z]*\) identical=\([01]\).*/\1 \2 \3/p'
}

# ucx_perftest SIZE ITERS WARMUP with CUDA memory on both sides: GB/s
perftest() {
    local port pid line
    port=$((14000 + RANDOM % 20000))
    ucx_perftest -p "$port" -m cuda >/dev/null 2>&1 &
    pid=$!
    sleep 0.5
    line=$(timeout 300 ucx_perftest localhost -p "$port" -t tag_bw -m cuda -s "$1" \
           -n "$2" -w "$3" -O "$window" -f 2>/dev/null | tail -n 1)
    wait "$pid" 2>/dev/null
    echo "$line" | awk 'NF >= 6 { printf "%.3f\n", $6 * 1048576 / 1e9 }'
}

best() { sort -g | tail -n 1; }
ratio() { awk -v a="$1" -v p="$2" 'BEGIN { if (p > 0) printf "%.2f", a / p; else print "n/a" }'; }

tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
echo "# device: $(nvidia-smi --query-gpu=name,pci.bus_id,memory.total --format=csv,noheader | head -n 1)"
echo "# UCX_TLS=$UCX_TLS window=$window repeat=$repeat; GB/s = 1e9 payload bytes/s, best of $repeat"
printf '%-5s %9s %9s %9s %7s %s\n' size device staged perftest ratio identical
status=0
for spec in 2097152:400:40 33554432:60:10; do
    IFS=: read -r size iters warm <<<"$spec"
    d="" s="" p="" ident=1
    for _ in $(seq 1 "$repeat"); do
        read -r g path same <<<"$(ours "$size" "$iters" "$warm" on)"
        [ -n "${g:-}" ] || { sed 's/^/# /' "$tmpd/err.on" | tail -5; fail "bench_comm --gpu-direct on failed"; }
        [ "$path" = device ] || fail "gpu_direct on ran the $path path, not device"
        [ "$same" = 1 ] || ident=0
        d="$d $g"
        read -r g path same <<<"$(ours "$size" "$iters" "$warm" off)"
        [ -n "${g:-}" ] || { sed 's/^/# /' "$tmpd/err.off" | tail -5; fail "bench_comm --gpu-direct off failed"; }
        [ "$path" = staged ] || fail "gpu_direct off ran the $path path, not staged"
        [ "$same" = 1 ] || ident=0
        s="$s $g"
        p="$p $(perftest "$size" "$iters" "$warm")"
    done
    md=$(echo $d | tr ' ' '\n' | best)
    ms=$(echo $s | tr ' ' '\n' | best)
    mp=$(echo $p | tr ' ' '\n' | best)
    r=$(ratio "$md" "$mp")
    echo "# $((size >> 20))MB runs: device [$d ] staged [$s ] ucx_perftest [$p ]"
    printf '%-5s %9s %9s %9s %7s %s\n' "$((size >> 20))MB" "$md" "$ms" "$mp" "$r" \
        "$([ $ident = 1 ] && echo yes || echo NO)"
    [ $ident = 1 ] || status=1
    awk -v r="$r" -v t="$target" 'BEGIN { exit !(r != "n/a" && r + 0 >= t) }' || {
        echo "# $((size >> 20))MB: device path at $r of ucx_perftest, target $target"; status=1; }
done
[ $status = 0 ] && echo "gpu-handoff: PASS" || echo "gpu-handoff: FAIL"
exit $status

#!/bin/sh
# Threads from the allocation, and the kernels named (TAP): svdworker's
# default thread count follows its CPU affinity mask (what Slurm's
# --cpus-per-task gives a task), SVP_THREADS and OMP_NUM_THREADS override
# it, and the log says where the number came from and which BLAS kernels ran.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/log" 2>/dev/null | head -20; }
echo "1..7"
unset SVP_THREADS OMP_NUM_THREADS

printf 'steps: 2\nsamples: 1\nlatent_shape: [1, 2, 2, 2, 2]\n' > "$tmp/job.yaml"
# run NAME [VAR=value...] [command prefix]: the worker, its log in $tmp/log
run() {
    name=$1; shift
    env "$@" "$w" "$tmp/job.yaml" --set output.dir="$tmp/$name" >"$tmp/log" 2>&1
}

if ! command -v taskset >/dev/null 2>&1; then
    for i in 1 2 3 4; do ok "threads from the affinity mask # SKIP no taskset"; done
else
    run one taskset -c 0
    if [ $? -eq 0 ] && grep -q "; 1 thread (from the CPU affinity mask)" "$tmp/log"; then
        ok "taskset -c 0: 1 thread, from the CPU affinity mask"; else nok "taskset -c 0"; fi
    if [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ]; then
        run two taskset -c 0,1
        if [ $? -eq 0 ] && grep -q "; 2 threads (from the CPU affinity mask)" "$tmp/log"; then
            ok "taskset -c 0,1: 2 threads"; else nok "taskset -c 0,1"; fi
    else
        ok "taskset -c 0,1 # SKIP one CPU online"
    fi
    run three SVP_THREADS=3 taskset -c 0
    if [ $? -eq 0 ] && grep -q "; 3 threads (from SVP_THREADS)" "$tmp/log"; then
        ok "SVP_THREADS overrides the mask"; else nok "SVP_THREADS=3"; fi
    run omp OMP_NUM_THREADS=2,1 taskset -c 0
    if [ $? -eq 0 ] && grep -q "; 2 threads (from OMP_NUM_THREADS)" "$tmp/log"; then
        ok "OMP_NUM_THREADS's first level overrides the mask"; else nok "OMP_NUM_THREADS=2,1"; fi
fi

run bad SVP_THREADS=lots
if [ $? -eq 0 ] && grep -q "ignoring SVP_THREADS='lots': not a positive thread count" "$tmp/log" &&
   grep -q "thread.* (from the CPU affinity mask)" "$tmp/log"; then
    ok "a bad SVP_THREADS is named and skipped"; else nok "SVP_THREADS=lots"; fi

# the kernel family, and that the environment forced it
if grep -q "HAVE_OPENBLAS_GET_CORENAME 1" "$bld/config.h"; then
    run haswell OPENBLAS_CORETYPE=Haswell
    if [ $? -eq 0 ] && grep -q "cpu: OpenBLAS [0-9.]*, Haswell kernels (OPENBLAS_CORETYPE=Haswell)" "$tmp/log"; then
        ok "the log names OpenBLAS's Haswell kernels, forced by OPENBLAS_CORETYPE"
    else
        nok "OPENBLAS_CORETYPE=Haswell named"
    fi
else
    ok "kernels named # SKIP the BLAS is not OpenBLAS"
fi

# a family forced on a CPU that cannot run it (FMA4 and XOP went with the
# Bulldozer line; AVX-512 is missing on most others): named, exit 2, before
# any product dies of SIGILL; nothing is written
fam=
if grep -q "HAVE_OPENBLAS_GET_CORENAME 1" "$bld/config.h" && [ -r /proc/cpuinfo ]; then
    if ! grep -qw fma4 /proc/cpuinfo; then fam=Bulldozer; isa=fma4
    elif ! grep -qw avx512bw /proc/cpuinfo; then fam=SkylakeX; isa=avx512f
    fi
fi
case "$(uname -m)" in x86_64|i?86) ;; *) fam= ;; esac
if [ -n "$fam" ]; then
    printf 'model: {kind: svd, path: %s/nomodel}\nsteps: 2\nvideo: {inputs: [%s/etc/demo/input.png], width: 64, height: 64, num_frames: 2}\n' \
        "$tmp" "$top" >"$tmp/svd.yaml"
    env OPENBLAS_CORETYPE=$fam "$w" "$tmp/svd.yaml" --set output.dir="$tmp/sigill" >"$tmp/log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && [ ! -e "$tmp/sigill" ] &&
       grep -q "OPENBLAS_CORETYPE=$fam: OpenBLAS [0-9.]*'s $fam kernels need $isa, which this CPU does not have" "$tmp/log"; then
        ok "OPENBLAS_CORETYPE=$fam on a CPU without $isa: named, exit 2, not SIGILL"
    else
        nok "OPENBLAS_CORETYPE=$fam (rc=$rc)"
    fi
else
    ok "a family this CPU cannot run # SKIP not x86 OpenBLAS, or this CPU runs them all"
fi

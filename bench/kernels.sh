# Sourced by the CPU benchmarks: how they run a command under the kernel
# family a run chooses for this CPU, and under the Haswell kernels.
#
# The figures are measured with the family a job would run: a site's or a
# container's OPENBLAS_CORETYPE (and the OPENBLAS_L2_SIZE that comes with
# it) is unset for that command alone, since it would time kernels this CPU
# does not choose (on a Zen 4 core the SVD-XT UNet ran 1.5x slower under
# Haswell's).  The program then runs OpenBLAS's own choice, or the wider
# family svdpipe picks by the CPU's instruction sets where the library's is
# narrower; its "kernels" line says which.  The Haswell figure is printed as
# well: it is what every AVX2-only node runs.  Nothing wider than Haswell
# is ever forced.

# bench_own CMD...: CMD with the kernels chosen for this CPU
bench_own() {
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"
}

# bench_haswell CMD...: CMD on the Haswell kernels; 1 without running it when
# this CPU lacks AVX2 or FMA, which they need
bench_haswell() {
    if ! grep -q -w avx2 /proc/cpuinfo 2>/dev/null ||
       ! grep -q -w fma /proc/cpuinfo 2>/dev/null; then
        echo "kernels: OPENBLAS_CORETYPE=Haswell not run: this CPU has no AVX2/FMA"
        return 1
    fi
    OPENBLAS_CORETYPE=Haswell "$@"
}

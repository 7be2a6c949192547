#!/bin/sh
# Builds svdpipe (installing what it needs) and runs every test: unit tests,
# golden comparisons (the compact set in tests/data, or the larger one in
# ../shared/golden or $SVP_GOLDEN_DIR) and the integration tests on a
# throwaway local Slurm cluster; the determinism tests under OpenBLAS's
# Haswell kernels; make distcheck; then part of it under ASan and UBSan.
# Beside the tests, the habits the tools check (doc/HACKING.md, "Checks"):
# the build is configured with --enable-werror, and make format-check,
# make lint and make check-clang (the tree built with clang, warnings as
# errors) run after make check.  Each prints its time.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
CONFIGURE_FLAGS="${CONFIGURE_FLAGS:-} --enable-werror"
export CONFIGURE_FLAGS
"$top/contrib/bootstrap.sh"
cd "${SVP_BUILD_DIR:-$top/_build}"
status=0
# tests/test_webdataset.sh reads the WebDataset shards with a reader that is
# not ours, Python's webdataset package, installed from PyPI into a venv
# here; where that cannot be done (no network) the test says it skips
if [ -z "${SVP_PYTHON:-}" ]; then
    venv=$PWD/wds-venv
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import webdataset, PIL' 2>/dev/null ||
       { python3 -m venv "$venv" && "$venv/bin/pip" install -q webdataset pillow; } >/dev/null 2>&1; then
        SVP_PYTHON=$venv/bin/python
        export SVP_PYTHON
    else
        echo "run-tests: no venv with Python's webdataset: its reader test will skip"
    fi
fi
# one check and its wall time; a failure sets status, the others still run
timed() {
    name=$1
    shift
    t0=$(date +%s)
    rc=0
    "$@" || rc=$?
    echo "==== $name: $(($(date +%s) - t0)) s, exit $rc"
    [ "$rc" -eq 0 ] || status=$rc
}
make -j"$(nproc)" check || status=$?
if [ "$status" -ne 0 ]; then
    # show what failed, not only that something did
    for f in $(find . -name '*.log' -path '*tests*' | sort); do
        if grep -q -E '^(FAIL|ERROR|not ok)' "$f" 2>/dev/null; then
            echo "==== $f"
            tail -n 60 "$f"
        fi
    done
fi
# the determinism tests and the golden pipeline once more under OpenBLAS's
# Haswell and Sandybridge kernels (make check-kernels), unless the environment already
# chose a family: then the run above used it, and it is not ours to change
if [ "$status" -eq 0 ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then
    make check-kernels || status=$?
    if [ "$status" -ne 0 ]; then
        for f in tests/test_ops.log tests/test_determinism.log \
                 tests/test_stage_svd.log; do
            if grep -q -E '^(FAIL|ERROR|not ok)' "$f" 2>/dev/null; then
                echo "==== $f (OPENBLAS_CORETYPE=Haswell)"
                tail -n 60 "$f"
            fi
        done
    fi
fi
# the checks: formatting as .clang-format says (seconds), clang-tidy on
# src/, launch/ and the programs (.clang-tidy), and the clang build with
# -Werror, without its tests (SVP_CHECKS=no skips the three)
if [ "${SVP_CHECKS:-yes}" != no ]; then
    timed "make format-check" make format-check
    timed "make lint" make lint LINT_JOBS="$(nproc)"
    timed "make check-clang" make -j"$(nproc)" check-clang
fi
# the release tarball: complete, builds out of tree, its tests pass, it
# installs and uninstalls (make distcheck, without the cluster tests make
# check ran above: 1.5 to 3 minutes on 2 cores; SVP_DISTCHECK=no skips it)
if [ "$status" -eq 0 ] && [ "${SVP_DISTCHECK:-yes}" != no ]; then
    make -j"$(nproc)" distcheck >distcheck.log 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        echo "==== make distcheck (distcheck.log)"
        grep -E '^(FAIL|ERROR)' distcheck.log || true
        grep -A 20 'tracked by git but not' distcheck.log || true
        tail -n 30 distcheck.log
    fi
fi
# the runtime, comm, parsers, the ops arena's planner and the weight
# buffers once more under AddressSanitizer and UBSan
# (make check-sanitize; SVP_SANITIZE=no skips it)
if [ "$status" -eq 0 ] && [ "${SVP_SANITIZE:-yes}" != no ]; then
    make check-sanitize TESTS='tests/test_common tests/test_spec tests/test_tensor
        tests/test_rt tests/test_watch tests/test_comm tests/test_ops
        tests/test_ops_arena tests/fuzz/run-fuzz.sh' ||
        status=$?
    if [ "$status" -ne 0 ]; then
        for f in $(find _sanitize -name '*.log' -path '*tests*' | sort); do
            if grep -q -E '^(FAIL|ERROR|not ok)' "$f" 2>/dev/null; then
                echo "==== $f"
                tail -n 60 "$f"
            fi
        done
    fi
fi
exit "$status"

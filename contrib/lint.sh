#!/bin/sh
# Static analysis: clang-tidy with the checks in .clang-tidy (the reasons
# for the set are in doc/HACKING.md) on the C files given, compiled with
# the flags the build uses.  make lint calls it with the sources of
# src/, launch/ and the programs, and the build's preprocessor flags.
#
#   contrib/lint.sh [-j N] FILE... -- CPPFLAG...
#
# The files are taken relative to the current directory; headers among
# them are skipped (each is checked where a .c file includes it).  Prints
# every finding and exits 1 when there is one.  clang-tidy's version
# matters: $CLANG_TIDY, else clang-tidy-14, else clang-tidy.
set -eu

jobs=1
if [ "${1:-}" = "-j" ]; then
    jobs=$2
    shift 2
fi
if [ -n "${CLANG_TIDY:-}" ]; then
    tidy=$CLANG_TIDY
elif command -v clang-tidy-14 >/dev/null 2>&1; then
    tidy=clang-tidy-14
elif command -v clang-tidy >/dev/null 2>&1; then
    tidy=clang-tidy
else
    echo "lint: clang-tidy not found (Debian: clang-tidy-14)" >&2
    exit 2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# the files, up to "--"; what follows are the compiler's flags (a loop in
# this shell, not in a pipeline's subshell: its shifts must stay)
: >"$out/list"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
    *.c) echo "$1" >>"$out/list" ;;
    esac
    shift
done
[ $# -gt 0 ] && shift
sort -u "$out/list" >"$out/files"
if [ ! -s "$out/files" ]; then
    echo "usage: $0 [-j N] FILE.c... -- CPPFLAG..." >&2
    exit 2
fi

# one clang-tidy per file, each one's output apart so that parallel runs
# do not interleave; the flags reach it as they are, word for word
export tidy out
xargs -P "$jobs" -I{} sh -c '
    f=$1
    shift
    log="$out/$(echo "$f" | tr / _).log"
    if ! "$tidy" --quiet --warnings-as-errors="*" "$f" -- \
            -std=gnu11 -fopenmp "$@" >"$log" 2>&1; then
        echo "$f" >>"$out/failed"
    fi' sh {} "$@" <"$out/files"

n=$(wc -l <"$out/files")
if [ -s "$out/failed" ]; then
    for f in $(sort "$out/failed"); do
        # the findings, without clang-tidy's counts of what it hid
        grep -v -E '^[0-9]+ (warnings?|errors?)( and [0-9]+ errors?)? (generated|treated)|^Suppressed|^Use -header-filter|^Error while processing' \
            "$out/$(echo "$f" | tr / _).log" || true
    done
    echo "lint: findings in $(wc -l <"$out/failed") of $n files" >&2
    exit 1
fi
echo "lint: $n files, no findings"

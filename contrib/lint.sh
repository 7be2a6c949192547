#!/bin/sh
# Static analysis: clang-tidy with the checks in .clang-tidy (the reasons
# for the set are in doc/HACKING.md) on the C files given, compiled with
# the flags the build uses.  make lint calls it with the sources of
# src/, launch/ and the programs, and the build's preprocessor flags.
#
#   SVP_LINT_CPPFLAGS='-I...' contrib/lint.sh [-j N] FILE...
#
# Prints every finding and exits 1 when there is one.  clang-tidy's
# version matters: $CLANG_TIDY, else clang-tidy-14, else clang-tidy.
set -eu

jobs=1
if [ "${1:-}" = "-j" ]; then
    jobs=$2
    shift 2
fi
if [ $# -eq 0 ]; then
    echo "usage: SVP_LINT_CPPFLAGS=... $0 [-j N] FILE..." >&2
    exit 2
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
export tidy out
# one file per clang-tidy run, each one's output kept apart so that
# parallel runs do not interleave; SVP_LINT_CPPFLAGS is split into words
# on purpose
printf '%s\n' "$@" | grep '\.c$' | sort -u | xargs -P "$jobs" -I{} sh -c '
    f={}
    log="$out/$(echo "$f" | tr / _).log"
    # shellcheck disable=SC2086
    if ! "$tidy" --quiet --warnings-as-errors="*" "$f" -- \
            -std=gnu11 -fopenmp $SVP_LINT_CPPFLAGS >"$log" 2>&1; then
        echo "$f" >>"$out/failed"
    fi'
if [ -s "$out/failed" ]; then
    for f in $(sort "$out/failed"); do
        # the findings, without clang-tidy's counts of what it hid
        grep -v -E '^[0-9]+ (warnings?|errors?) (generated|treated)|^Suppressed|^Use -header-filter|^Error while processing' \
            "$out/$(echo "$f" | tr / _).log" || true
    done
    echo "lint: findings in $(wc -l <"$out/failed") files" >&2
    exit 1
fi
echo "lint: no findings"

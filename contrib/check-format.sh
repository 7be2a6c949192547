#!/bin/sh
# Checks (or, with --fix, rewrites) the C, CUDA and header files against
# the .clang-format at the top of the tree.
#
#   contrib/check-format.sh [--fix] [FILE...]
#
# Without FILEs: every C/CUDA source and header that git tracks (from a
# tarball, every one under the source folders).  Prints each file that
# differs and exits 1 when any does; with --fix rewrites them in place.
# clang-format's version matters (each release formats a little
# differently): $CLANG_FORMAT, else clang-format-14, else clang-format.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
fix=no
if [ "${1:-}" = "--fix" ]; then
    fix=yes
    shift
fi

if [ -n "${CLANG_FORMAT:-}" ]; then
    cf=$CLANG_FORMAT
elif command -v clang-format-14 >/dev/null 2>&1; then
    cf=clang-format-14
elif command -v clang-format >/dev/null 2>&1; then
    cf=clang-format
else
    echo "check-format: clang-format not found (Debian: clang-format-14)" >&2
    exit 2
fi

cd "$top"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
if [ $# -gt 0 ]; then
    for f in "$@"; do echo "$f"; done >"$list"
elif [ -e .git ] && command -v git >/dev/null 2>&1; then
    git ls-files -- '*.c' '*.h' '*.cu' '*.cuh' >"$list"
else
    find src launch kernels tests bench etc -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) |
        sort >"$list"
fi

bad=0
while read -r f; do
    case $f in
    *.c | *.h | *.cu | *.cuh) ;;
    *) continue ;;
    esac
    [ -f "$f" ] || continue
    if [ "$fix" = yes ]; then
        "$cf" --style=file -i "$f"
    elif ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "$f"
        bad=1
    fi
done <"$list"

if [ "$bad" -ne 0 ]; then
    echo "check-format: the files above differ from .clang-format;" \
        "make format (or contrib/check-format.sh --fix FILE) rewrites them" >&2
    exit 1
fi

#!/bin/sh
# contrib/long-functions.sh [LIMIT] [FILE...]: the functions in src/ and
# launch/ longer than LIMIT lines (150 by default), longest first, as
# "LINES FILE:LINE NAME".  Exits 1 when it finds one.
#
# The tree's own layout makes a brace counter enough: a function's body
# opens with "{" alone in column 0 and closes with "}" alone in column 0;
# structs, enums and initializers never do.  Compute kernels are left out:
# their length follows the loop nest (src/ops/cpu/, src/ops/cuda/,
# kernels/).
set -eu
limit=${1:-150}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ $# -eq 0 ]; then
    set -- $(find src launch -name '*.c' | sort)
fi
found=$(for f in "$@"; do
    case "$f" in
    src/ops/cpu/*|src/ops/cuda/*|kernels/*) continue ;;
    esac
    awk -v limit="$limit" -v file="$f" '
        # the name: the last identifier before "(" on the signature lines
        /^[A-Za-z_].*\(/ && !/;[ \t]*$/ {
            sig = $0; sigline = FNR
            sub(/\(.*/, "", sig); n = split(sig, w, /[ \t*]+/); name = w[n]
        }
        /^\{[ \t]*$/ { start = sigline; body = FNR; next }
        /^\}/ && body > 0 {
            len = FNR - start + 1
            if (len > limit)
                printf "%d %s:%d %s\n", len, file, start, name
            body = 0
        }' "$f"
done | sort -rn)
[ -z "$found" ] && exit 0
printf '%s\n' "$found"
exit 1

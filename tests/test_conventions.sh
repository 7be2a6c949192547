#!/bin/sh
# The conventions doc/HACKING.md states, as the build checks them (TAP): no
# function over 150 lines outside the compute kernels
# (contrib/long-functions.sh), and no file that includes another module's
# private header (its *_int.h).
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "1..2"
if sh "$top/contrib/long-functions.sh" >"$tmp/long" 2>&1; then
    echo "ok 1 - no function over 150 lines (kernels aside)"
else
    echo "not ok 1 - functions over 150 lines:"
    sed 's/^/# /' "$tmp/long"
fi
# a private header is its own folder's: src/X/*_int.h (and launch's) only
# from src/X (launch/)
(cd "$top" && grep -n '#include "[a-z_]*/[a-z_]*_int\.h"' $(find src launch -name '*.[ch]' | sort)) |
while IFS=: read -r file line inc; do
    mod=$(dirname "$file")
    hdr=$(echo "$inc" | sed 's/.*"\([a-z_]*\)\/[a-z_]*_int\.h".*/\1/')
    case $mod in
    */"$hdr"|"$hdr") ;;
    *) echo "$file:$line: $inc" ;;
    esac
done >"$tmp/int"
if [ ! -s "$tmp/int" ]; then
    echo "ok 2 - no file includes another module's private header"
else
    echo "not ok 2 - private headers included across modules:"
    sed 's/^/# /' "$tmp/int"
fi

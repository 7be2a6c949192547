#!/bin/sh
# Line coverage per folder from an lcov tracefile: one line per source
# folder (lines hit / lines found), the total last.
#
#   contrib/coverage-summary.sh coverage.info TOP_SRCDIR
set -eu
info=$1
top=${2:-}
awk -v top="$top/" '
    /^SF:/ {
        f = substr($0, 4)
        if (top != "/" && index(f, top) == 1)
            f = substr(f, length(top) + 1)
        d = f
        sub(/\/[^\/]*$/, "", d)
        if (!(d in found))
            dirs[++n] = d
    }
    /^LF:/ { found[d] += substr($0, 4); all_found += substr($0, 4) }
    /^LH:/ { hit[d] += substr($0, 4); all_hit += substr($0, 4) }
    END {
        printf "%-18s %8s %8s %7s\n", "folder", "lines", "hit", "cover"
        # folders in name order
        for (i = 1; i <= n; i++)
            for (j = i + 1; j <= n; j++)
                if (dirs[j] < dirs[i]) { t = dirs[i]; dirs[i] = dirs[j]; dirs[j] = t }
        for (i = 1; i <= n; i++) {
            d = dirs[i]
            printf "%-18s %8d %8d %6.1f%%\n", d, found[d], hit[d],
                   found[d] ? 100.0 * hit[d] / found[d] : 0
        }
        printf "%-18s %8d %8d %6.1f%%\n", "total", all_found, all_hit,
               all_found ? 100.0 * all_hit / all_found : 0
    }' "$info"

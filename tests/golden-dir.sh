#!/bin/sh
# Prints the golden reference data directory the tests and benchmarks use:
# $SVP_GOLDEN_DIR when it is a directory, else the larger set beside the
# source tree (SRCDIR/../shared/golden) when there is one, else the compact
# set shipped in SRCDIR/tests/data.
#
#   tests/golden-dir.sh SRCDIR
top=$1
if [ -n "${SVP_GOLDEN_DIR:-}" ] && [ -d "$SVP_GOLDEN_DIR" ]; then
    echo "$SVP_GOLDEN_DIR"
elif [ -d "$top/../shared/golden" ]; then
    echo "$top/../shared/golden"
else
    echo "$top/tests/data"
fi

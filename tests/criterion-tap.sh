#!/bin/sh
# LOG_COMPILER for Criterion programs: automake passes the test program last;
# Criterion writes its TAP report to stdout for tap-driver.sh.  -j1: these
# machines have two cores and several tests are multi-threaded themselves.
prog=
for a in "$@"; do prog=$a; done
exec "$prog" --tap=/dev/stdout -j1

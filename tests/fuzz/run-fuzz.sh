#!/bin/sh
# The fuzz targets, each on its seeds plus a bounded number of mutations
# (tests/fuzz/driver.c); prints TAP.  SVP_FUZZ_RUNS sets the count.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-.}
runs=${SVP_FUZZ_RUNS:-5000}
s=$top/tests/fuzz/seeds
n=0
echo "1..6"
for t in spec safetensors config image frame manifest; do
    n=$((n+1))
    case $t in
    spec)   extra="$top/etc/sim_4rank.yaml $top/etc/svd_7gpu.yaml" ;;
    config) extra="$top/etc/models/svd-mini/unet/config.json $top/etc/models/svd-mini/vae/config.json" ;;
    image)  extra="$top/etc/demo/input.png" ;;
    *)      extra="" ;;
    esac
    out=$("$bld/tests/fuzz/fuzz_$t" -n "$runs" "$s/$t" $extra 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "ok $n - fuzz_$t: $(echo "$out" | tail -n 1 | sed 's|.*/||')"
    else
        echo "not ok $n - fuzz_$t exited $rc"
        echo "$out" | tail -n 20 | sed 's/^/# /'
    fi
done

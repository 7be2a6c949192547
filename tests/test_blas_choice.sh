#!/bin/sh
# The BLAS kernels chosen by the instruction set (TAP).  OpenBLAS picks its
# kernel family from a table of CPU models and falls back to its generic
# Prescott (SSE3) kernels on a CPU newer than the table; svdworker then
# runs the widest family this CPU executes, and says so.  No new CPU is
# needed: a preload (tests/blas_prescott.c) makes the library's own choice
# read as Prescott wherever OPENBLAS_CORETYPE is unset, and answers with the
# real library where it is set, so the family a run names is the one that
# loaded.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
w=$bld/src/tools/svdworker
t=$bld/src/tools/svdtool
shim=${SVP_BLAS_SHIM:-$bld/tests/blas_prescott.so}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/log" 2>/dev/null | grep -v ' step ' | head -20; }
skip_all() { for i in 1 2 3 4 5 6; do ok "$1 # SKIP $2"; done; exit 0; }
echo "1..6"
unset SVP_THREADS OMP_NUM_THREADS SVP_OPENBLAS_CHOICE

# the family this CPU executes best, as svdpipe ranks them; a narrower one
# a site might force
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { case " ${flags#*:} " in *" $1 "*) return 0;; esac; return 1; }
vendor=$(grep -m1 '^vendor_id' /proc/cpuinfo 2>/dev/null | sed 's/.*: *//')
family=$(grep -m1 '^cpu family' /proc/cpuinfo 2>/dev/null | sed 's/.*: *//')
model=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo 2>/dev/null | sed 's/.*: *//')
case "$(uname -m)" in x86_64|i?86) ;; *) skip_all "kernel choice" "not an x86 CPU";; esac
grep -q "HAVE_OPENBLAS_GET_CORENAME 1" "$bld/config.h" || skip_all "kernel choice" "the BLAS is not OpenBLAS"
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
    fam=SkylakeX; narrow=Haswell
elif has avx2 && has fma; then
    case $vendor in AuthenticAMD|HygonGenuine) fam=Zen;; *) fam=Haswell;; esac
    narrow=Sandybridge
else
    skip_all "kernel choice" "this CPU has no AVX2 and FMA: Prescott may be its best"
fi
[ -f "$shim" ] || { n=1; echo "not ok 1 - the preload $shim is missing"; exit 1; }

"$t" init --model-config-dir "$top/etc/models/svd-mini" --seed 3 --output "$tmp/model" \
    >"$tmp/log" 2>&1 || { nok "svdtool init"; exit 1; }
cat >"$tmp/i2v.yaml" <<YAML
model: {kind: svd, path: '$tmp/model'}
steps: 1
samples: 1
video: {inputs: ['$top/etc/demo/input.png'], width: 64, height: 64, num_frames: 2, decode_chunk_size: 2}
YAML
# run NAME [VAR=value...]: the worker under the preload, the site's
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset first; its log in $tmp/log
run() {
    name=$1; shift
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE LD_PRELOAD="$shim" SVP_THREADS=1 "$@" \
        "$w" "$tmp/i2v.yaml" --set output.dir="$tmp/$name" >"$tmp/log" 2>&1
}
j() { jq -r "$1" "$tmp/$2/sample_000000/sample.json" 2>/dev/null; }

# 1-3: the library's Prescott replaced by the widest family this CPU runs
run own
rc=$?
if [ $rc -eq 0 ] && grep -q "cpu: OpenBLAS [0-9.]*, $fam kernels (svdpipe's choice; OpenBLAS chose Prescott for this CPU ($vendor, family $family, model $model; features: [a-z0-9 ]*avx2 fma" "$tmp/log"; then
    ok "OpenBLAS's Prescott on this CPU: $fam runs, the log names the library's choice, the CPU and its features"
else
    nok "$fam chosen over Prescott, in the log (rc=$rc)"
fi
cp "$tmp/log" "$tmp/own.log"
if [ "$(j .cpu.kernels own)" = "$fam" ] && [ "$(j .cpu.chosen_by own)" = svdpipe ] &&
   [ "$(j .cpu.blas_choice own)" = Prescott ] && [ "$(j .cpu.forced_by own)" = null ] &&
   [ "$(j .cpu.processor.vendor own)" = "$vendor" ] && [ "$(j .cpu.processor.model own)" = "$model" ] &&
   j .cpu.processor.features own | grep -q -w avx2; then
    ok "sample.json: kernels $fam, chosen by svdpipe, the library's Prescott, the CPU"
else
    nok "sample.json's cpu: $(j -c .cpu own)"
fi
# the products really ran on that family: the same bits as a run the site
# forced onto it
run site_fam OPENBLAS_CORETYPE=$fam
if [ $? -eq 0 ] && grep -q "cpu: OpenBLAS [0-9.]*, $fam kernels (OPENBLAS_CORETYPE=$fam)" "$tmp/log" &&
   cmp -s "$tmp/own/sample_000000/latents.safetensors" "$tmp/site_fam/sample_000000/latents.safetensors" &&
   ! grep -q "narrower kernels" "$tmp/log"; then
    ok "the chosen run's latents are those of OPENBLAS_CORETYPE=$fam, bit for bit"
else
    nok "the chosen run's bits against OPENBLAS_CORETYPE=$fam"
fi

# 4-5: a site's value wins, with a warning where it is narrower
run site OPENBLAS_CORETYPE=$narrow
rc=$?
if [ $rc -eq 0 ] && grep -q "cpu: OpenBLAS [0-9.]*, $narrow kernels (OPENBLAS_CORETYPE=$narrow)" "$tmp/log" &&
   grep -q "warn  cpu: OPENBLAS_CORETYPE=$narrow on [^ ]* runs narrower kernels than this CPU executes ($vendor, family $family, model $model; features: .*): svdpipe would run $fam's; unset it to let it" "$tmp/log" &&
   [ "$(grep -c 'narrower kernels' "$tmp/log")" -eq 1 ]; then
    ok "a site's OPENBLAS_CORETYPE=$narrow wins, with one warning naming $fam"
else
    nok "site's $narrow (rc=$rc)"
fi
if [ "$(j .cpu.kernels site)" = "$narrow" ] && [ "$(j .cpu.chosen_by site)" = OPENBLAS_CORETYPE ] &&
   [ "$(j .cpu.forced_by site)" = "OPENBLAS_CORETYPE=$narrow" ] && [ "$(j .cpu.blas_choice site)" = null ]; then
    ok "sample.json: the site's $narrow, forced by OPENBLAS_CORETYPE"
else
    nok "sample.json's cpu for the site's value: $(j -c .cpu site)"
fi

# 6: a choice inherited from another svdpipe program (another process,
# maybe another CPU) is made afresh, not taken for the site's
run inherited OPENBLAS_CORETYPE=$narrow SVP_OPENBLAS_CHOICE="$narrow:Prescott:1"
rc=$?
if [ $rc -eq 0 ] && grep -q "cpu: OpenBLAS [0-9.]*, $fam kernels (svdpipe's choice; OpenBLAS chose Prescott" "$tmp/log" &&
   [ "$(j .cpu.chosen_by inherited)" = svdpipe ]; then
    ok "another process's choice in the environment: chosen again for this one ($fam)"
else
    nok "inherited choice (rc=$rc)"
fi

#!/bin/sh
# The installed tree works on its own (TAP): 'make install' into a fresh
# prefix, then the installed demo spec runs from another directory with the
# installed tools and the svd-mini model, finding its image beside it.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | tail -20; }
echo "1..4"

p=$tmp/prefix
# a make of its own, not a part of the one running the tests
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$bld" install prefix="$p" \
        >"$tmp/err" 2>&1; then
    ok "make install into a fresh prefix"
else nok "make install"; fi
share=$p/share/svdpipe
if [ -f "$share/etc/demo/demo.yaml" ] && [ -f "$share/etc/demo/input.png" ] &&
   [ -x "$p/bin/svdworker" ] && [ -x "$p/bin/svdlaunch" ]; then
    ok "the demo spec, its image and the tools are installed"
else ls -R "$p" >"$tmp/err" 2>&1; nok "installed files"; fi

if "$p/bin/svdtool" init --model-config-dir "$share/models/svd-mini" --seed 1 \
        --output "$tmp/model" >"$tmp/err" 2>&1; then
    ok "installed svdtool writes the svd-mini model from the installed configs"
else nok "svdtool init from the prefix"; fi

# from an unrelated directory, as the demo does, on a small size
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && SVP_THREADS=1 "$p/bin/svdworker" "$share/etc/demo/demo.yaml" \
    --set model.path="$tmp/model" --set output.dir="$tmp/out" --set steps=2 \
    --set samples=1 --set video.num_frames=3 --set video.decode_chunk_size=3) \
    >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f "$tmp/out/sample_000000/sample.json" ] &&
   grep -q "$share/etc/demo/input.png" "$tmp/out/sample_000000/sample.json"; then
    ok "the installed demo spec runs from another directory with its installed image"
else nok "installed demo run (rc=$rc)"; fi

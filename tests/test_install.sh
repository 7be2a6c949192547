#!/bin/sh
# The installed tree works on its own (TAP): 'make install' into a fresh
# prefix other than the configured one, then, from a folder outside the
# source and build trees with only the prefix's bin/ on PATH: svdtool init
# finds the model configs by name or path, svdlaunch checks and plans an
# installed example, svdworker runs the built-in default job and the
# installed demo spec (its image found beside it), and a CUDA job loads the
# installed svdpipe_cuda.so.  Then the same after the prefix is moved, a
# program copied away from its tree (it says to set SVP_DATADIR, and works
# with it), and what the tools say when something is missing.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svp-install.XXXXXX")
case $tmp in
"$top"/*|"$bld"/*) rm -rf "$tmp"; tmp=$(mktemp -d /tmp/svp-install.XXXXXX) ;;
esac
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | tail -20; }
skip() { n=$((n+1)); echo "ok $n - $1 # SKIP $2"; }
echo "1..20"

# the configured directories of this build, as make expands them
mkvar() {
    printf 'svp-print:\n\t@echo $(%s)\n' "$1" |
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$bld" -f Makefile -f - svp-print
}
cfg_pkglibdir=$(mkvar pkglibdir)
cfg_pkgdatadir=$(mkvar pkgdatadir)
have_cuda=no
grep -q '^#define HAVE_CUDA 1' "$bld/config.h" && have_cuda=yes

p=$tmp/prefix
# a make of its own, not a part of the one running the tests
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$bld" install prefix="$p" \
        >"$tmp/err" 2>&1; then
    ok "make install into a fresh prefix (configured: ${cfg_pkgdatadir%/share/svdpipe})"
else nok "make install"; fi

share=$p/share/svdpipe
missing=
for f in bin/svdworker bin/svdlaunch bin/svdtool \
    share/man/man1/svdworker.1 share/man/man1/svdlaunch.1 share/man/man1/svdtool.1 \
    share/man/man5/svdpipe-job.5 \
    share/svdpipe/etc/demo/demo.yaml share/svdpipe/etc/demo/input.png \
    share/svdpipe/etc/svd_7gpu.yaml share/svdpipe/etc/svd_2x4gpu.yaml \
    share/svdpipe/etc/sim_4rank.yaml share/svdpipe/etc/hardware/h100.yaml \
    share/svdpipe/etc/hardware/h200.yaml share/svdpipe/etc/hardware/cpu-sim.yaml \
    share/svdpipe/etc/models/svd-mini/model_index.json \
    share/svdpipe/etc/models/svd-mini/unet/config.json \
    share/svdpipe/etc/models/svd-xt/model_index.json \
    share/svdpipe/etc/models/svd-xt/vae/config.json \
    share/svdpipe/slurm/svd_7gpu.sh share/svdpipe/slurm/sim_4rank.sh \
    share/doc/svdpipe/README.md share/doc/svdpipe/NEWS share/doc/svdpipe/LICENSE \
    share/doc/svdpipe/doc/cluster.md share/doc/svdpipe/doc/report-timeline.png; do
    [ -f "$p/$f" ] || missing="$missing $f"
done
[ "$have_cuda" = no ] || [ -f "$p/lib/svdpipe/svdpipe_cuda.so" ] ||
    missing="$missing lib/svdpipe/svdpipe_cuda.so"
# the installed man pages carry the version, not the placeholder
grep -l '@PACKAGE_VERSION@' "$p"/share/man/man*/* >/dev/null 2>&1 && missing="$missing (man: @PACKAGE_VERSION@)"
if [ -z "$missing" ]; then
    ok "programs, module, man pages, examples, model configs, job scripts and docs installed"
else echo "missing:$missing" >"$tmp/err"; ls -R "$p" >>"$tmp/err" 2>&1; nok "installed files"; fi

# Everything below runs in $tmp/cwd (outside the source and build trees)
# with only PREFIX/bin on PATH.
mkdir "$tmp/cwd"
at() { # at PREFIX [VAR=VALUE...] CMD...: in $tmp/cwd, PATH=PREFIX/bin only
    pfx=$1; shift
    (cd "$tmp/cwd" && env PATH="$pfx/bin" SVP_THREADS=1 "$@")
}
# the checks made on the tree where it was installed and where it is moved to
installed_tree_checks() { # PREFIX WHAT
    pfx=$1 what=$2 sh=$1/share/svdpipe
    rm -rf "$tmp/cwd"/* "$tmp/err"
    if at "$pfx" svdtool init --model-config-dir svd-mini --seed 1 --output model \
            >"$tmp/err" 2>&1 && [ -f "$tmp/cwd/model/unet/config.json" ]; then
        ok "$what: svdtool init --model-config-dir svd-mini (a name) finds the installed configs"
    else nok "$what: svdtool init by name"; fi
    if at "$pfx" svdtool init --model-config-dir "$sh/etc/models/svd-mini" --seed 1 \
            --output model2 >"$tmp/err" 2>&1 &&
       cmp -s "$tmp/cwd/model/unet/diffusion_pytorch_model.safetensors" \
              "$tmp/cwd/model2/unet/diffusion_pytorch_model.safetensors"; then
        ok "$what: svdtool init --model-config-dir PATH makes the same model"
    else nok "$what: svdtool init by path"; fi
    if at "$pfx" svdlaunch check "$sh/etc/sim_4rank.yaml" >"$tmp/err" 2>&1 &&
       at "$pfx" svdlaunch plan "$sh/etc/svd_7gpu.yaml" \
            --hardware "$sh/etc/hardware/h100.yaml" >>"$tmp/err" 2>&1 &&
       grep -q "^plan" "$tmp/err"; then
        ok "$what: svdlaunch check and plan on the installed examples"
    else nok "$what: svdlaunch check/plan"; fi
    if at "$pfx" svdworker --set samples=2 >"$tmp/err" 2>&1 &&
       [ -f "$tmp/cwd/out/sample_000001.safetensors" ]; then
        ok "$what: svdworker runs the built-in default job"
    else nok "$what: svdworker default job"; fi
    at "$pfx" svdworker "$sh/etc/demo/demo.yaml" --set model.path=model \
        --set output.dir=demo --set steps=2 --set samples=1 --set video.num_frames=3 \
        --set video.decode_chunk_size=3 >"$tmp/err" 2>&1; rc=$?
    if [ $rc -eq 0 ] && [ -f "$tmp/cwd/demo/sample_000000/sample.json" ] &&
       grep -q "$sh/etc/demo/input.png" "$tmp/cwd/demo/sample_000000/sample.json"; then
        ok "$what: the installed demo spec runs, its image found beside it"
    else nok "$what: installed demo run (rc=$rc)"; fi
    if [ "$have_cuda" = no ]; then
        skip "$what: device: cuda loads the installed module" "built without the CUDA backend"
    else
        # found and loaded from the prefix, GPU or not (without one the run
        # then stops on the driver)
        at "$pfx" svdworker "$sh/etc/demo/demo.yaml" --set model.path=model \
            --set output.dir=cuda --set device=cuda --set log.level=debug --set steps=2 \
            --set samples=1 --set video.num_frames=3 --set video.decode_chunk_size=3 \
            >"$tmp/err" 2>&1
        if grep -qF "loaded the cuda backend module $pfx/lib/svdpipe/svdpipe_cuda.so" "$tmp/err"; then
            ok "$what: device: cuda loads $pfx/lib/svdpipe/svdpipe_cuda.so"
        else nok "$what: the installed CUDA module"; fi
    fi
}
installed_tree_checks "$p" "installed"

# the prefix moved after install
m=$tmp/moved
mv "$p" "$m"
installed_tree_checks "$m" "moved prefix"

# What is missing is named with where it was looked for.
at "$m" svdtool init --model-config-dir no-such-model --seed 1 --output x >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -qF "$m/share/svdpipe/etc/models/no-such-model" "$tmp/err" &&
   grep -q "SVP_DATADIR" "$tmp/err"; then
    ok "an unknown model config name: exit 2, names where it looked and SVP_DATADIR"
else nok "unknown model config name (rc=$rc)"; fi
if [ "$have_cuda" = no ]; then
    skip "a missing module names where it looked" "built without the CUDA backend"
elif [ -e "$cfg_pkglibdir/svdpipe_cuda.so" ]; then
    skip "a missing module names where it looked" "the configured $cfg_pkglibdir has one"
else
    mv "$m/lib/svdpipe/svdpipe_cuda.so" "$tmp/svdpipe_cuda.so"
    at "$m" svdworker "$m/share/svdpipe/etc/demo/demo.yaml" --set model.path=model \
        --set output.dir=nomodule --set device=cuda >"$tmp/err" 2>&1; rc=$?
    mv "$tmp/svdpipe_cuda.so" "$m/lib/svdpipe/svdpipe_cuda.so"
    if [ $rc -ne 0 ] &&
       grep -qF "cuda backend module not found (looked for svdpipe_cuda.so in $m/lib/svdpipe, $cfg_pkglibdir; SVP_MODULE_DIR" "$tmp/err"; then
        ok "a missing module: the error names the moved and the configured lib/svdpipe, and SVP_MODULE_DIR"
    else nok "missing module message (rc=$rc)"; fi
fi

# a program copied away from its tree: it says what to set, and works then
mkdir -p "$tmp/lone/bin"
cp "$m/bin/svdtool" "$tmp/lone/bin/"
if [ -d "$cfg_pkgdatadir/etc/models/svd-mini" ]; then
    skip "a program away from its tree says to set SVP_DATADIR" "the configured $cfg_pkgdatadir has the configs"
else
    at "$tmp/lone" svdtool init --model-config-dir svd-mini --seed 1 --output lone \
        >"$tmp/err" 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -qF "$tmp/lone/share/svdpipe/etc/models/svd-mini" "$tmp/err" &&
       grep -q "SVP_DATADIR names the share/svdpipe folder" "$tmp/err"; then
        ok "a program away from its tree: exit 2, where it looked, and to set SVP_DATADIR"
    else nok "program away from its tree (rc=$rc)"; fi
fi
if at "$tmp/lone" SVP_DATADIR="$m/share/svdpipe" svdtool init --model-config-dir svd-mini \
        --seed 1 --output lone2 >"$tmp/err" 2>&1 && [ -f "$tmp/cwd/lone2/model_index.json" ]; then
    ok "SVP_DATADIR set: the program away from its tree finds the configs"
else nok "SVP_DATADIR"; fi
at "$m" SVP_DATADIR="$tmp/nowhere" svdtool init --model-config-dir svd-mini --seed 1 \
    --output x >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -qF "$tmp/nowhere/etc/models/svd-mini, from SVP_DATADIR" "$tmp/err"; then
    ok "SVP_DATADIR is the only place looked in when set, and the error says so"
else nok "SVP_DATADIR alone (rc=$rc)"; fi

# uninstall leaves no file behind (make distcheck checks the same)
mv "$m" "$p"
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$bld" uninstall prefix="$p" \
        >"$tmp/err" 2>&1 && [ -z "$(find "$p" -type f)" ]; then
    ok "make uninstall removes every installed file"
else find "$p" -type f >>"$tmp/err"; nok "make uninstall"; fi

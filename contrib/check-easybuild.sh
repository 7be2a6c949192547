#!/bin/bash
# Builds the release tarball with EasyBuild, as a site would, and runs
# svdpipe from the module it makes (make check-easybuild):
#
#   contrib/check-easybuild.sh svdpipe-VERSION.tar.gz contrib/easybuild/svdpipe-VERSION.eb
#
#  1. EasyBuild from PyPI in a virtual environment outside the source and
#     build trees, kept for the next run: $SVP_EB_VENV, default
#     ${TMPDIR:-/tmp}/svdpipe-easybuild-venv;
#  2. Lmod, the module system EasyBuild writes for: the one this shell has
#     ($LMOD_PKG), else Debian's /usr/share/lmod/lmod, else `apt-get
#     install lmod` (root, or sudo without a password);
#  3. eb builds the easyconfig from the tarball into a temporary install
#     path (its osdependencies checked, its sanity check run: the
#     easyconfig's commands start the programs);
#  4. `module load svdpipe` in a fresh shell, then from an empty folder
#     outside the trees: the built-in default job in one process, an
#     installed example checked and planned, the demo model made from its
#     installed configs and run, and the CUDA module (when built) found in
#     the install path.
#
# Exit status: 0 passed; 77 skipped, with a SKIP line saying why (no
# python3 venv, PyPI or apt out of reach, not root for apt); else failed.
# SVP_EB_KEEP=1 keeps the temporary folder (install path, logs).
set -u

tarball=${1:?usage: $0 TARBALL EASYCONFIG}
easyconfig=${2:?usage: $0 TARBALL EASYCONFIG}

say() { echo "check-easybuild: $*"; }
skip() { echo "SKIP: check-easybuild: $*"; exit 77; }
fail() { echo "FAIL: check-easybuild: $*" >&2; exit 1; }

[ -f "$tarball" ] || fail "no tarball $tarball (make dist makes it)"
if [ ! -f "$easyconfig" ]; then
    fail "no easyconfig $easyconfig for this version: copy the last one in" \
         "$(dirname "$easyconfig") to that name and set its version"
fi
name=$(basename "$tarball" .tar.gz)        # svdpipe-0.4.0
version=${name#svdpipe-}
grep -Eq "^version *= *'$version'" "$easyconfig" ||
    fail "$easyconfig does not say version = '$version'"

work=$(mktemp -d "${TMPDIR:-/tmp}/svdpipe-easybuild.XXXXXX") || fail "mktemp"
if [ "${SVP_EB_KEEP:-0}" = 1 ]; then
    trap 'say "kept $work"' EXIT
else
    trap 'rm -rf "$work"' EXIT
fi
start=$(date +%s)

# ---- 1. EasyBuild from PyPI ----------------------------------------------
# The framework and the easyblocks (ConfigureMake): the easyconfigs
# collection of the `easybuild` bundle is not needed, this build resolves
# no dependency from it.
venv=${SVP_EB_VENV:-${TMPDIR:-/tmp}/svdpipe-easybuild-venv}
if [ ! -x "$venv/bin/eb" ]; then
    say "installing EasyBuild from PyPI into $venv"
    python3 -m venv "$venv" >"$work/venv.log" 2>&1 ||
        { tail -3 "$work/venv.log"; skip "python3 cannot make a virtual environment (Debian: python3-venv)"; }
    if ! "$venv/bin/pip" install -q 'easybuild-framework>=5,<6' \
            'easybuild-easyblocks>=5,<6' >"$work/pip.log" 2>&1; then
        tail -5 "$work/pip.log"
        rm -rf "$venv"
        skip "cannot install EasyBuild from PyPI (no network?)"
    fi
fi
# eb leaves a folder in $TMPDIR at each start: $work's, removed with it
mkdir -p "$work/tmp"
eb_version=$(TMPDIR="$work/tmp" PATH="$venv/bin:$PATH" "$venv/bin/eb" --version 2>&1) ||
    fail "eb does not start (remove $venv to install it again): $eb_version"
say "$eb_version"

# ---- 2. Lmod -----------------------------------------------------------------
lmod_init=
for d in "${LMOD_PKG:-}" /usr/share/lmod/lmod; do
    if [ -n "$d" ] && [ -f "$d/init/bash" ]; then lmod_init=$d/init/bash; break; fi
done
if [ -z "$lmod_init" ]; then
    command -v apt-get >/dev/null 2>&1 || skip "no Lmod, and no apt-get to install it"
    sudo=
    if [ "$(id -u)" -ne 0 ]; then
        sudo -n true 2>/dev/null || skip "no Lmod, and installing it needs root"
        sudo="sudo -n"
    fi
    say "installing Lmod (apt-get install lmod)"
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            --no-install-recommends lmod >"$work/apt.log" 2>&1; then
        # stale package lists are the usual reason
        $sudo apt-get update -qq >>"$work/apt.log" 2>&1
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
            --no-install-recommends lmod >>"$work/apt.log" 2>&1 ||
            { tail -5 "$work/apt.log"; skip "cannot install lmod with apt-get (no network?)"; }
    fi
    lmod_init=/usr/share/lmod/lmod/init/bash
    [ -f "$lmod_init" ] || fail "lmod installed but no $lmod_init"
fi
say "Lmod: $lmod_init"

# ---- 3. eb -------------------------------------------------------------------
eb_start=$(date +%s)
mkdir -p "$work/sources" "$work/eb"
cp "$tarball" "$work/sources/"
eb_opts=(--prefix="$work/eb" --installpath="$work/eb" --sourcepath="$work/sources"
         --buildpath="$work/eb/build" --tmpdir="$work/tmp"
         --modules-tool=Lmod --module-syntax=Lua --trace)
# EasyBuild refuses root unless told; a throwaway install path is the
# case its option is for
[ "$(id -u)" -ne 0 ] || eb_opts+=(--allow-use-as-root-and-accept-consequences)
say "eb $(basename "$easyconfig") (log: $work/eb.log)"
# a clean slate: no configuration of EasyBuild from the environment or
# from configuration files (it reads them from the XDG folders), no loaded
# modules
mkdir -p "$work/xdg"
if ! env $(env | sed -n 's/^\(EASYBUILD_[A-Z_]*\)=.*/-u \1/p') \
        XDG_CONFIG_HOME="$work/xdg" XDG_CONFIG_DIRS="$work/xdg" TMPDIR="$work/tmp" \
        PATH="$venv/bin:$PATH" bash -c '
        . "$1"; shift; module purge >/dev/null 2>&1
        exec eb "$@"' eb "$lmod_init" "${eb_opts[@]}" \
        "$easyconfig" >"$work/eb.log" 2>&1; then
    grep -E "ERROR|FAILED|failed" "$work/eb.log" | tail -20
    tail -20 "$work/eb.log"
    fail "eb failed (SVP_EB_KEEP=1 keeps $work/eb.log and the build's own log)"
fi
grep -E "sanity check|COMPLETED|build succeeded" "$work/eb.log" | sed 's/^/  /'
eb_done=$(date +%s)

# ---- 4. the module -------------------------------------------------------------
mkdir "$work/run"
# a login shell's PATH, nothing of the build: what the module gives is all
# svdpipe has
env -i HOME="$HOME" PATH=/usr/bin:/bin TERM=dumb bash -c '
    set -u
    . "$1"
    module use "$2/modules/all"
    module load svdpipe || exit 1
    cd "$3" || exit 1
    n=0 bad=0
    ok()  { n=$((n+1)); echo "ok $n - $1"; }
    nok() { n=$((n+1)); bad=$((bad+1)); echo "not ok $n - $1"; sed "s/^/# /" err | tail -15; }
    [ "$(command -v svdworker)" = "$EBROOTSVDPIPE/bin/svdworker" ] &&
        ok "module load svdpipe: svdworker is $EBROOTSVDPIPE/bin/svdworker" ||
        { echo "$PATH" >err; nok "svdworker from the module"; }
    case ":${MANPATH:-}:" in
    *":$EBROOTSVDPIPE/share/man:"*) ok "the man pages are on MANPATH" ;;
    *) echo "MANPATH=${MANPATH:-}" >err; nok "man pages on MANPATH" ;;
    esac
    SVP_THREADS=1 svdworker --set samples=2 --set output.dir=out >err 2>&1 &&
        [ -f out/sample_000001.safetensors ] &&
        ok "svdworker runs the built-in default job in one process" ||
        nok "the default job"
    share=$EBROOTSVDPIPE/share/svdpipe
    svdlaunch check "$share/etc/sim_4rank.yaml" >err 2>&1 &&
        svdlaunch plan "$share/etc/sim_4rank.yaml" --hardware "$share/etc/hardware/cpu-sim.yaml" >>err 2>&1 &&
        ok "svdlaunch check and plan on the installed example" ||
        nok "svdlaunch check/plan"
    svdtool init --model-config-dir svd-mini --seed 1 --output model >err 2>&1 &&
        SVP_THREADS=1 svdworker "$share/etc/demo/demo.yaml" --set model.path=model \
            --set output.dir=demo --set steps=2 --set samples=1 --set video.num_frames=3 \
            --set video.decode_chunk_size=3 >>err 2>&1 &&
        [ -f demo/sample_000000/sample.json ] &&
        ok "the demo model from its installed configs, and the installed demo spec" ||
        nok "svdtool init svd-mini and the demo spec"
    if [ -f "$EBROOTSVDPIPE/lib/svdpipe/svdpipe_cuda.so" ]; then
        # with or without a GPU here: the module is loaded from the install
        # path (without one the run then stops on the driver)
        SVP_THREADS=1 svdworker "$share/etc/demo/demo.yaml" --set model.path=model \
            --set output.dir=cuda --set device=cuda --set log.level=debug --set steps=2 \
            --set samples=1 --set video.num_frames=3 --set video.decode_chunk_size=3 >err 2>&1
        grep -qF "loaded the cuda backend module $EBROOTSVDPIPE/lib/svdpipe/svdpipe_cuda.so" err &&
            ok "device: cuda loads svdpipe_cuda.so from the module" ||
            nok "the CUDA module from the install path"
    else
        n=$((n+1)); echo "ok $n - the CUDA module # SKIP built without CUDA"
    fi
    echo "1..$n"
    exit $((bad > 0))
' run "$lmod_init" "$work/eb" "$work/run" | sed 's/^/  /'
rc=${PIPESTATUS[0]}
end=$(date +%s)
[ "$rc" -eq 0 ] || fail "svdpipe from the module (above)"
say "passed in $((end - start)) s: EasyBuild and Lmod $((eb_start - start)) s," \
    "eb $((eb_done - eb_start)) s, the module's checks $((end - eb_done)) s"

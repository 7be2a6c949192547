#!/bin/sh
# gpu-bundle.sh [SRCDIR]: fills SRCDIR/deps/ (git-ignored) with what
# bench/gpu-check.sh needs on a GPU node without network beside the source
# tree itself (`make gpu-bundle` calls it).
#
# The layout that travels is the source tree as checked out (its tracked
# files) plus deps/, and nothing else: no release tarball, which would hold
# tests/data a second time.  deps/ holds
#   - root.tar.xz: the Debian packages of every non-CUDA dependency
#     (headers, libraries, pkg-config) unpacked into one root, less their
#     static archives, documentation and LAPACK (gpu-check.sh unpacks it
#     into deps/root: no root rights, no package manager).  As .debs they
#     were 24 MiB; this is 12 MiB (libopenblas.a alone was most of the
#     difference);
#   - autotools.tar.gz: configure, Makefile.in and the rest of what
#     autoreconf generates, so the node needs no autotools;
#   - diffusers' wheel (with the two pure-Python packages it needs beyond
#     PyTorch's) for the side-by-side timing.
# The .debs themselves are kept in _debs/ (git-ignored, does not travel).
# The GPU node brings the driver, nvcc, cuBLAS/cuDNN, a C compiler with make,
# and Python with PyTorch.  The packages are this machine's (Debian 12,
# glibc 2.36): the node needs glibc 2.36 or newer (Ubuntu 24.04, RHEL 10;
# not Ubuntu 22.04).
#
# It fails when the tree's tracked files plus deps/ exceed 56 MiB: a GPU
# machine that takes a 64 MiB working tree keeps 8 MiB to spare for
# untracked files and results.
#
# Network is needed here, once: apt-get download and pip download.
set -eu

top=$(cd "${1:-$(dirname "$0")/..}" && pwd)
deps=$top/deps
max_bytes=$((56 * 1024 * 1024))

# the -dev packages and what they need at build and run time, beyond a
# base system (libc, libstdc++, zlib, ssl's base libraries); ucx-utils for
# bench/gpu-handoff.sh's ucx_info and ucx_perftest
debs="libpmix-dev libpmix2 libevent-dev libevent-2.1-7 libevent-core-2.1-7
libevent-extra-2.1-7 libevent-openssl-2.1-7 libevent-pthreads-2.1-7
libhwloc-dev libhwloc15 libhwloc-plugins libnuma-dev libnuma1 libltdl7
libmunge2 libpciaccess0 libucx-dev libucx0 ucx-utils libibverbs1
ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libyaml-dev
libyaml-0-2 libjansson-dev libjansson4 libopenblas-dev
libopenblas-pthread-dev libopenblas0 libopenblas0-pthread libgfortran5
libquadmath0 libgomp1 libpng-dev libpng16-16 zlib1g-dev libjpeg-dev
libjpeg62-turbo-dev libjpeg62-turbo libcriterion-dev libcriterion3
libgit2-1.5 libnanomsg5 libhttp-parser2.9 libmbedcrypto7 libmbedtls14
libmbedx509-1 libssh2-1 libffi8 libgssapi-krb5-2 libk5crypto3 libkeyutils1
libkrb5-3 libkrb5support0 libnsl2 libtirpc3 libtirpc-common libssl3
pkgconf pkgconf-bin libpkgconf3 pkg-config"

cache=$top/_debs
mkdir -p "$deps" "$cache"
# ---- the packages: fetched once, kept across runs ----
get=""
for p in $debs; do
    ls "$cache/${p}_"*.deb >/dev/null 2>&1 || get="$get $p"
done
if [ -n "$get" ]; then
    # shellcheck disable=SC2086
    (cd "$cache" && apt-get -o APT::Sandbox::User=root download $get >/dev/null) ||
        { echo "gpu-bundle: apt-get download failed" >&2; exit 1; }
fi
rm -f "$deps"/*.deb
if [ ! -f "$deps/root.tar.xz" ] || [ -n "$(find "$cache" -name '*.deb' -newer "$deps/root.tar.xz")" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    for d in "$cache"/*.deb; do
        dpkg-deb -x "$d" "$work" || { echo "gpu-bundle: cannot unpack $d" >&2; exit 1; }
    done
    rm -rf "$work/usr/share/doc" "$work/usr/share/man" "$work/usr/share/info" \
        "$work/usr/share/locale" "$work/usr/share/lintian" "$work/usr/share/bug"
    find "$work" -name '*.a' -delete
    rm -f "$work"/usr/lib/*-linux-gnu/openblas-pthread/liblapack*
    (cd "$work" && tar -cf - .) | xz -6 -T0 >"$deps/root.tar.xz.tmp" &&
        [ -s "$deps/root.tar.xz.tmp" ] && mv "$deps/root.tar.xz.tmp" "$deps/root.tar.xz" ||
        { echo "gpu-bundle: cannot pack deps/root.tar.xz" >&2; exit 1; }
fi
if ! ls "$deps"/diffusers-*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        -d "$deps" diffusers importlib_metadata zipp ||
        { echo "gpu-bundle: pip download of diffusers failed" >&2; exit 1; }
fi

# ---- the generated build system ----
# Listed in the order make compares their times: gpu-check.sh extracts
# them with fresh times in this order, so no regeneration rule fires.
(cd "$top" && { [ -x configure ] && [ configure -nt configure.ac ] &&
                [ Makefile.in -nt Makefile.am ]; } || autoreconf -fi >/dev/null 2>&1) ||
    { echo "gpu-bundle: autoreconf failed" >&2; exit 1; }
gen=""
for f in aclocal.m4 m4/libtool.m4 m4/lt*.m4 configure config.h.in Makefile.in build-aux/*; do
    [ -f "$top/$f" ] && [ "$f" != build-aux/.keep ] && gen="$gen $f"
done
# shellcheck disable=SC2086
(cd "$top" && tar -cf "$deps/autotools.tar" $gen) &&
    gzip -9f "$deps/autotools.tar" ||
    { echo "gpu-bundle: cannot pack the generated build system" >&2; exit 1; }

# the source's version, for the results' header where no .git travels
(cd "$top" && git describe --always --dirty 2>/dev/null || echo unknown) >"$deps/source-version"

# ---- what travels ----
# deps/root is what gpu-check.sh unpacks on the node: it must not travel.
rm -rf "$deps/root"
tree_bytes=$(cd "$top" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
other_bytes=$(cd "$top" && git ls-files -z -o --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -n 1 | cut -f1)
deps_bytes=$(du -sb "$deps" | cut -f1)
total=$((tree_bytes + ${other_bytes:-0} + deps_bytes))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "gpu-bundle: tracked tree $(mib "$tree_bytes"), untracked $(mib "${other_bytes:-0}"), deps/ $(mib "$deps_bytes"): $(mib "$total") to travel"
if [ "$total" -gt "$max_bytes" ]; then
    echo "gpu-bundle: over $(mib "$max_bytes"), the most that leaves room under a 64 MiB limit" >&2
    exit 1
fi
echo "gpu-bundle: on the GPU node, with the tree and deps/ copied there:"
echo "    sh bench/gpu-check.sh --quick --out RESULTS_DIR"

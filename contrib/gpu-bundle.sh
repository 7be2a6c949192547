#!/bin/sh
# gpu-bundle.sh DIST_TARBALL OUT.tar.gz: the bundle bench/gpu-check.sh runs
# from on an air-gapped GPU node (`make gpu-bundle` calls it).
#
# The bundle is the source release plus, under deps/, the Debian packages of
# every non-CUDA dependency (headers, libraries, pkg-config), which
# gpu-check.sh unpacks into a private root with dpkg-deb -x: no root rights,
# no package manager, no network.  The GPU node brings the driver, nvcc,
# cuBLAS/cuDNN, a C compiler with make, and Python with PyTorch; diffusers'
# wheel (with the two pure-Python packages it needs beyond those) is bundled
# for the side-by-side timing.  Building there, against that node's CUDA and
# glibc, avoids shipping binaries built against another toolkit.  The
# packages are this machine's (Debian 12, glibc 2.36): the node needs glibc
# 2.36 or newer (Ubuntu 24.04, RHEL 10; not Ubuntu 22.04).
#
# Network is needed here, once: apt-get download and pip download.
set -eu

[ $# -eq 2 ] || { echo "usage: gpu-bundle.sh DIST_TARBALL OUT.tar.gz" >&2; exit 2; }
dist=$1
out=$2
max_bytes=$((64 * 1024 * 1024))

# the -dev packages and what they need at build and run time, beyond a
# base system (libc, libstdc++, zlib, ssl's base libraries)
debs="libpmix-dev libpmix2 libevent-dev libevent-2.1-7 libevent-core-2.1-7
libevent-extra-2.1-7 libevent-openssl-2.1-7 libevent-pthreads-2.1-7
libhwloc-dev libhwloc15 libhwloc-plugins libnuma-dev libnuma1 libltdl7
libmunge2 libpciaccess0 libucx-dev libucx0 libibverbs1 ibverbs-providers
librdmacm1 libnl-3-200 libnl-route-3-200 libyaml-dev libyaml-0-2
libjansson-dev libjansson4 libopenblas-dev libopenblas-pthread-dev
libopenblas0 libopenblas0-pthread libgfortran5 libquadmath0 libgomp1
libpng-dev libpng16-16 zlib1g-dev libjpeg-dev libjpeg62-turbo-dev
libjpeg62-turbo libcriterion-dev libcriterion3 libgit2-1.5 libnanomsg5
libhttp-parser2.9 libmbedcrypto7 libmbedtls14 libmbedx509-1 libssh2-1
libffi8 libgssapi-krb5-2 libk5crypto3 libkeyutils1 libkrb5-3
libkrb5support0 libnsl2 libtirpc3 libtirpc-common libssl3 pkgconf
pkgconf-bin libpkgconf3 pkg-config"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$dist"
top=$(ls "$work")
mkdir -p "$work/$top/deps"
(cd "$work/$top/deps" && apt-get download $debs >/dev/null) ||
    { echo "gpu-bundle: apt-get download failed" >&2; exit 1; }
python3 -m pip download --quiet --no-deps --only-binary=:all: \
    -d "$work/$top/deps" diffusers importlib_metadata zipp ||
    { echo "gpu-bundle: pip download of diffusers failed" >&2; exit 1; }
tar -C "$work" -czf "$out.tmp" "$top"
size=$(wc -c <"$out.tmp")
if [ "$size" -gt "$max_bytes" ]; then
    rm -f "$out.tmp"
    echo "gpu-bundle: $size bytes, over the 64 MiB limit" >&2
    exit 1
fi
mv "$out.tmp" "$out"
echo "gpu-bundle: $out, $size bytes; on the GPU node:"
echo "    tar xzf $(basename "$out") && sh $top/bench/gpu-check.sh"

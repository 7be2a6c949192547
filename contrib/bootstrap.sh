#!/bin/sh
# Sets up a build of svdpipe on Debian 12: installs the Debian packages it
# needs (when missing), generates configure, configures into _build/ and
# builds.  Idempotent: a second run only rebuilds what changed.
#
#   contrib/bootstrap.sh            as root (or with sudo available)
#   SVP_BUILD_DIR=dir CONFIGURE_FLAGS="--with-cuda=no" contrib/bootstrap.sh
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SVP_BUILD_DIR:-$top/_build}

# Build tools, the libraries svdpipe links, and what the tests drive: a real
# Slurm (slurmctld, slurmd, munge), Open MPI's mpirun as a second PMIx
# launcher, ucx_perftest for the hand-off benchmark, jq and xmllint for
# the report tests, python3-venv for the WebDataset reader test (its venv
# takes the webdataset package from PyPI); clang, clang-format and
# clang-tidy for the checks CI runs beside the tests (doc/HACKING.md,
# "Checks").  libpmix-dev is also a
# runtime need of Slurm: its mpi_pmix plugin dlopens the unversioned
# libpmix.so that only the -dev package ships.
packages="autoconf automake libtool pkg-config make gcc
  libpmix-dev libpmix-bin libucx-dev ucx-utils libyaml-dev libjansson-dev libarchive-dev
  libopenblas-dev libpng-dev libjpeg-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
  libcriterion-dev
  slurmctld slurmd slurm-client munge openmpi-bin procps iproute2
  jq libxml2-utils python3-venv
  clang clang-format-14 clang-tidy-14"

missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "bootstrap: installing Debian packages:$missing"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
    echo "bootstrap: generating configure"
    autoreconf -fi
fi

mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ]; then
    echo "bootstrap: configuring in $build"
    # shellcheck disable=SC2086
    "$top/configure" ${CONFIGURE_FLAGS:-}
fi
make -j"$(nproc)"

#!/usr/bin/env bash
# Prepares .device/ (git-ignored) with what scripts/gpu-run.sh needs on a GPU machine that has CUDA but no
# package registry: the Kokkos / Kokkos Kernels 3.4.01 sources from Debian's trilinos package, GoogleTest's source
# (Debian's googletest), zlib's headers and static library, the Fashion-MNIST files, and the JAX peer.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh openmp >/dev/null  # makes sure the trilinos sources and apt packages are here
cache=${KTR_DEPS_CACHE:-$HOME/.cache/ktr}
rm -rf .device && mkdir -p .device/src .device/zlib/include .device/zlib/lib .device/data
cp -r "$cache/src-trilinos-13.2.0/kokkos" "$cache/src-trilinos-13.2.0/kokkos-kernels" .device/src/
cp -r /usr/src/googletest .device/src/googletest
cp /usr/include/zlib.h /usr/include/zconf.h .device/zlib/include/
cp "/usr/lib/$(gcc -print-multiarch)/libz.a" .device/zlib/lib/
cp /usr/share/datasets/fashion-mnist/*.gz .device/data/
[[ -f ../shared/peers/jax_peer.py ]] && cp ../shared/peers/jax_peer.py .device/
du -sh .device

#!/usr/bin/env bash
# Prepares .device/ (git-ignored) with what scripts/gpu-run.sh needs on a GPU machine that has CUDA, cmake, g++ and
# python3 but no package registry, trimmed to fit the 64 MiB a device run may carry:
#   src.tar.gz      Kokkos + Kokkos Kernels 3.4.01 sources (from Debian's trilinos package) without their docs,
#                   examples, benchmarks and tests, and GoogleTest's source without GoogleMock (Debian's googletest)
#   zlib/           zlib's headers and static library
#   data/           the four Fashion-MNIST .gz files, as shipped
#   jax_peer.py     the JAX peer
# Prints the size of each part and the total.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/bootstrap.sh openmp >/dev/null  # makes sure the trilinos sources and apt packages are here
cache=${KTR_DEPS_CACHE:-$HOME/.cache/ktr}
rm -rf .device && mkdir -p .device/zlib/include .device/zlib/lib .device/data
stage=$(mktemp -d "${TMPDIR:-/tmp}/ktr-device.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp -r "$cache/src-trilinos-13.2.0/kokkos" "$cache/src-trilinos-13.2.0/kokkos-kernels" "$stage/"
cp -r /usr/src/googletest "$stage/googletest"
# Test, example and benchmark folders are only entered when their CMake options are on (they are off in
# scripts/bootstrap.sh); documentation and GoogleMock are never needed (gpu-run.sh builds with BUILD_GMOCK=OFF).
# kokkos/example/CMakeLists.txt itself is always entered: it stays, its subfolders go.
(cd "$stage" && find kokkos/example -mindepth 1 -maxdepth 1 ! -name CMakeLists.txt -exec rm -rf {} + &&
  rm -rf kokkos/doc kokkos/benchmarks kokkos/core/unit_test kokkos/core/perf_test \
  kokkos/containers/unit_tests kokkos/containers/performance_tests kokkos/algorithms/unit_tests \
  kokkos-kernels/unit_test kokkos-kernels/perf_test kokkos-kernels/example kokkos-kernels/test_common \
  googletest/googlemock googletest/googletest/test googletest/googletest/samples googletest/googletest/docs \
  googletest/docs)
tar czf .device/src.tar.gz -C "$stage" kokkos kokkos-kernels googletest
cp /usr/include/zlib.h /usr/include/zconf.h .device/zlib/include/
cp "/usr/lib/$(gcc -print-multiarch)/libz.a" .device/zlib/lib/
cp /usr/share/datasets/fashion-mnist/*.gz .device/data/
[[ -f ../shared/peers/jax_peer.py ]] && cp ../shared/peers/jax_peer.py .device/
du -sh .device/* .device

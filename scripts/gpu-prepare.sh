#!/usr/bin/env bash
# Prepares .device/ (git-ignored), what scripts/gpu-run.sh needs on a lent GPU machine, here, on a machine without
# a GPU. The GPU machine compiles nothing:
#   bin/ktr.gz, bin/ktr_tests.gz  build/cuda's binaries (sm_90; CUDA runtime, libstdc++, libgcc, zlib and
#                           yaml-cpp linked in, no host BLAS, NCCL off; cuBLAS is found on the GPU machine),
#                           stripped and gzipped (23 MiB become 6: gpu-run.sh unpacks them)
#   data/                   the four Fashion-MNIST .gz files, as shipped (the JAX peer and the training stage)
#   jax_peer.py             the JAX peer
#   jax_bf16_peer.py        ktr's own bf16 JAX peer (bench/peers/), for the bf16 stage, and idx_data.py, its
#                           IDX reader
#   MANIFEST                what was carried, from which commit, and its sizes
# Builds build/cuda first if its binaries are missing or older than the sources (scripts/build.sh cuda). Checks
# (scripts/check-travel.sh) that the binaries carry sm_90 code, need no shared library but libcublas.so.13,
# libcublasLt.so.13 and glibc's own, and no glibc newer than 2.35; and that .device/ stays under 48 MiB (a device
# run carries at most 64 MiB with the working tree). Prints the sizes.
#   KTR_GPU_SOURCE=1  also packs src.tar.gz (Kokkos, Kokkos Kernels, GoogleTest, CLI11 and nlohmann-json sources,
#                     yaml-cpp's headers, archive and CMake package; about 3 MiB more) for gpu-run.sh's fallback,
#                     KTR_GPU_BUILD_FROM_SOURCE=1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { echo "gpu-prepare: $*" >&2; exit 1; }
build=build/cuda
limit_mib=48

newest_source=$(git ls-files -z -- '*.cpp' '*.hpp' '*.h' 'CMakeLists.txt' '*/CMakeLists.txt' '*.cmake' |
  xargs -0 stat -c %Y | sort -n | tail -n1)
if [[ ! -x $build/apps/ktr || ! -x $build/tests/ktr_tests ]] ||
  (( $(stat -c %Y "$build/apps/ktr") < newest_source || $(stat -c %Y "$build/tests/ktr_tests") < newest_source )); then
  echo "gpu-prepare: building $build (scripts/build.sh cuda)" >&2
  scripts/build.sh cuda >/dev/null
fi

# What travels must run there: sm_90 code, and no shared library but cuBLAS and glibc's, glibc <= 2.35.
scripts/check-travel.sh "$build/apps/ktr" "$build/tests/ktr_tests" ||
  die "the binaries above cannot travel (configure build/cuda with scripts/build.sh cuda)"

rm -rf .device && mkdir -p .device/bin .device/data
stripped=$(mktemp -d "${TMPDIR:-/tmp}/ktr-stripped.XXXXXX")
strip -o "$stripped/ktr" "$build/apps/ktr"
strip -o "$stripped/ktr_tests" "$build/tests/ktr_tests"
glibc=$(objdump -T "$stripped/ktr" "$stripped/ktr_tests" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n1 |
  sed 's/GLIBC_//')
gzip -9c "$stripped/ktr" >.device/bin/ktr.gz
gzip -9c "$stripped/ktr_tests" >.device/bin/ktr_tests.gz
rm -rf "$stripped"
cp /usr/share/datasets/fashion-mnist/*.gz .device/data/
peer=../shared/peers/jax_peer.py
[[ -f $peer ]] && cp "$peer" .device/ || echo "gpu-prepare: no $peer: the JAX stage will say it has no peer" >&2
cp bench/peers/jax_bf16_peer.py bench/peers/idx_data.py .device/  # ktr's own bf16 peer (Flax mixed precision)

if [[ ${KTR_GPU_SOURCE:-0} == 1 ]]; then
  stage=$(mktemp -d "${TMPDIR:-/tmp}/ktr-device.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  src=${KTR_DEPS_CACHE:-$HOME/.cache/ktr}/src-trilinos-13.2.0
  [[ -f $src/.complete ]] || scripts/bootstrap.sh openmp >/dev/null
  cp -r "$src/kokkos" "$src/kokkos-kernels" "$stage/"
  cp -r /usr/src/googletest "$stage/googletest"
  # CLI11 and nlohmann-json (header-only) with their CMake configs, and yaml-cpp (headers, the static archive the
  # executables link, the shared library its CMake package names), as a prefix: usr/{include,share/cmake,lib}.
  multiarch=$(gcc -print-multiarch)
  mkdir -p "$stage/usr/include" "$stage/usr/share/cmake" "$stage/usr/lib/$multiarch/cmake" &&
    cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/yaml-cpp "$stage/usr/include/" &&
    cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$stage/usr/share/cmake/" &&
    cp -r "/usr/lib/$multiarch/cmake/yaml-cpp" "$stage/usr/lib/$multiarch/cmake/" &&
    cp -a "/usr/lib/$multiarch"/libyaml-cpp.a "/usr/lib/$multiarch"/libyaml-cpp.so* "$stage/usr/lib/$multiarch/"
  # Only what a Release build of the libraries reads: no tests, examples, benchmarks, documentation or GoogleMock.
  (cd "$stage" && find kokkos/example -mindepth 1 -maxdepth 1 ! -name CMakeLists.txt -exec rm -rf {} + &&
    rm -rf kokkos/doc kokkos/benchmarks kokkos/core/unit_test kokkos/core/perf_test \
      kokkos/containers/unit_tests kokkos/containers/performance_tests kokkos/algorithms/unit_tests \
      kokkos-kernels/unit_test kokkos-kernels/perf_test kokkos-kernels/example kokkos-kernels/test_common \
      googletest/googlemock googletest/googletest/test googletest/googletest/samples googletest/googletest/docs \
      googletest/docs)
  tar czf .device/src.tar.gz -C "$stage" kokkos kokkos-kernels googletest usr
fi

{
  echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!.device' || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%FT%TZ) from $build ($(cat "$build/.kokkos_root" 2>/dev/null))"
  scripts/fatbin-archs.py "$build/apps/ktr" | sed 's/^/ktr device code: /'
  echo "glibc needed: $glibc"
  du -b .device/bin/* .device/data .device/*.py .device/*.tar.gz 2>/dev/null || true
} >.device/MANIFEST
du -sh .device/*
du -sh .device
total=$(du -sm .device | cut -f1)
(( total < limit_mib )) || die ".device is ${total} MiB, over the ${limit_mib} MiB limit (generate the data there with ktr synth)"
echo "gpu-prepare: .device is ${total} MiB (limit ${limit_mib}); carry it: run --carry .device scripts/gpu-run.sh"

#!/usr/bin/env bash
# Builds and runs tests/consumer against ktr, as a separate project:
#   run.sh package BUILD_DIR KOKKOS_ROOT CXX_COMPILER SOURCE_DIR   installs BUILD_DIR into a temporary prefix first
#   run.sh subdir  BUILD_DIR KOKKOS_ROOT CXX_COMPILER SOURCE_DIR   takes ktr's sources through add_subdirectory
set -euo pipefail
mode=$1 build=$2 kokkos=$3 cxx=$4 src=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix_path=$kokkos
extra=()
if [[ $mode == package ]]; then
  cmake --install "$build" --prefix "$work/prefix" >/dev/null
  prefix_path="$work/prefix;$kokkos"
else
  # add_subdirectory compiles ktr's library again inside this project: unoptimised (build type None: no -O, no
  # -g), in unity batches and only what the consumer links, since this test checks that the project embeds, builds
  # and trains, not how fast (optimised and a source at a time, it was 68 of the OpenMP suite's 90 s).
  extra=(-DCMAKE_BUILD_TYPE=None -DCMAKE_UNITY_BUILD=ON)
fi
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
cmake -G "$generator" -S "$here" -B "$work/build" -DKTR_MODE="$mode" -DKTR_SOURCE_DIR="$src" \
  -DCMAKE_PREFIX_PATH="$prefix_path" -DKokkos_ROOT="$kokkos" -DCMAKE_CXX_COMPILER="$cxx" "${extra[@]}" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" --target consumer -j "${KTR_JOBS:-2}" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; exit 1; }
OMP_PROC_BIND=false "$work/build/consumer"

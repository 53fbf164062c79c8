#!/usr/bin/env bash
# Installs the ktr build tree into a temporary prefix and builds and runs tests/consumer against it.
#   run.sh BUILD_DIR KOKKOS_ROOT CXX_COMPILER
set -euo pipefail
build=$1 kokkos=$2 cxx=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix;$kokkos" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"

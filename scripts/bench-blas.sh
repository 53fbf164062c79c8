#!/usr/bin/env bash
# The host BLAS as a measured choice: OpenBLAS (ktr's default) and BLIS, Debian's OpenMP builds of both, at the
# gemm shapes of ktr's training steps, interleaved (bench/blas_compare.cpp), at 1 and 2 threads or those given.
#   scripts/bench-blas.sh [THREADS...]        (after scripts/build.sh openmp)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/packages.sh
ktr_install_packages blas-compare
tool=build/openmp/bench/ktr_blas_compare
[[ -x $tool ]] || { echo "bench-blas: $tool is missing (run scripts/build.sh openmp)" >&2; exit 2; }
lib=/usr/lib/$(gcc -print-multiarch)
threads=("$@")
((${#threads[@]})) || threads=(1 2)
for t in "${threads[@]}"; do
  OMP_NUM_THREADS=$t OMP_PROC_BIND=false "$tool" "$lib/openblas-openmp/libopenblas.so" "$lib/blis-openmp/libblis.so"
  echo
done

#!/usr/bin/env bash
# Bootstraps the dependencies for a flavour and configures + builds ktr into build/<flavour>.
#   scripts/build.sh [openmp|openmp-mpi|serial-debian|cuda|hip|openmp-asan] [extra cmake args...]
# openmp-asan: the OpenMP flavour with AddressSanitizer + UndefinedBehaviorSanitizer (any report is fatal).
# openmp-mpi: the OpenMP flavour with data-parallel training over OpenMPI (-Dktr_ENABLE_MPI=ON).
# Prints the build folder as its last line.
set -euo pipefail
flavour=${1:-openmp}
shift || true
cd "$(dirname "${BASH_SOURCE[0]}")/.."
deps=$flavour
extra=()
if [[ $flavour == openmp-asan ]]; then
  deps=openmp
  # C and Fortran too: the C and Fortran examples load libktr_c.so, whose sanitizer runtime must come first.
  san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  extra+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS=$san" "-DCMAKE_C_FLAGS=$san"
          "-DCMAKE_Fortran_FLAGS=$san")
fi
[[ $flavour == openmp-mpi ]] && extra+=(-Dktr_ENABLE_MPI=ON)
root=$(scripts/bootstrap.sh "$deps" | tail -n1)
root=${root#KTR_KOKKOS_ROOT=}
build=build/$flavour
case $flavour in
  # The toolkit's own nvcc, not whatever wrapper the machine puts first on PATH (a base image may ship a
  # /usr/local/bin/nvcc script that no package owns): CMake records the path it finds.
  # The binaries scripts/gpu-prepare.sh carries to a GPU machine: the CUDA runtime, libstdc++, libgcc and zlib
  # linked in, NCCL off (the toolkit's libnccl would have to travel too); cuBLAS stays shared.
  cuda) cuda_home=$(realpath "${CUDA_HOME:-/usr/local/cuda}")
        export PATH="$cuda_home/bin:$PATH"
        extra+=(-DCMAKE_CXX_COMPILER="$root/bin/nvcc_wrapper" -DCUDAToolkit_ROOT="$cuda_home"
                -Dktr_STATIC_RUNTIME=ON -Dktr_ENABLE_NCCL=OFF) ;;
  hip) extra+=(-DCMAKE_CXX_COMPILER=hipcc) ;;
esac
# A different Kokkos (new recipe, Kokkos_ROOT) invalidates the cached package paths: start the cache afresh.
if [[ -f "$build/CMakeCache.txt" && "$(cat "$build/.kokkos_root" 2>/dev/null)" != "$root" ]]; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
mkdir -p "$build" && echo "$root" >"$build/.kokkos_root"
cmake -S . -B "$build" -DKokkos_ROOT="$root" -DKokkosKernels_ROOT="$root" "${extra[@]}" "$@" >&2
cmake --build "$build" -j "${KTR_JOBS:-$(nproc)}" >&2
echo "$build"

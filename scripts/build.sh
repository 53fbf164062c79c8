#!/usr/bin/env bash
# Bootstraps the dependencies for a flavour and configures + builds ktr into build/<flavour>.
#   scripts/build.sh [openmp|openmp-mpi|serial-debian|cuda|hip|openmp-asan] [extra cmake args...]
# openmp-asan: the OpenMP flavour with AddressSanitizer + UndefinedBehaviorSanitizer (any report is fatal).
# openmp-mpi: the OpenMP flavour with data-parallel training over OpenMPI (-Dktr_ENABLE_MPI=ON).
# KTR_TARGETS="a b": build only these targets (and what they link), not every target.
# KTR_UNITY_BUILD=1: a unity build (CMake batches the library's sources, 8 a translation unit: Kokkos's headers are
# parsed once a batch; nvcc spends 3.6 s of a 6 s translation unit on them). CI's compile-heavy stages use it; the
# README's test command (openmp) builds each source on its own, as a developer does.
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
  # -O1 -g1 (line tables: reports keep their function, file and line) compile in half the time of -O2 -g and
  # instrument the same code: every check the sanitizers make is still made.
  opt="-O1 -g1 -DNDEBUG"
  extra+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS=$san" "-DCMAKE_C_FLAGS=$san"
          "-DCMAKE_Fortran_FLAGS=$san" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$opt" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$opt"
          "-DCMAKE_Fortran_FLAGS_RELWITHDEBINFO=$opt")
fi
[[ $flavour == openmp-mpi ]] && extra+=(-Dktr_ENABLE_MPI=ON)
extra+=(-DCMAKE_UNITY_BUILD=$([[ ${KTR_UNITY_BUILD:-0} == 1 ]] && echo ON || echo OFF))
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
# Ninja where it is installed (scripts/packages.sh names ninja-build): it starts a target's objects before the
# targets it links are done, which keeps both cores busy at every library boundary; Make elsewhere (a GPU machine
# building from source without it).
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
# A different Kokkos (new recipe, Kokkos_ROOT) invalidates the cached package paths, and a folder made by the other
# generator cannot be reused: start the cache afresh.
if [[ -f "$build/CMakeCache.txt" ]] && { [[ "$(cat "$build/.kokkos_root" 2>/dev/null)" != "$root" ]] ||
     ! grep -qx "CMAKE_GENERATOR:INTERNAL=$generator" "$build/CMakeCache.txt"; }; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
mkdir -p "$build" && echo "$root" >"$build/.kokkos_root"
cmake -G "$generator" -S . -B "$build" -DKokkos_ROOT="$root" -DKokkosKernels_ROOT="$root" "${extra[@]}" "$@" >&2
read -r -a targets <<<"${KTR_TARGETS:-}"
cmake --build "$build" -j "${KTR_JOBS:-$(nproc)}" ${targets[@]+--target "${targets[@]}"} >&2
echo "$build"

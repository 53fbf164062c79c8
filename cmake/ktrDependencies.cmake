# Finds Kokkos (3.4.01 through 4.x) and Kokkos Kernels, adapting Debian's binary Trilinos packaging, whose
# CMake config defines neither Kokkos::kokkos nor include directories on its targets.
find_package(Kokkos 3.4 CONFIG REQUIRED)
find_package(KokkosKernels CONFIG REQUIRED)
include(ktrKokkosShim)
message(STATUS "ktr: Kokkos ${Kokkos_VERSION}, devices: ${Kokkos_DEVICES}")
include(ktrPicProbe)  # ktr_C_API_SHARED: can libktr_c.so carry this Kokkos?

# Binaries that travel (scripts/gpu-prepare.sh): the GPU runtime, libstdc++, libgcc and zlib linked in, so that a
# machine with only the driver and the vendor BLAS runs them.
option(ktr_STATIC_RUNTIME "Link the CUDA runtime, libstdc++, libgcc and zlib statically" OFF)
if(ktr_STATIC_RUNTIME)
  set(ZLIB_USE_STATIC_LIBS ON)  # CMake >= 3.24
endif()
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)  # header-only, used privately (safetensors headers, JSON output)

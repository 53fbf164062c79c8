# Debian's libtrilinos-kokkos-dev / libtrilinos-kokkos-kernels-dev export TriBITS targets (trilinos_kokkoscore,
# trilinos_kokkoskernels). Their Kokkos::kokkos, when present, points at <prefix>/include, which the multiarch
# library folder turns into /usr/lib/include; Kokkos::kokkoskernels does not exist. Mend both.
if(TARGET trilinos_kokkoscore)
  find_path(ktr_TRILINOS_INCLUDE_DIR Kokkos_Core.hpp PATHS /usr/include PATH_SUFFIXES trilinos REQUIRED)
  if(NOT TARGET Kokkos::kokkos)
    add_library(Kokkos::kokkos INTERFACE IMPORTED)
    set_property(TARGET Kokkos::kokkos PROPERTY INTERFACE_LINK_LIBRARIES
      trilinos_kokkosalgorithms trilinos_kokkoscontainers trilinos_kokkoscore)
  endif()
  set_property(TARGET Kokkos::kokkos PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${ktr_TRILINOS_INCLUDE_DIR}")
  set_property(TARGET Kokkos::kokkos PROPERTY INTERFACE_COMPILE_FEATURES cxx_std_17)
  if(NOT TARGET Kokkos::kokkoskernels AND TARGET trilinos_kokkoskernels)
    add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
    set_property(TARGET Kokkos::kokkoskernels PROPERTY INTERFACE_LINK_LIBRARIES trilinos_kokkoskernels Kokkos::kokkos)
  endif()
  message(STATUS "ktr: using Debian's Trilinos Kokkos through the shim (${ktr_TRILINOS_INCLUDE_DIR})")
endif()
if(NOT TARGET Kokkos::kokkos OR NOT TARGET Kokkos::kokkoskernels)
  message(FATAL_ERROR "ktr: found Kokkos/KokkosKernels packages but not the Kokkos::kokkos / "
                      "Kokkos::kokkoskernels targets; set Kokkos_ROOT to a Kokkos install")
endif()

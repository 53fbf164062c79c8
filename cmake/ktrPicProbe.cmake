# Sets ktr_C_API_SHARED: whether a shared library can carry Kokkos and Kokkos Kernels, as libktr_c.so (the C and
# Fortran API) does. Yes where they are shared libraries, or static archives compiled position-independent (the
# bootstrap's); no for a Kokkos built the default way (static, no -fPIC). A try-compile links the archives whole
# into a small shared library, once per build folder (cached).
set(ktr_kokkos_archives)
foreach(t IN ITEMS Kokkos::kokkoscore Kokkos::kokkoscontainers Kokkos::kokkosalgorithms Kokkos::kokkossimd
               Kokkos::kokkoskernels)
  if(TARGET ${t})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
      get_target_property(location ${t} LOCATION)
      list(APPEND ktr_kokkos_archives ${location})
    endif()
  endif()
endforeach()
if(NOT ktr_kokkos_archives)
  set(ktr_C_API_SHARED ON)
else()
  if(NOT DEFINED ktr_KOKKOS_ARCHIVES_PIC)
    string(REPLACE ";" "|" archives "${ktr_kokkos_archives}")
    try_compile(ktr_KOKKOS_ARCHIVES_PIC ${CMAKE_BINARY_DIR}/CMakeFiles/ktr_pic_probe ${PROJECT_SOURCE_DIR}/cmake/pic_probe
                ktr_pic_probe CMAKE_FLAGS "-DKTR_PROBE_ARCHIVES=${archives}" "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
                OUTPUT_VARIABLE probe_log)
    if(NOT ktr_KOKKOS_ARCHIVES_PIC)
      file(WRITE ${CMAKE_BINARY_DIR}/CMakeFiles/ktr_pic_probe.log "${probe_log}")
    endif()
  endif()
  set(ktr_C_API_SHARED ${ktr_KOKKOS_ARCHIVES_PIC})
endif()

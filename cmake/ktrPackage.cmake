# Install rules and the exported package: consumers call find_package(ktr) and link ktr::ktr.
include(CMakePackageConfigHelpers)
install(TARGETS ktr EXPORT ktrTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Every header a public header reaches. The internals only ktr's own sources (and its tests, benchmarks and CLI,
# which build in the tree) include stay there: the Kokkos Tools counters, the kernel timer, the profiling-region
# helper, the host kernels' SIMD packs, direct/narrow kernels and their AVX512-BF16 versions, the device-side hash permutation, the element-wise
# ops, checked arithmetic, strict number parsing and output-path checks, the activation functors, the bias and
# activation passes and the schedule as kernels evaluate it. scripts/check-layers.sh verifies that no
# installed header includes one of them.
set(ktr_INTERNAL_HEADERS tools_counter.hpp kernel_timer.hpp region.hpp pack.hpp conv_direct.hpp dense_narrow.hpp
    dpbf16.hpp conv_direct_dpbf16.hpp dense_narrow_dpbf16.hpp permutation.hpp ops.hpp checked.hpp file.hpp
    activation_functors.hpp bias_act.hpp schedule_scale.hpp random.hpp sac.hpp)
set(ktr_internal_patterns)
foreach(h IN LISTS ktr_INTERNAL_HEADERS)
  list(APPEND ktr_internal_patterns PATTERN ${h} EXCLUDE)
endforeach()
foreach(dir IN LISTS ktr_LIBRARY_DIRS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ktr/${dir}
          FILES_MATCHING PATTERN "*.hpp" ${ktr_internal_patterns})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/ktr.hpp ${ktr_BUILD_INCLUDE}/ktr/ktr_config.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ktr)
install(EXPORT ktrTargets NAMESPACE ktr:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktr)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ktrConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ktrConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktr)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ktrConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ktrConfig.cmake ${PROJECT_BINARY_DIR}/ktrConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/ktrKokkosShim.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ktr)

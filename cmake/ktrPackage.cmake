# Install rules and the exported package: consumers call find_package(ktr) and link ktr::ktr.
include(CMakePackageConfigHelpers)
install(TARGETS ktr EXPORT ktrTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Every header a public header reaches; the test and benchmark instruments (Kokkos Tools counters, the kernel
# timer) and the profiling-region helper, which only ktr's own sources include, stay in the build tree.
foreach(dir IN LISTS ktr_LIBRARY_DIRS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ktr/${dir}
          FILES_MATCHING PATTERN "*.hpp"
          PATTERN "tools_counter.hpp" EXCLUDE PATTERN "kernel_timer.hpp" EXCLUDE PATTERN "region.hpp" EXCLUDE)
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

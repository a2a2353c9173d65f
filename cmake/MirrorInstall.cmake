# MirrorInstall.cmake — `cmake --install`: programs, public headers and the CMake package config, so that
# another project can `find_package(Mirror)` and link mirror::collectives (and the other libraries).
include(CMakePackageConfigHelpers)
install(EXPORT MirrorTargets NAMESPACE mirror:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Mirror)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/MirrorConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/MirrorConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Mirror)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/MirrorConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/MirrorConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/MirrorConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/FindNCCL.cmake ${CMAKE_CURRENT_LIST_DIR}/FindDNNL.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Mirror)

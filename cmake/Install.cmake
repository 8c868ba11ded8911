# cmake --install: the libraries, the header, the programs, a CMake package
# (find_package(vkattn CONFIG) -> vkattn::vkattn, vkattn::vkattn_static) with a
# version file, and a pkg-config file.
include(CMakePackageConfigHelpers)

set(VKATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vkattn)
install(TARGETS ${VKATTN_INSTALL_TARGETS} EXPORT vkattnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES include/vkattn.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(VKATTN_BUILD_TOOLS)
  install(TARGETS vkattn-cli vkattn-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT vkattnTargets NAMESPACE vkattn:: DESTINATION ${VKATTN_CMAKE_DIR})

configure_package_config_file(cmake/vkattnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/vkattnConfig.cmake INSTALL_DESTINATION ${VKATTN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vkattnConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkattnConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/vkattnConfigVersion.cmake
        DESTINATION ${VKATTN_CMAKE_DIR})

file(RELATIVE_PATH VKATTN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/vkattn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/vkattn.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkattn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

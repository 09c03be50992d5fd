# `cmake --install` puts libkfuse.so, the public headers, the tools, the
# Python package and a CMake package in the prefix, so that another project
# can
#   find_package(kfuse REQUIRED)
#   target_link_libraries(app PRIVATE kfuse::kfuse)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS kfuse EXPORT kfuseTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kfusec kfuse-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/kfuse DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The Python package, beside the library it loads: PREFIX/lib/python/kfuse
# (PYTHONPATH=PREFIX/lib/python), which finds PREFIX/lib/libkfuse.so.
install(DIRECTORY python/kfuse DESTINATION ${CMAKE_INSTALL_LIBDIR}/python
  PATTERN __pycache__ EXCLUDE)
install(EXPORT kfuseTargets NAMESPACE kfuse::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kfuse)

configure_package_config_file(cmake/kfuseConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kfuseConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kfuse)
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/kfuseConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/kfuseConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/kfuseConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kfuse)

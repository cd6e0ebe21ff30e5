# `cmake --install` puts the headers, the library, the binaries and a CMake package in place, so
# that an outside project does find_package(mploader REQUIRED) and links mploader::mploader.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MPLOADER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mploader)

install(TARGETS mploader EXPORT mploaderTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Each component installs itself (mploader_add_component, cmake/components.cmake); the package
# config includes the parts of those that have one.
get_property(MPLOADER_PACKAGED_COMPONENTS GLOBAL PROPERTY MPLOADER_PACKAGED_COMPONENTS)
install(DIRECTORY include/mploader DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(EXPORT mploaderTargets NAMESPACE mploader:: DESTINATION ${MPLOADER_CMAKE_DIR})

# A static mploader hands its private dependencies to the program that links it (as
# $<LINK_ONLY:...> in the export), so the package must find them again; a shared one needs
# only libtorch, whose headers its own headers include.
get_target_property(MPLOADER_LIBRARY_TYPE mploader TYPE)
configure_package_config_file(cmake/mploaderConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/mploaderConfig.cmake
  INSTALL_DESTINATION ${MPLOADER_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/mploaderConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mploaderConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/mploaderConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/mploaderPlugin.cmake
  DESTINATION ${MPLOADER_CMAKE_DIR})

if(TARGET mploader-bench)
  install(TARGETS mploader-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # The bench runs its Python peers through these scripts (bench/CMakeLists.txt and each
  # component's bench.cmake list them); the installed bench looks for them here, one folder
  # relative to its own location (bench/runners/run_pytorch.cc), so their names must differ.
  get_property(MPLOADER_BENCH_SCRIPTS GLOBAL PROPERTY MPLOADER_BENCH_SCRIPTS)
  install(FILES ${MPLOADER_BENCH_SCRIPTS} DESTINATION ${CMAKE_INSTALL_DATADIR}/mploader)
endif()
if(TARGET mploader-soak)
  install(TARGETS mploader-soak RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET mploader-manifest)
  install(TARGETS mploader-manifest RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET mploader-pack)
  install(TARGETS mploader-pack RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET mploader-report)
  install(TARGETS mploader-report RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The components wing: optional readers over the engine, each a folder under components/ with
# its own library target. components/list.cmake names them, one line each, in dependency order;
# each folder's CMakeLists.txt makes its target with mploader_add_component, which gives it
# everything a component has: the alias, the include folders, the install and export rules, and
# its entry in the CMake package. The tests, fuzz and bench folders find a component's parts by
# the names in this list (components/<name>/tests/tests.cmake, fuzz/fuzz.cmake, bench/bench.cmake).

# mploader_component(<name> "<what it reads>"): the MPLOADER_BUILD_<NAME> option, and the
# component's folder when it is on.
function(mploader_component name doc)
  string(TOUPPER ${name} upper)
  option(MPLOADER_BUILD_${upper} "Build mploader::${name} (${doc})" ON)
  if(MPLOADER_BUILD_${upper})
    add_subdirectory(${PROJECT_SOURCE_DIR}/components/${name} components/${name})
  endif()
endfunction()

# mploader_add_component(<name> SOURCES <files> [DEPENDS_ON <components>]
#   [PUBLIC <libraries>] [PRIVATE <libraries>] [COMPILE_OPTIONS <flags>] [CXX_STANDARD <n>]
#   [PRECOMPILE_ATEN] [PACKAGE <file.cmake.in>])
# Makes mploader_<name> and mploader::<name> from the calling folder. DEPENDS_ON names the
# components it may include and links publicly (tests/data/check_layers.sh reads the same list
# from this call); a missing one leaves this component out, with a note. PACKAGE is the part of
# the installed package config that finds the component's own libraries again for a program
# that links the static library; it sees @MPLOADER_COMPONENT_LIBRARY_TYPE@.
function(mploader_add_component name)
  cmake_parse_arguments(ARG "PRECOMPILE_ATEN" "CXX_STANDARD;PACKAGE"
                        "SOURCES;DEPENDS_ON;PUBLIC;PRIVATE;COMPILE_OPTIONS" ${ARGN})
  set(target mploader_${name})
  set(depends)
  foreach(dep IN LISTS ARG_DEPENDS_ON)
    if(NOT TARGET mploader_${dep})
      string(TOUPPER ${dep} upper)
      message(STATUS "mploader: the ${name} component is left out: it needs ${dep}, which "
                     "MPLOADER_BUILD_${upper}=OFF leaves out")
      return()
    endif()
    list(APPEND depends mploader_${dep})
  endforeach()
  add_library(${target} ${ARG_SOURCES})
  add_library(mploader::${name} ALIAS ${target})
  # Position-independent like mploader, so that a shared library or a Python module links it.
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name})
  if(ARG_CXX_STANDARD)
    set_target_properties(${target} PROPERTIES CXX_STANDARD ${ARG_CXX_STANDARD})
  endif()
  target_compile_options(${target} PRIVATE ${MPLOADER_PIC_OPTIONS} -Wall -Wextra
                         ${ARG_COMPILE_OPTIONS})
  # Its public headers under <folder>/include/mploader/<name>/; its own and its dependencies'
  # private headers by "<component>/<file>.h", the engine's by "<layer>/<file>.h".
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/components)
  target_link_libraries(${target} PUBLIC mploader ${depends} ${ARG_PUBLIC}
                        PRIVATE nlohmann_json::nlohmann_json ${ARG_PRIVATE})
  if(ARG_PRECOMPILE_ATEN)
    mploader_precompile_aten(${target})
  endif()
  set_property(GLOBAL APPEND PROPERTY MPLOADER_COMPONENTS ${name})
  if(MPLOADER_INSTALL)
    _mploader_install_component(${name} "${ARG_PACKAGE}")
  endif()
endfunction()

function(_mploader_install_component name package)
  include(GNUInstallDirs)
  install(TARGETS mploader_${name} EXPORT mploaderTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/mploader
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
  if(package)
    get_target_property(MPLOADER_COMPONENT_LIBRARY_TYPE mploader_${name} TYPE)
    set(out ${PROJECT_BINARY_DIR}/mploader-component-${name}.cmake)
    configure_file(${package} ${out} @ONLY)
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mploader)
    set_property(GLOBAL APPEND PROPERTY MPLOADER_PACKAGED_COMPONENTS ${name})
  endif()
endfunction()

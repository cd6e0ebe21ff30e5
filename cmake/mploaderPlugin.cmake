# mploader_add_dataset_plugin(NAME SOURCE...): a shared library (lib<NAME>.so) of datasets and
# collators registered with MPLOADER_REGISTER_DATASET and MPLOADER_REGISTER_COLLATOR, for a
# program that loads it at run time: `mploader-bench --dataset-lib lib<NAME>.so --dataset ...`.
#
# It compiles against mploader's headers and libtorch and holds none of mploader's code: the
# program that loads it provides that (mploader-bench exports all of it). A library with a copy
# of its own would register into that copy's registry, which the program never reads, and its
# datasets would read worker state no worker sets.
#
# Included by mploader's package config and top-level CMakeLists.txt, which set
# MPLOADER_PLUGIN_VERSION first; kept global so that any folder's call sees it.
set_property(GLOBAL PROPERTY MPLOADER_PLUGIN_VERSION "${MPLOADER_PLUGIN_VERSION}")

function(mploader_add_dataset_plugin name)
  if(NOT ARGN)
    message(FATAL_ERROR "mploader_add_dataset_plugin(${name}): no source files; give them "
                        "after the name, e.g. mploader_add_dataset_plugin(${name} datasets.cc)")
  endif()
  if(NOT TARGET mploader::mploader)
    message(FATAL_ERROR "mploader_add_dataset_plugin(${name}): mploader::mploader is not "
                        "defined; call find_package(mploader REQUIRED) first")
  endif()
  # The mploader the library was compiled against, which the bench compares with its own.
  get_property(version GLOBAL PROPERTY MPLOADER_PLUGIN_VERSION)
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${name}_mploader_version.cc)
  file(CONFIGURE OUTPUT ${stamp} CONTENT "// Written by mploader_add_dataset_plugin.
extern \"C\" __attribute__((visibility(\"default\")))
const char mploader_plugin_version[] = \"${version}\";
")
  add_library(${name} MODULE ${ARGN} ${stamp})
  target_compile_features(${name} PRIVATE cxx_std_17)
  target_include_directories(${name} PRIVATE
    $<TARGET_PROPERTY:mploader::mploader,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(${name} PRIVATE
    $<TARGET_PROPERTY:mploader::mploader,INTERFACE_COMPILE_DEFINITIONS>)
  # libtorch is a shared library: the plugin and the program load the same one.
  target_link_libraries(${name} PRIVATE torch)
endfunction()

# Which libtorch mploader builds against, checked before anything uses it
# (docs/which-libtorch.md).
#
#   - The user's own: -DTorch_DIR=<the folder with TorchConfig.cmake>, or -DCMAKE_PREFIX_PATH=
#     <its root> (the libtorch zip's folder, a conda env, `python -c 'import torch;
#     print(torch.utils.cmake_prefix_path)'`, Debian's /usr).
#   - Else, mploader built as the top-level project: the PyPI wheel that scripts/install-deps
#     puts in .venv (torch 2.13).
#   - Else: CMake's own search (Debian's libtorch-dev when it is installed).
#
# A libtorch that cannot work here stops the configure with what was found, where, and what to
# do: a folder without TorchConfig.cmake, libraries the loader cannot resolve (a CUDA build on a
# machine without the CUDA libraries), the pre-C++11 string ABI.
# Sets MPLOADER_TORCH_PREFIX (the libtorch's root folder).

string(CONCAT _mploader_fix
  "give -DTorch_DIR=<folder with TorchConfig.cmake> (a wheel's: `python -c 'import torch; "
  "print(torch.utils.cmake_prefix_path)'`/Torch; the zip's: libtorch/share/cmake/Torch; "
  "Debian's: /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/Torch), or run scripts/install-deps "
  "for the default (.venv, torch 2.13)")

if(TARGET torch)
  # A parent project found libtorch already (mploader as a subproject): use that one.
  get_filename_component(MPLOADER_TORCH_PREFIX "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
  message(STATUS "mploader: libtorch ${Torch_VERSION} from the parent project (${Torch_DIR})")
  return()
endif()

# A CMAKE_PREFIX_PATH (or environment) that holds a libtorch counts as the user's choice.
set(_mploader_prefix_torch "")
if(NOT Torch_DIR AND NOT DEFINED ENV{Torch_DIR})
  set(_mploader_prefixes ${CMAKE_PREFIX_PATH})
  if(DEFINED ENV{CMAKE_PREFIX_PATH})
    string(REPLACE ":" ";" _mploader_env_prefixes "$ENV{CMAKE_PREFIX_PATH}")
    list(APPEND _mploader_prefixes ${_mploader_env_prefixes})
  endif()
  if(_mploader_prefixes)
    find_path(_MPLOADER_PREFIX_TORCH TorchConfig.cmake NO_DEFAULT_PATH
              PATHS ${_mploader_prefixes}
              PATH_SUFFIXES Torch share/cmake/Torch lib/cmake/Torch
                            lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/Torch)
    if(_MPLOADER_PREFIX_TORCH)
      set(_mploader_prefix_torch "${_MPLOADER_PREFIX_TORCH}")
    endif()
    unset(_MPLOADER_PREFIX_TORCH CACHE)
  endif()
endif()

set(_mploader_torch_how "")
string(FIND "${Torch_DIR}" "${PROJECT_SOURCE_DIR}/.venv/" _mploader_at)
if(_mploader_at EQUAL 0)
  set(_mploader_torch_how "the default, .venv")
elseif(Torch_DIR OR DEFINED ENV{Torch_DIR})
  set(_mploader_torch_how "Torch_DIR")
elseif(_mploader_prefix_torch)
  set(_mploader_torch_how "CMAKE_PREFIX_PATH")
  set(Torch_DIR "${_mploader_prefix_torch}")
elseif(MPLOADER_TOP_LEVEL)
  set(_mploader_site "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages")
  file(GLOB _mploader_venv_torch "${_mploader_site}/torch/share/cmake/Torch/TorchConfig.cmake")
  if(_mploader_venv_torch)
    list(GET _mploader_venv_torch 0 _mploader_venv_torch)
    get_filename_component(_mploader_dir "${_mploader_venv_torch}" DIRECTORY)
    set(Torch_DIR "${_mploader_dir}" CACHE PATH "The folder with TorchConfig.cmake" FORCE)
    set(_mploader_torch_how "the default, .venv")
  endif()
endif()
if(NOT _mploader_torch_how)
  message(STATUS "mploader: no Torch_DIR or CMAKE_PREFIX_PATH with a libtorch given, and no "
                 ".venv with torch (scripts/install-deps makes it): looking where CMake looks")
  set(_mploader_torch_how "CMake's search")
endif()
if(NOT Torch_DIR AND DEFINED ENV{Torch_DIR})
  set(Torch_DIR "$ENV{Torch_DIR}")
endif()

# Its root: the folder above Torch_DIR that holds include/ATen (share/cmake/Torch in the wheel
# and the zip, lib/<arch>/cmake/Torch in Debian).
function(_mploader_torch_root dir out)
  set(d "${dir}")
  foreach(i RANGE 4)
    if(EXISTS "${d}/include/ATen/ATen.h")
      set(${out} "${d}" PARENT_SCOPE)
      return()
    endif()
    get_filename_component(d "${d}/.." ABSOLUTE)
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

if(Torch_DIR)
  get_filename_component(_mploader_dir "${Torch_DIR}" ABSOLUTE)
  if(NOT EXISTS "${_mploader_dir}/TorchConfig.cmake")
    # Often the root of a libtorch, or a Python environment, instead of its cmake folder.
    file(GLOB_RECURSE _mploader_near LIST_DIRECTORIES false
         "${_mploader_dir}/share/cmake/Torch/TorchConfig.cmake"
         "${_mploader_dir}/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake"
         "${_mploader_dir}/torch/share/cmake/Torch/TorchConfig.cmake")
    set(_mploader_hint "")
    if(_mploader_near)
      list(GET _mploader_near 0 _mploader_near)
      get_filename_component(_mploader_near "${_mploader_near}" DIRECTORY)
      set(_mploader_hint " It is here: -DTorch_DIR=${_mploader_near}")
    elseif(NOT EXISTS "${_mploader_dir}")
      set(_mploader_hint " That folder does not exist.")
    endif()
    message(FATAL_ERROR "mploader: Torch_DIR is ${_mploader_dir} (from ${_mploader_torch_how}), "
                        "which has no TorchConfig.cmake.${_mploader_hint} Otherwise "
                        "${_mploader_fix}.")
  endif()
  _mploader_torch_root("${_mploader_dir}" MPLOADER_TORCH_PREFIX)
  if(NOT MPLOADER_TORCH_PREFIX)
    message(FATAL_ERROR "mploader: ${_mploader_dir}/TorchConfig.cmake has no include/ATen/ATen.h "
                        "in the folders above it: not a libtorch with headers. ${_mploader_fix}.")
  endif()
  # A build folder configured before with another libtorch: forget what that one's configs
  # found (libraries, Caffe2's and its dependencies' folders), or the two would be mixed.
  if(DEFINED CACHE{_MPLOADER_TORCH_DIR} AND NOT _MPLOADER_TORCH_DIR STREQUAL _mploader_dir)
    message(STATUS "mploader: libtorch changed (was ${_MPLOADER_TORCH_DIR}): "
                   "finding its parts again")
    get_cmake_property(_mploader_cached CACHE_VARIABLES)
    foreach(v ${_mploader_cached})
      if(v MATCHES "^(Caffe2_DIR|TORCH_LIBRARY|c10_LIBRARY|C10_CUDA_LIBRARY|kineto_LIBRARY)$"
         OR v MATCHES "^(MKL_DIR|MKLDNN_.*|gflags_DIR|glog_DIR|Protobuf_.*|Unwind_.*)$")
        unset(${v} CACHE)
      endif()
    endforeach()
  endif()
  set(_MPLOADER_TORCH_DIR "${_mploader_dir}" CACHE INTERNAL "the Torch_DIR of the last configure")
  # Search its root first: TorchConfig.cmake looks for Caffe2Config.cmake and libtorch.so with
  # its own folder only as a fallback, so with Debian's libtorch-dev installed a wheel's config
  # would otherwise pick Debian's Caffe2 and libraries.
  list(PREPEND CMAKE_PREFIX_PATH "${MPLOADER_TORCH_PREFIX}")
  set(Caffe2_DIR "${MPLOADER_TORCH_PREFIX}/share/cmake/Caffe2")
  if(NOT EXISTS "${Caffe2_DIR}/Caffe2Config.cmake")
    unset(Caffe2_DIR)
  endif()

  # Every library its libtorch_cpu needs must resolve here (a CUDA build on a machine without
  # the CUDA libraries does not), found the way the program will find them at run time.
  find_library(_MPLOADER_TORCH_CPU torch_cpu NO_DEFAULT_PATH
               PATHS "${MPLOADER_TORCH_PREFIX}/lib"
                     "${MPLOADER_TORCH_PREFIX}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
  set(_mploader_torch_cpu "${_MPLOADER_TORCH_CPU}")
  unset(_MPLOADER_TORCH_CPU CACHE)
  find_program(_MPLOADER_LDD ldd)
  set(_mploader_ldd "${_MPLOADER_LDD}")
  unset(_MPLOADER_LDD CACHE)
  if(_mploader_torch_cpu AND _mploader_ldd)
    set(_mploader_missing "")
    get_filename_component(_mploader_libdir "${_mploader_torch_cpu}" DIRECTORY)
    set(_mploader_torch_libs "${_mploader_torch_cpu}")
    foreach(name torch c10 torch_cuda c10_cuda)
      if(EXISTS "${_mploader_libdir}/lib${name}.so")
        list(APPEND _mploader_torch_libs "${_mploader_libdir}/lib${name}.so")
      endif()
    endforeach()
    foreach(lib ${_mploader_torch_libs})
      execute_process(COMMAND ${_mploader_ldd} "${lib}" OUTPUT_VARIABLE _out ERROR_VARIABLE _err
                      RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "mploader: ${lib} is not a library this machine can load "
                            "(ldd: ${_err}${_out}); it may be built for another architecture "
                            "or system. ${_mploader_fix}.")
      endif()
      string(REGEX MATCHALL "[^\n\t ]+ => not found" _nf "${_out}")
      foreach(m ${_nf})
        string(REPLACE " => not found" "" m "${m}")
        list(APPEND _mploader_missing "${m}")
      endforeach()
    endforeach()
    if(_mploader_missing)
      list(REMOVE_DUPLICATES _mploader_missing)
      string(REPLACE ";" ", " _mploader_missing "${_mploader_missing}")
      set(_mploader_cuda "")
      if(EXISTS "${_mploader_libdir}/libtorch_cuda.so")
        string(CONCAT _mploader_cuda
          " It is a CUDA build (lib/libtorch_cuda.so): install the CUDA libraries it was built "
          "for (with a wheel: its nvidia-* packages), or use a CPU build (pip install "
          "torch==<version>+cpu, the libtorch-...-cpu zip).")
      endif()
      message(FATAL_ERROR "mploader: the libtorch in ${MPLOADER_TORCH_PREFIX} needs libraries "
                          "this machine does not have: ${_mploader_missing}.${_mploader_cuda} "
                          "Or ${_mploader_fix}.")
    endif()
  endif()
endif()

find_package(Torch REQUIRED)

get_filename_component(MPLOADER_TORCH_PREFIX "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
# The libraries must come from the same libtorch as the config and the headers.
foreach(lib TORCH_LIBRARY c10_LIBRARY)
  if(${lib})
    get_filename_component(_mploader_real "${${lib}}" DIRECTORY)
    get_filename_component(_mploader_real "${_mploader_real}" REALPATH)
    get_filename_component(_mploader_root_real "${MPLOADER_TORCH_PREFIX}" REALPATH)
    string(FIND "${_mploader_real}" "${_mploader_root_real}/" _at)
    if(NOT _at EQUAL 0)
      message(FATAL_ERROR "mploader: the libtorch config in ${Torch_DIR} found ${lib} = "
                          "${${lib}}, outside its own folder ${MPLOADER_TORCH_PREFIX}: two "
                          "libtorch installs are mixed. Clear the cache (rm CMakeCache.txt), then "
                          "${_mploader_fix}.")
    endif()
  endif()
endforeach()

# libstdc++'s string ABI must match the rest of the program (Debian's spdlog, CLI11, ...): the
# pre-C++11 ABI builds (the libtorch zips named "pre-cxx11", wheels before 2.7) cannot link.
set(_mploader_abi "")
if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  set(_mploader_abi "TORCH_CXX_FLAGS has -D_GLIBCXX_USE_CXX11_ABI=0")
elseif(c10_LIBRARY AND CMAKE_NM)
  execute_process(COMMAND ${CMAKE_NM} -D --defined-only "${c10_LIBRARY}"
                  OUTPUT_VARIABLE _mploader_syms ERROR_QUIET)
  if(_mploader_syms MATCHES "_ZN3c10" AND NOT _mploader_syms MATCHES "NSt7__cxx11")
    set(_mploader_abi "${c10_LIBRARY} exports no std::__cxx11 symbols")
  endif()
endif()
if(_mploader_abi)
  message(FATAL_ERROR "mploader: the libtorch in ${MPLOADER_TORCH_PREFIX} is built with the "
                      "pre-C++11 string ABI (${_mploader_abi}); mploader and its other "
                      "dependencies use the C++11 ABI. Use a cxx11-ABI build (the "
                      "libtorch-cxx11-abi-... zip, a wheel of torch 2.7 or later), or "
                      "${_mploader_fix}.")
endif()

message(STATUS "mploader: libtorch ${Torch_VERSION} from ${MPLOADER_TORCH_PREFIX} "
               "(${_mploader_torch_how}: ${Torch_DIR})")


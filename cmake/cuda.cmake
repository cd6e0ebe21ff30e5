# The CUDA runtime's headers for pinned rings (LoaderOptions::pin_memory). cuda_pinning.cc calls
# the runtime's C API through dlopen at run time, so only the headers (checked signatures) and
# the path of a libcudart to try last are needed to build: no nvcc, no GPU.
#
# Where from, in order: a system toolkit (CUDAToolkit_ROOT, /usr/local/cuda, CMake's search);
# else the CUDA runtime wheels from the Python package index (nvidia-cuda-runtime, and from
# CUDA 13 on nvidia-cuda-crt for crt/host_defines.h, which scripts/install-deps puts in .venv;
# a CUDA torch wheel brings them too) in the environment of
# the libtorch in use or in the project's .venv. Sets MPLOADER_CUDA_INCLUDE_DIRS,
# MPLOADER_CUDART_LIBRARY and MPLOADER_CUDA_FROM (what the configure output names).

if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
set(MPLOADER_CUDA_FROM "")
if(CUDAToolkit_FOUND)
  set(MPLOADER_CUDA_INCLUDE_DIRS "${CUDAToolkit_INCLUDE_DIRS}")
  set(MPLOADER_CUDART_LIBRARY "${CUDA_cudart_LIBRARY}")
  set(MPLOADER_CUDA_FROM "the CUDA toolkit ${CUDAToolkit_VERSION} (${CUDAToolkit_INCLUDE_DIRS})")
else()
  # The wheel's layout: nvidia/cuda_runtime/ (the -cu12 packages) or nvidia/cu13/ (13.x).
  foreach(env ${MPLOADER_PYTHON_ENVS})  # cmake/python.cmake
    file(GLOB _mploader_headers
         "${env}/lib/python3*/site-packages/nvidia/*/include/cuda_runtime_api.h")
    if(_mploader_headers)
      list(GET _mploader_headers 0 _mploader_header)
      get_filename_component(_mploader_inc "${_mploader_header}" DIRECTORY)
      get_filename_component(_mploader_pkg "${_mploader_inc}" DIRECTORY)
      file(GLOB _mploader_cudart "${_mploader_pkg}/lib/libcudart.so*")
      if(NOT EXISTS "${_mploader_inc}/crt/host_defines.h")
        # cuda_runtime_api.h includes it; from CUDA 13 on it is a wheel of its own.
        message(STATUS "mploader: ${_mploader_inc} has cuda_runtime_api.h but not "
                       "crt/host_defines.h, which it includes: pip install nvidia-cuda-crt into "
                       "that environment (scripts/install-deps does) to build the pinning path")
        continue()
      endif()
      set(MPLOADER_CUDA_INCLUDE_DIRS "${_mploader_inc}")
      set(MPLOADER_CUDART_LIBRARY "")
      if(_mploader_cudart)
        list(GET _mploader_cudart 0 MPLOADER_CUDART_LIBRARY)
      endif()
      file(STRINGS "${_mploader_header}" _mploader_ver REGEX "define CUDART_VERSION")
      string(REGEX MATCH "[0-9]+" _mploader_ver "${_mploader_ver}")
      set(MPLOADER_CUDA_FROM "the CUDA runtime wheel (runtime API ${_mploader_ver}) in ${_mploader_pkg}")
      break()
    endif()
  endforeach()
endif()

if(MPLOADER_CUDA_FROM)
  set(_mploader_cuda_default ON)
else()
  set(_mploader_cuda_default OFF)
endif()
option(MPLOADER_WITH_CUDA "Pinned rings through the CUDA runtime (on when its headers are found)"
  ${_mploader_cuda_default})
if(MPLOADER_WITH_CUDA AND NOT MPLOADER_CUDA_FROM)
  message(FATAL_ERROR "mploader: MPLOADER_WITH_CUDA is ON but no CUDA runtime headers were found: "
                      "no toolkit (set CUDAToolkit_ROOT to its folder, e.g. /usr/local/cuda), and "
                      "no nvidia-cuda-runtime wheel in .venv (scripts/install-deps installs it). "
                      "Or turn the option off.")
endif()
if(MPLOADER_WITH_CUDA)
  message(STATUS "mploader: CUDA pinning on, headers from ${MPLOADER_CUDA_FROM}; the runtime is "
                 "opened at run time (last tried: ${MPLOADER_CUDART_LIBRARY})")
else()
  message(STATUS "mploader: CUDA pinning off (no CUDA toolkit or nvidia-cuda-runtime wheel found)")
endif()

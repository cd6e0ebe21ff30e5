# The Python environments that may hold torch and its companion wheels, most specific first:
# the one this libtorch came from when it is a wheel, then the project's .venv
# (MPLOADER_PYTHON_ENVS, their roots; cmake/cuda.cmake looks there for the CUDA headers too).
set(MPLOADER_PYTHON_ENVS "")
string(REGEX MATCH "^(.*)/lib/python3[^/]*/site-packages/torch$" _m "${MPLOADER_TORCH_PREFIX}")
if(_m)
  list(APPEND MPLOADER_PYTHON_ENVS "${CMAKE_MATCH_1}")
endif()
if(EXISTS "${PROJECT_SOURCE_DIR}/.venv")
  list(APPEND MPLOADER_PYTHON_ENVS "${PROJECT_SOURCE_DIR}/.venv")
endif()

# The Python whose torch is the peer in mploader-bench (--loader pytorch) and the reference the
# tests compare samplers with: the first of those environments that has one, else Debian's
# /usr/bin/python3 (python3-torch). Tests and the bench skip, saying why, when it cannot import
# torch.
if(NOT MPLOADER_PYTHON)
  set(_mploader_python "/usr/bin/python3")
  foreach(env ${MPLOADER_PYTHON_ENVS})
    if(EXISTS "${env}/bin/python3")
      set(_mploader_python "${env}/bin/python3")
      break()
    endif()
  endforeach()
  set(MPLOADER_PYTHON "${_mploader_python}" CACHE FILEPATH
      "The Python (with torch) of the bench's PyTorch peer and the tests' PyTorch references")
endif()
if(MPLOADER_TOP_LEVEL)
  message(STATUS "mploader: PyTorch peer and references run under ${MPLOADER_PYTHON}")
endif()

# The Python whose torch is the peer in mploader-bench (--loader pytorch) and the reference the
# tests compare samplers with: the environment this libtorch came from when it is a wheel, else
# the project's .venv, else Debian's /usr/bin/python3 (python3-torch). Tests and the bench skip,
# saying why, when it cannot import torch.
if(NOT MPLOADER_PYTHON)
  set(_mploader_python "")
  string(REGEX MATCH "^(.*)/lib/python3[^/]*/site-packages/torch$" _m "${MPLOADER_TORCH_PREFIX}")
  if(_m AND EXISTS "${CMAKE_MATCH_1}/bin/python3")
    set(_mploader_python "${CMAKE_MATCH_1}/bin/python3")
  elseif(EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
    set(_mploader_python "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
  else()
    set(_mploader_python "/usr/bin/python3")
  endif()
  set(MPLOADER_PYTHON "${_mploader_python}" CACHE FILEPATH
      "The Python (with torch) of the bench's PyTorch peer and the tests' PyTorch references")
endif()
if(MPLOADER_TOP_LEVEL)
  message(STATUS "mploader: PyTorch peer and references run under ${MPLOADER_PYTHON}")
endif()

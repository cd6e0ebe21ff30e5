# Built as the Python package (scikit-build-core sets SKBUILD): the libtorch is the one of the
# torch installed where the package is being installed, as for torchvision. pip may build in an
# isolated environment that hides that torch; `python -I` ignores the variables that hide it
# and sees the environment's own site-packages again. A Torch_DIR given by hand wins.
# Sets Torch_DIR, MPLOADER_PY_TORCH_VERSION (torch.__version__) and MPLOADER_PY_PYBIND11_ABI
# (the -D flags torch's extensions were built with, for releases that name them).
find_package(Python 3.8 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(
  COMMAND "${Python_EXECUTABLE}" -I -c [=[
import torch, torch.utils, torch._C as C
print(torch.__version__)
print(torch.utils.cmake_prefix_path)
print(" ".join(getattr(C, "_PYBIND11_" + k, "") for k in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")))
]=]
  RESULT_VARIABLE _mploader_rc OUTPUT_VARIABLE _mploader_out ERROR_VARIABLE _mploader_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _mploader_rc EQUAL 0)
  message(FATAL_ERROR "mploader: the Python package is built against the torch installed beside "
          "it, and ${Python_EXECUTABLE} cannot import torch:\n${_mploader_err}\nInstall torch "
          "in that environment first (pip install torch), then install mploader again.")
endif()
string(REPLACE "\n" ";" _mploader_out "${_mploader_out}")
list(GET _mploader_out 0 MPLOADER_PY_TORCH_VERSION)
list(GET _mploader_out 1 _mploader_prefix)
set(MPLOADER_PY_PYBIND11_ABI "")
list(LENGTH _mploader_out _mploader_lines)
if(_mploader_lines GREATER 2)  # older torch releases name their pybind11 ABI; newer ones do not
  list(GET _mploader_out 2 _mploader_abi)
  string(REPLACE " " ";" _mploader_abi "${_mploader_abi}")
  list(GET _mploader_abi 0 _c)
  list(GET _mploader_abi 1 _s)
  list(GET _mploader_abi 2 _b)
  set(MPLOADER_PY_PYBIND11_ABI PYBIND11_COMPILER_TYPE="${_c}" PYBIND11_STDLIB="${_s}"
      PYBIND11_BUILD_ABI="${_b}")
endif()
if(NOT Torch_DIR)
  set(Torch_DIR "${_mploader_prefix}/Torch" CACHE PATH "The folder with TorchConfig.cmake")
endif()
message(STATUS "mploader: Python package for torch ${MPLOADER_PY_TORCH_VERSION} "
               "(${Python_EXECUTABLE}, ${Torch_DIR})")

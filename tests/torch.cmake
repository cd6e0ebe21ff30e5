# A libtorch that cannot work stops the configure with a message naming what was found, where,
# and what to do (cmake/torch.cmake). Fake libtorchs are made from this build's own (wheel or
# zip layout: <root>/share/cmake/{Torch,Caffe2}), so the tests run where that layout is.
if(NOT MPLOADER_SANITIZE AND EXISTS "${MPLOADER_TORCH_PREFIX}/share/cmake/Caffe2/Caffe2Config.cmake")
  foreach(case
      "missing|Torch_DIR names a libtorch's root, not its cmake folder|has no TorchConfig\\.cmake\\. It is here: -DTorch_DIR=.*/libtorch/share/cmake/Torch"
      "cuda|a CUDA build without the CUDA libraries|needs libraries this machine does not have: libcudnn_mploader_test\\.so\\.9\\. It is a CUDA build.*CPU build"
      "precxx11|a pre-C++11 ABI libtorch|pre-C\\+\\+11 string ABI \\(TORCH_CXX_FLAGS has -D_GLIBCXX_USE_CXX11_ABI=0\\).*cxx11-ABI")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 what)
    list(GET parts 1 name)
    list(GET parts 2 expected)
    string(REPLACE " " "[ \n]+" expected "${expected}")  # CMake wraps its messages
    add_test(NAME "torch: ${name} stops the configure with a clear message"
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/data/check_bad_torch.sh ${what} ${PROJECT_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/bad-torch-${what} ${Torch_DIR})
    set_tests_properties("torch: ${name} stops the configure with a clear message" PROPERTIES
      PASS_REGULAR_EXPRESSION "${expected}.*configure exit status 1" TIMEOUT 120)
  endforeach()
  # The ways docs/which-libtorch.md tells a user to name their own libtorch take it, and say so.
  foreach(case
      "prefix|CMAKE_PREFIX_PATH from torch.utils.cmake_prefix_path|from ${MPLOADER_TORCH_PREFIX} \\(CMAKE_PREFIX_PATH"
      "zip|CMAKE_PREFIX_PATH naming an unpacked zip|from .*/torch-choice-zip/libtorch \\(CMAKE_PREFIX_PATH"
      "env|the CMAKE_PREFIX_PATH environment variable|from .*/torch-choice-env/libtorch \\(CMAKE_PREFIX_PATH")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 how)
    list(GET parts 1 name)
    list(GET parts 2 expected)
    add_test(NAME "torch: ${name} picks that libtorch"
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/data/check_torch_choice.sh ${how} ${PROJECT_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/torch-choice-${how} ${Torch_DIR})
    set_tests_properties("torch: ${name} picks that libtorch" PROPERTIES
      PASS_REGULAR_EXPRESSION "mploader: libtorch [0-9.]+ ${expected}.*configure exit status 0"
      TIMEOUT 120)
  endforeach()
endif()

# Without a CUDA toolkit, the pinned-memory path still compiles, with the headers of the CUDA
# runtime wheel in .venv (cmake/cuda.cmake).
if(NOT MPLOADER_SANITIZE)
  set(name "cuda: without a CUDA toolkit the runtime wheel's headers build the pinning path")
  add_test(NAME "${name}"
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/data/check_cuda_wheel.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/cuda-wheel ${Torch_DIR})
  # 3 minutes beside the load of scripts/test --under-load; the limit is for a hang.
  set_tests_properties("${name}" PROPERTIES PASS_REGULAR_EXPRESSION "cuda wheel build ok"
    SKIP_REGULAR_EXPRESSION "skipped: " TIMEOUT 900)
endif()

# libtorch's ATen headers are most of the cost of a file that includes them: about 13 s of 16 on
# 2 cores with GCC 12. Parsed once per target into a precompiled header, such a file compiles in
# about 3 s; a file that does not include them pays about 1.5 s to load the header. Half the
# library's files and most of the bench's include ATen. -Winvalid-pch: a header the compiler
# cannot use (other flags) is parsed again silently, so say it in the build's output.
option(MPLOADER_PRECOMPILE_HEADERS "Precompile libtorch's ATen headers once per target (much
  faster builds; OFF to check that every file includes what it uses)" ON)

# mploader_precompile(TARGET HEADERS <h>... | REUSE_FROM OTHER): TARGET's files see those headers
# precompiled, or OTHER's precompiled header (same flags and macros required). Nothing when
# MPLOADER_PRECOMPILE_HEADERS is OFF.
function(mploader_precompile target)
  if(NOT MPLOADER_PRECOMPILE_HEADERS)
    return()
  endif()
  cmake_parse_arguments(arg "" "REUSE_FROM" "HEADERS" ${ARGN})
  if(arg_REUSE_FROM)
    target_precompile_headers(${target} REUSE_FROM ${arg_REUSE_FROM})
  else()
    target_precompile_headers(${target} PRIVATE ${arg_HEADERS})
  endif()
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Winvalid-pch>)
endfunction()

# mploader_precompile_aten(TARGET): TARGET's files see <ATen/ATen.h> precompiled. A target cannot
# reuse the library's header unless its flags match: position-independent code, and the same
# macros (the library's spdlog ones).
function(mploader_precompile_aten target)
  mploader_precompile(${target} HEADERS <ATen/ATen.h>)
endfunction()

# The mploader::parquet component's tests: a binary of their own, so that the core library's
# tests neither link Arrow nor wait for it. The files come from pyarrow
# (write_parquet.py, run by the project's Python), and so do the values they are
# compared with.
if(NOT TARGET mploader_parquet)
  return()
endif()
add_executable(mploader_parquet_tests
  ${CMAKE_CURRENT_LIST_DIR}/test_parquet_shards.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_parquet_errors.cc
)
mploader_test_binary(mploader_parquet_tests)
target_compile_definitions(mploader_parquet_tests PRIVATE MPLOADER_PYTHON="${MPLOADER_PYTHON}"
  MPLOADER_PQ_WRITER="${CMAKE_CURRENT_LIST_DIR}/write_parquet.py")
target_link_libraries(mploader_parquet_tests PRIVATE mploader_parquet)
catch_discover_tests(mploader_parquet_tests
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "skipped: "
  DISCOVERY_TIMEOUT 60)

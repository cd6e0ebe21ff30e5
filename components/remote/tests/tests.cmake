# The mploader::remote component's tests: shards and token files served by nginx, by moto's S3
# server and by servers that lie, read through the shard cache. The shards they serve are tars,
# so the tests read them with mploader::shards (built after this component, when it is on).
if(NOT TARGET mploader_shards)
  message(STATUS "mploader: the remote component's tests are left out: they read tar shards, "
                 "and the shards component is not built")
  return()
endif()
find_package(LibArchive REQUIRED)
add_executable(mploader_remote_tests
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_http.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_prefetch.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_tokens.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_s3.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_sigv4.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_remote_lies.cc
)
mploader_test_binary(mploader_remote_tests)
# The S3 tests' server runs from the project's Python (moto_server beside it in the .venv).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/test_remote_s3.cc PROPERTIES
  COMPILE_DEFINITIONS MPLOADER_PYTHON="${MPLOADER_PYTHON}")
target_link_libraries(mploader_remote_tests PRIVATE mploader_remote mploader_shards
                      LibArchive::LibArchive)
catch_discover_tests(mploader_remote_tests
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "skipped: "
  DISCOVERY_TIMEOUT 60)

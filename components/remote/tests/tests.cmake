# The mploader::remote component's tests: shards and token files served by nginx, by moto's S3
# server and by servers that lie, read through the shard cache. The shards they serve are tars,
# so the tests read them with mploader::shards (built after this component, when it is on).
if(NOT TARGET mploader_shards)
  message(STATUS "mploader: the remote component's tests are left out: they read tar shards, "
                 "and the shards component is not built")
  return()
endif()
find_package(LibArchive REQUIRED)
# The S3 tests' server runs from the project's Python (moto_server beside it in the .venv).
mploader_component_tests(remote
  SOURCES test_remote_http.cc test_remote_cache.cc test_remote_prefetch.cc test_remote_tokens.cc
          test_remote_s3.cc test_remote_sigv4.cc test_remote_lies.cc test_remote_packed.cc
  LIBS mploader_shards LibArchive::LibArchive)

# The packs' uploads are made by mploader-pack, run as a user runs it.
if(TARGET mploader-pack)
  target_compile_definitions(mploader_remote_tests PRIVATE
                             MPLOADER_PACK_BIN="$<TARGET_FILE:mploader-pack>")
  add_dependencies(mploader_remote_tests mploader-pack)
endif()

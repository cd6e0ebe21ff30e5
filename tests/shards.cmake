# The mploader::shards component's tests: a binary of their own, so that the core library's
# tests neither link libarchive nor wait for it. The tests write their tars with libarchive's
# write API (shards/shard_test_support.h).
if(NOT TARGET mploader_shards)
  return()
endif()
find_package(LibArchive REQUIRED)
add_executable(mploader_shards_tests
  shards/test_tar_shards.cc
  shards/test_tar_loader.cc
  shards/test_tar_fuzz_findings.cc
  shards/test_tar_damage.cc
)
mploader_test_binary(mploader_shards_tests)
target_link_libraries(mploader_shards_tests PRIVATE mploader_shards LibArchive::LibArchive)
catch_discover_tests(mploader_shards_tests
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "skipped: "
  DISCOVERY_TIMEOUT 60)

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
  shards/test_tar_elastic.cc
  shards/test_remote_http.cc
  shards/test_remote_cache.cc
  shards/test_remote_prefetch.cc
  shards/test_remote_tokens.cc
  shards/test_remote_s3.cc
  shards/test_remote_sigv4.cc
  shards/test_remote_lies.cc
)
mploader_test_binary(mploader_shards_tests)
# The S3 tests' server runs from the project's Python (moto_server beside it in the .venv).
set_source_files_properties(shards/test_remote_s3.cc PROPERTIES
  COMPILE_DEFINITIONS MPLOADER_PYTHON="${MPLOADER_PYTHON}")
target_link_libraries(mploader_shards_tests PRIVATE mploader_shards LibArchive::LibArchive)
catch_discover_tests(mploader_shards_tests
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "skipped: "
  DISCOVERY_TIMEOUT 60)

# mploader-manifest over a folder of two tars (one in a subfolder) written by GNU tar.
if(TARGET mploader-manifest)
  add_test(NAME "tools: mploader-manifest counts the samples of each tar and checksums it"
    COMMAND sh -c "set -e; d=$(mktemp -d); trap 'rm -rf $d' EXIT; cd $d; mkdir -p in/sub; \
      printf 1 > a.txt; printf 2 > b.txt; printf 3 > b.cls; tar cf in/x.tar a.txt b.txt b.cls; \
      tar cf in/sub/y.tar a.txt; \"$1\" in | grep -q 'wrote in/mploader-manifest.json: 2 shards, 3 samples'; \
      grep -q '\"name\":\"sub/y.tar\".*\"samples\":1' in/mploader-manifest.json; \
      grep -q '\"sha256\":\"[0-9a-f]\\{64\\}\"' in/mploader-manifest.json; \
      ! \"$1\" /no/such/folder 2>/dev/null" sh $<TARGET_FILE:mploader-manifest>)
endif()

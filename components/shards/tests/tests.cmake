# The mploader::shards component's tests. The tests write their tars with libarchive's write API
# (shard_test_support.h).
find_package(LibArchive REQUIRED)
mploader_component_tests(shards
  SOURCES test_tar_shards.cc test_tar_loader.cc test_tar_fuzz_findings.cc test_tar_damage.cc
          test_tar_elastic.cc
  LIBS LibArchive::LibArchive)

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

# PackedShards and mploader-pack: the tests run the tool as a user would.
if(TARGET mploader-pack)
  target_sources(mploader_shards_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/test_packed_shards.cc
                                               ${CMAKE_CURRENT_LIST_DIR}/test_pack_checks.cc)
  target_compile_definitions(mploader_shards_tests PRIVATE
                             MPLOADER_PACK_BIN="$<TARGET_FILE:mploader-pack>")
  add_dependencies(mploader_shards_tests mploader-pack)
endif()

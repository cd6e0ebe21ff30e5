# mploader::shards: the libFuzzer target, included by fuzz/CMakeLists.txt (its function
# mploader_fuzz_target; sources named from the project's root).
find_package(LibArchive REQUIRED)
mploader_fuzz_target(tar "tar members" SOURCES components/shards/tar_reader.cc util/errors.cc
                     LIBS LibArchive::LibArchive ${TORCH_LIBRARIES})

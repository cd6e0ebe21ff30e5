# mploader::shards: the libFuzzer target, included by fuzz/CMakeLists.txt (its function
# mploader_fuzz_target; sources named from the project's root).
find_package(LibArchive REQUIRED)
mploader_fuzz_target(tar "tar members" SOURCES components/shards/tar_reader.cc util/errors.cc
                     LIBS LibArchive::LibArchive ${TORCH_LIBRARIES})
mploader_fuzz_target(pack "pack description, index and npy members"
                     SOURCES components/shards/pack_format.cc components/shards/npy_member.cc
                             util/errors.cc
                     LIBS nlohmann_json::nlohmann_json ${TORCH_LIBRARIES})

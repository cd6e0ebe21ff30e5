# mploader::hdf5: the libFuzzer target, included by fuzz/CMakeLists.txt (its function
# mploader_fuzz_target; sources named from the project's root).
# libhdf5 is not instrumented: the target checks mploader's side of every call into it.
find_path(MPLOADER_HDF5_INCLUDE_DIR hdf5.h PATH_SUFFIXES hdf5/serial hdf5 REQUIRED)
find_library(MPLOADER_HDF5_LIBRARY NAMES hdf5_serial hdf5 PATH_SUFFIXES hdf5/serial REQUIRED)
mploader_fuzz_target(hdf5 "HDF5 recipes and files"
                     SOURCES components/hdf5/h5_handle.cc components/hdf5/h5_types.cc components/hdf5/h5_meta.cc
                             components/hdf5/h5_probe.cc components/hdf5/h5_reader.cc components/hdf5/h5_dataset.cc
                             components/hdf5/h5_recipe.cc core/registry.cc ipc/sealed_bytes.cc
                             core/sample_writer.cc
                             core/dataset.cc
                             core/tensor_dict.cc core/collate.cc core/pad_collator.cc
                             core/exception_text.cc util/errors.cc
                     LIBS nlohmann_json::nlohmann_json ${MPLOADER_HDF5_LIBRARY}
                          ${TORCH_LIBRARIES})
target_include_directories(fuzz_hdf5 SYSTEM PRIVATE ${MPLOADER_HDF5_INCLUDE_DIR})

# mploader::parquet: the libFuzzer target, included by fuzz/CMakeLists.txt (its function
# mploader_fuzz_target; sources named from the project's root).
# Arrow and Parquet (the pyarrow wheel's, not instrumented): the target checks mploader's side.
include(${PROJECT_SOURCE_DIR}/cmake/arrow.cmake)
if(MPLOADER_ARROW_FOUND)
  mploader_fuzz_target(parquet "Parquet recipes and files"
                       SOURCES components/parquet/pq_columns.cc components/parquet/pq_file.cc
                               components/parquet/pq_values.cc components/parquet/pq_reading.cc
                               components/parquet/pq_rows.cc components/parquet/parquet_shards.cc
                               components/parquet/parquet_read.cc components/parquet/parquet_recipe.cc
                               components/vision/decode.cc components/vision/decode_jpeg.cc components/vision/decode_png.cc
                               components/vision/decode_png_whole.cc components/vision/image.cc
                               components/vision/transforms.cc components/vision/transform_json.cc
                               components/vision/compose_check.cc components/vision/resample.cc
                               core/streaming_dataset.cc core/registry.cc ipc/sealed_bytes.cc
                               worker/worker_info.cc core/sample_writer.cc core/dataset.cc
                               core/tensor_dict.cc core/loading_scope.cc core/collate.cc
                               core/pad_collator.cc core/remote_files.cc core/file_list.cc
                               core/text_fields.cc core/batch.cc core/exception_text.cc
                               core/stage_timer.cc
                               util/errors.cc
                       LIBS nlohmann_json::nlohmann_json mploader::libparquet JPEG::JPEG PNG::PNG
                            deflate ${TORCH_LIBRARIES})
  set_target_properties(fuzz_parquet PROPERTIES CXX_STANDARD 20)
endif()

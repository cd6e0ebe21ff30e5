# mploader-bench --workload parquet: ParquetShards against PyTorch over pyarrow and Hugging Face
# datasets (pq_bench.h). Included by bench/CMakeLists.txt when mploader_parquet is built;
# pq_cli.cc registers the workload.
target_sources(mploader-bench PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/pq_cli.cc
  ${CMAKE_CURRENT_LIST_DIR}/run_pq.cc)
target_link_libraries(mploader-bench PRIVATE mploader_parquet mploader::libparquet)
# The peer script: found here by a bench in its build tree, installed beside the bench's own.
set_property(GLOBAL APPEND PROPERTY MPLOADER_BENCH_SCRIPTS
  ${CMAKE_CURRENT_LIST_DIR}/parquet_peers.py)

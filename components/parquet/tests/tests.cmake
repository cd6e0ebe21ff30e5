# The mploader::parquet component's tests. The files come from pyarrow (write_parquet.py, run
# by the project's Python), and so do the values they are compared with.
mploader_component_tests(parquet
  SOURCES test_parquet_shards.cc test_parquet_errors.cc
  DEFINITIONS MPLOADER_PQ_WRITER="${CMAKE_CURRENT_LIST_DIR}/write_parquet.py")

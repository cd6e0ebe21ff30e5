# The mploader::parquet component's tests. The files come from pyarrow (write_parquet.py, run
# by the project's Python), and so do the values they are compared with.
mploader_component_tests(parquet
  SOURCES test_parquet_shards.cc test_parquet_errors.cc)

# The bench workload end to end on small files: pyarrow writes them, every loader reads both
# layouts, and the checksums of the values they read agree (else the run fails).
if(TARGET mploader-bench)
  add_test(NAME "bench: parquet reads the same values as PyTorch over pyarrow and datasets"
    COMMAND ${CMAKE_COMMAND} -E env MPLOADER_BENCH_CACHE=${CMAKE_CURRENT_BINARY_DIR}/bench-pq
            $<TARGET_FILE:mploader-bench> --workload parquet --rows 512 --batch-size 32
            --rounds 1 --json)
  set_tests_properties("bench: parquet reads the same values as PyTorch over pyarrow and datasets"
    PROPERTIES PASS_REGULAR_EXPRESSION
    "\"layout\":\"text\",\"loader\":\"hf\".*\"ratio\":\\{\"numeric\".*\"summary\":true"
    TIMEOUT 180)
endif()

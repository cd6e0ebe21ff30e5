# The mploader::hdf5 component's tests. The files come from h5py (write_h5.py, run by the
# project's Python), and so do the values they are compared with.
mploader_component_tests(hdf5
  SOURCES test_h5_dataset.cc test_h5_errors.cc)

# The bench workload end to end on small files: h5py writes them, every loader reads every
# layout, and the checksums of the values they read agree (else the run fails).
if(TARGET mploader-bench)
  add_test(NAME "bench: hdf5 reads the same values as PyTorch's DataLoader over h5py"
    COMMAND ${CMAKE_COMMAND} -E env MPLOADER_BENCH_CACHE=${CMAKE_CURRENT_BINARY_DIR}/bench-h5
            $<TARGET_FILE:mploader-bench> --workload hdf5 --rows 512 --batch-size 32 --rounds 1
            --json)
  set_tests_properties("bench: hdf5 reads the same values as PyTorch's DataLoader over h5py"
    PROPERTIES PASS_REGULAR_EXPRESSION
    "\"layout\":\"text\",\"loader\":\"pytorch-batched\".*\"ratio\":\\{\"images\".*\"summary\":true"
    TIMEOUT 180)
endif()

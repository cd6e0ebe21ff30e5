# The mploader::hdf5 component's tests: a binary of their own, so that the core library's tests
# neither link libhdf5 nor wait for it. The files come from h5py (write_h5.py, run by
# the project's Python), and so do the values they are compared with.
if(NOT TARGET mploader_hdf5)
  return()
endif()
add_executable(mploader_hdf5_tests
  ${CMAKE_CURRENT_LIST_DIR}/test_h5_dataset.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_h5_errors.cc
)
mploader_test_binary(mploader_hdf5_tests)
target_compile_definitions(mploader_hdf5_tests PRIVATE MPLOADER_PYTHON="${MPLOADER_PYTHON}"
  MPLOADER_H5_WRITER="${CMAKE_CURRENT_LIST_DIR}/write_h5.py")
target_link_libraries(mploader_hdf5_tests PRIVATE mploader_hdf5)
catch_discover_tests(mploader_hdf5_tests
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "skipped: "
  DISCOVERY_TIMEOUT 60)

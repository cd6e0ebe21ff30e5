# The mploader::hdf5 component's tests. The files come from h5py (write_h5.py, run by the
# project's Python), and so do the values they are compared with.
mploader_component_tests(hdf5
  SOURCES test_h5_dataset.cc test_h5_errors.cc
  DEFINITIONS MPLOADER_H5_WRITER="${CMAKE_CURRENT_LIST_DIR}/write_h5.py")

// The HDF5 tests' files, written once per test process by h5py (write_h5.py beside this), and
// h5py's reads of them: the reference every value the loader reads is compared with.
#pragma once

#include "tests/python_written_files.h"

#include <string>
#include <vector>

namespace h5_test {

constexpr int64_t kRows = 60;

inline const test_files::PythonWrittenFiles& files() {
  static const test_files::PythonWrittenFiles written(
      "mploader-h5-test", MPLOADER_PYTHON, MPLOADER_COMPONENT_TEST_DIR "/write_h5.py", kRows,
      "the HDF5 files with h5py");
  return written;
}
inline std::string path(const std::string& name) { return files().path(name); }

// h5py's read of `field` of `file` ("numeric", "group/nested").
inline at::Tensor reference(const std::string& file, std::string field) {
  for (char& c : field) c = c == '/' ? '_' : c;
  return files().npy(file, field);
}
inline std::vector<std::string> reference_texts(const std::string& file, const std::string& field) {
  return files().json(file, field).get<std::vector<std::string>>();
}

}  // namespace h5_test

#define H5_TEST_NEEDS_FILES() TEST_NEEDS_PYTHON_FILES(h5_test::files())

// The HDF5 tests' files, written once per test process by h5py (components/hdf5/tests/write_h5.py), and
// h5py's reads of them: the reference every value the loader reads is compared with.
#pragma once

#include "tests/python_written_files.h"

#include <mploader/npy.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace h5_test {

constexpr int64_t kRows = 60;

// The folder holding the files, or "" when they could not be written (why() says why).
inline std::string& why() {
  static std::string text;
  return text;
}
inline const std::string& folder() {
  static const std::string dir = test_files::write_with_python(
      "mploader-h5-test", MPLOADER_PYTHON, MPLOADER_H5_WRITER,
      kRows, "the HDF5 files with h5py", why());
  return dir;
}

inline std::string path(const std::string& name) { return folder() + "/" + name; }

// h5py's read of `field` of `file` ("numeric", "group/nested").
inline at::Tensor reference(const std::string& file, std::string field) {
  for (char& c : field) c = c == '/' ? '_' : c;
  return mploader::NpyArray(path(file + "." + field + ".npy")).tensor();
}
inline std::vector<std::string> reference_texts(const std::string& file, const std::string& field) {
  std::ifstream in(path(file + "." + field + ".json"));
  return nlohmann::json::parse(in).get<std::vector<std::string>>();
}

}  // namespace h5_test

// Returns from the test, as skipped, when h5py could not write the files.
#define H5_TEST_NEEDS_FILES()                        \
  do {                                               \
    if (h5_test::folder().empty()) {                 \
      WARN("skipped: " << h5_test::why());           \
      return;                                        \
    }                                                \
  } while (0)

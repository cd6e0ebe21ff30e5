// The Parquet tests' files, written once per test process by pyarrow (write_parquet.py beside
// this), and pyarrow's reads of them: the reference every value the loader reads is compared with.
#pragma once

#include "tests/python_written_files.h"

#include <string>
#include <vector>

namespace pq_test {

constexpr int64_t kRows = 60;

inline const test_files::PythonWrittenFiles& files() {
  static const test_files::PythonWrittenFiles written(
      "mploader-pq-test", MPLOADER_PYTHON, MPLOADER_COMPONENT_TEST_DIR "/write_parquet.py", kRows,
      "the Parquet files with pyarrow");
  return written;
}
inline const std::string& folder() { return files().folder(); }
inline std::string path(const std::string& name) { return files().path(name); }

// pyarrow's read of numeric or image column `column` of `file` ("numeric", "f32"), nulls as 0;
// "<column>_valid" is its validity.
inline at::Tensor reference(const std::string& file, const std::string& column) {
  return files().npy(file, column);
}
// pyarrow's read of a text or binary column: each row's bytes (a null as ""), saved as hex.
inline std::vector<std::string> reference_bytes(const std::string& file,
                                                const std::string& column) {
  std::vector<std::string> out;
  for (const auto& hex : files().json(file, column)) {
    const std::string h = hex.get<std::string>();
    std::string bytes;
    for (size_t i = 0; i + 1 < h.size(); i += 2) {
      bytes.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
    }
    out.push_back(bytes);
  }
  return out;
}
// pyarrow's read of a list column: each row's numbers (a null as none).
inline nlohmann::json reference_lists(const std::string& file, const std::string& column) {
  return files().json(file, column);
}

}  // namespace pq_test

#define PQ_TEST_NEEDS_FILES() TEST_NEEDS_PYTHON_FILES(pq_test::files())

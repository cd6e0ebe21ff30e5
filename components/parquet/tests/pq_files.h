// The Parquet tests' files, written once per test process by pyarrow (write_parquet.py), and
// pyarrow's reads of them: the reference every value the loader reads is compared with.
#pragma once

#include "tests/python_written_files.h"

#include <mploader/npy.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace pq_test {

constexpr int64_t kRows = 60;

// The folder holding the files, or "" when they could not be written (why() says why).
inline std::string& why() {
  static std::string text;
  return text;
}
inline const std::string& folder() {
  static const std::string dir = test_files::write_with_python(
      "mploader-pq-test", MPLOADER_PYTHON, MPLOADER_PQ_WRITER,
      kRows, "the Parquet files with pyarrow", why());
  return dir;
}

inline std::string path(const std::string& name) { return folder() + "/" + name; }

// pyarrow's read of numeric or image column `column` of `file` ("numeric", "f32"), nulls as 0;
// "<column>_valid" is its validity.
inline at::Tensor reference(const std::string& file, const std::string& column) {
  return mploader::NpyArray(path(file + "." + column + ".npy")).tensor();
}
// pyarrow's read of a text or binary column: each row's bytes (a null as "").
inline std::vector<std::string> reference_bytes(const std::string& file,
                                                const std::string& column) {
  std::ifstream in(path(file + "." + column + ".json"));
  std::vector<std::string> out;
  for (const auto& hex : nlohmann::json::parse(in)) {
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
  std::ifstream in(path(file + "." + column + ".json"));
  return nlohmann::json::parse(in);
}

}  // namespace pq_test

// Returns from the test, as skipped, when pyarrow could not write the files.
#define PQ_TEST_NEEDS_FILES()                        \
  do {                                               \
    if (pq_test::folder().empty()) {                 \
      WARN("skipped: " << pq_test::why());           \
      return;                                        \
    }                                                \
  } while (0)

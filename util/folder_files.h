// The files of one folder whose names end in a suffix (".tar", ".parquet"): what a dataset's
// from_directory() reads. Subfolders are not searched.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace mploader::detail {

// The regular files of `dir` whose names end in `suffix` (and are longer than it), sorted by
// path. When `dir` cannot be listed: empty, with `error` saying why.
inline std::vector<std::string> files_ending_in(const std::string& dir, const std::string& suffix,
                                                std::string& error) {
  std::vector<std::string> paths;
  std::error_code code;
  std::filesystem::directory_iterator it(dir, code);
  if (code) {
    error = code.message();
    return paths;
  }
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace mploader::detail

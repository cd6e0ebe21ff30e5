// Formatting numbers for people: byte counts and index lists in messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mploader::detail {

inline std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return std::string(buf) + " (" + std::to_string(bytes) + " bytes)";
}

// "96.0 MiB": a size in a line that gives many (the memory-growth warning, mploader-report).
inline std::string mebibytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// "3, 9, 12 (3 in all)", with at most `limit` listed.
inline std::string index_list(const std::vector<int64_t>& indices, size_t limit = 12) {
  std::string s;
  for (size_t i = 0; i < indices.size() && i < limit; ++i) {
    s += (i ? ", " : "") + std::to_string(indices[i]);
  }
  if (indices.size() > limit) s += ", ...";
  return s + " (" + std::to_string(indices.size()) + " in all)";
}

}  // namespace mploader::detail

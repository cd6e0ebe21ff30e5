// Formatting numbers for people: byte counts in messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

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

}  // namespace mploader::detail

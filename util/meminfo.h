// The memory the kernel says can still be allocated without swapping (/proc/meminfo's
// MemAvailable): what the preflight, the shared-memory budget and the autotuner weigh.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace mploader::detail {

// MemAvailable in bytes; -1 when /proc/meminfo does not say (an old kernel, no /proc).
inline int64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kb = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

}  // namespace mploader::detail

// A process's memory as /proc/<pid>/status gives it, for the tests that bound it: VmRSS (all
// resident pages, the shared ring slots too) or RssAnon (its own heap and copied pages).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace testing_memory {

// The field `key` ("VmRSS:", "RssAnon:") of process `pid` (0: this one), in bytes; -1 when
// the process or the field is not there.
inline int64_t status_bytes(const std::string& key, int pid = 0) {
  std::ifstream status(pid == 0 ? "/proc/self/status"
                                : "/proc/" + std::to_string(pid) + "/status");
  std::string name;
  while (status >> name) {
    if (name == key) {
      int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 12, '\n');
  }
  return -1;
}

}  // namespace testing_memory

// Evidence about memory for diagnosing worker deaths: a process's resident memory, and the
// OOM-kill counter and limit of the memory cgroup it runs in (cgroup v2 memory.events, cgroup v1
// memory.oom_control, and /proc/vmstat as a machine-wide last resort).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mploader::detail {

struct ProcessMemory {
  int64_t rss_bytes = -1;  // VmRSS
  int64_t hwm_bytes = -1;  // VmHWM, the peak
};

// Reads /proc/<pid>/status; nullopt once the process has no memory map (a zombie).
std::optional<ProcessMemory> read_process_memory(pid_t pid);

struct OomCounter {
  std::string source;   // "cgroup v2", "cgroup v1" or "/proc/vmstat"
  std::string path;     // the cgroup directory (empty for vmstat)
  int64_t oom_kills = -1;
  int64_t limit_bytes = -1;  // -1: no limit or unknown
};

// The OOM-kill counter that covers `pid`: its memory cgroup's, else the machine's.
OomCounter read_oom_counter(pid_t pid);
// The same counter again, from the same place, after the process is gone.
OomCounter reread_oom_counter(const OomCounter& before);

}  // namespace mploader::detail

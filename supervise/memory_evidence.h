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

// A process's memory by who holds it (/proc/<pid>/smaps_rollup, one read however many
// mappings). Private: pages only this process maps, written (Private_Dirty): its allocations
// and its copy-on-write copies. Shared: pages other processes map too (Shared_Clean and
// Shared_Dirty): inherited and untouched, mapped files, shared memory.
struct MemorySplit {
  int64_t private_bytes = -1;
  int64_t shared_bytes = -1;
};

// nullopt when the file cannot be read (the process is gone, or a kernel before 4.14).
std::optional<MemorySplit> read_memory_split(pid_t pid);

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
// What the cgroup `counter` came from holds now (memory.current, memory.usage_in_bytes);
// -1 for the machine-wide counter or when unreadable.
int64_t cgroup_usage_bytes(const OomCounter& counter);

}  // namespace mploader::detail

// The CPUs this process may really use: its affinity mask and the CPU quota of its cgroup
// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us), the tightest of its cgroup
// and every ancestor. A container's quota is often far below the cores a process sees, and
// workers beyond it only take turns on the same CPU time.
// Thread-safety: pure functions of the files they read; no shared state.
#pragma once

#include <cstdint>
#include <string>

namespace mploader::detail {

struct CpuBudget {
  int64_t affinity = 0;    // CPUs in the affinity mask; 0: unknown
  double quota_cpus = 0;   // the cgroup's quota in CPUs (quota / period); 0: none
  std::string quota_file;  // where the quota was read, when there is one

  // What compute-bound workers can use: the affinity mask, lowered to the quota rounded down
  // (at least 1); 0 when neither is known.
  int64_t cpus() const;
  // Where cpus() comes from, for messages: "its affinity mask", or "the cgroup CPU quota of
  // 1.50 CPUs (/sys/fs/cgroup/.../cpu.max)".
  std::string source() const;
};

// A cgroup v2 cpu.max ("max 100000" or "150000 100000") in CPUs: 0 for no quota, -1 when the
// text is not one.
double cpu_max_quota(const std::string& text);
// A cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us in CPUs: 0 for no quota (-1 in the
// quota file), -1 when either text is not a number.
double cfs_quota(const std::string& quota_text, const std::string& period_text);

// This process's budget. `proc_self` and `cgroup_root` are where /proc/self and the cgroup
// mount are (tests point them elsewhere).
CpuBudget cpu_budget(const std::string& proc_self = "/proc/self",
                     const std::string& cgroup_root = "/sys/fs/cgroup");

}  // namespace mploader::detail

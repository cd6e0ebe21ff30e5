// Preflight: checks at loader start that the machine can run the configuration, with the
// numbers: free shared memory against the rings, the open-file limit against the descriptors
// needed, num_workers against the CPUs this process may use, and the memory limit against
// rings plus the workers' batches. Warnings are logged; an error means the run cannot work.
#pragma once

#include <mploader/options.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::detail {

struct PreflightFinding {
  bool error = false;  // true: the loader cannot start
  std::string what;    // e.g. "open_files"
  std::string message;
};

struct PreflightInput {
  int64_t num_workers = 0;
  uint64_t region_bytes = 0;  // one worker's region
  uint64_t slot_bytes = 0;
  int64_t prefetch_factor = 0;
  std::string shm_dir;
  // Facts about the machine; filled from the system by measure_machine(), set by tests.
  int64_t open_fds = 0;
  int64_t fd_soft_limit = -1;
  int64_t fd_hard_limit = -1;
  int64_t cpus = 0;             // in this process's affinity mask
  int64_t memory_limit = -1;    // the memory cgroup's, -1 if none
  int64_t memory_available = -1;
  int64_t dev_shm_bytes = -1;   // size of /dev/shm, -1 if absent
};

// Fills the machine facts of `input` from this process.
void measure_machine(PreflightInput& input);
std::vector<PreflightFinding> preflight(const PreflightInput& input);
// Descriptors the main process holds per worker (region, two eventfds, socket, pidfd, the
// supervisor's pidfd) and a margin for overflow segments in flight.
constexpr int64_t kFdsPerWorker = 6;
constexpr int64_t kFdMargin = 32;

}  // namespace mploader::detail

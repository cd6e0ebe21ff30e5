// Preflight: checks at loader start that the machine can run the configuration, with the
// numbers: free shared memory against the rings, the open-file limit against the descriptors
// needed, num_workers against the CPUs this process may use, and the memory limit against
// rings plus the workers' batches. Warnings are logged; an error means the run cannot work.
#pragma once

#include <mploader/start_method.h>

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
  int64_t worker_slots = 0;  // with num_workers = kAuto, the most workers that may run
  bool autotuned = false;   // the autotuner keeps the running workers within the CPUs
  uint64_t region_bytes = 0;  // one worker's region
  uint64_t slot_bytes = 0;
  std::string shm_dir;
  StartMethod start_method = StartMethod::kFork;
  bool forkserver_started = false;  // its socket is then among open_fds already
  // Facts about the machine; filled from the system by measure_machine(), set by tests.
  int64_t open_fds = 0;
  int64_t fd_soft_limit = -1;
  int64_t fd_hard_limit = -1;
  int fd_raise_error = 0;       // errno of raise_fd_soft_limit()'s setrlimit, 0 if none failed
  int64_t cpus = 0;             // this process's CPU budget (util/cpu_budget.h)
  std::string cpus_source = "its affinity mask";  // what limits cpus, for the message
  int64_t memory_limit = -1;    // the memory cgroup's, -1 if none
  int64_t memory_available = -1;
  int64_t dev_shm_bytes = -1;   // size of /dev/shm, -1 if absent
};

// Fills the machine facts of `input` from this process.
void measure_machine(PreflightInput& input);
// When the RLIMIT_NOFILE soft limit is below fds_needed() and the hard limit allows it, raises
// the soft limit to the need plus kFdHeadroom (at most the hard limit), logs it at info and
// updates `input`. Does nothing when the soft limit suffices or the hard limit cannot.
void raise_fd_soft_limit(PreflightInput& input);
std::vector<PreflightFinding> preflight(const PreflightInput& input);
// The descriptor checks alone: they do not depend on the slot size, so the loader runs them
// before the slot-size probe, which is a worker process and needs descriptors too.
std::vector<PreflightFinding> preflight_fds(const PreflightInput& input);

// Descriptors the main process holds for one loader, as measured by counting /proc/self/fd
// (tests/test_fd_limits.cc: 6 per worker + 1, and 1 more the first time a forkserver starts).
// Per worker: its region's memfd, the task and done eventfds, the parent's end of its socket,
// its pidfd and the supervisor's duplicate of that pidfd.
constexpr int64_t kFdsPerWorker = 6;
// Per loader: the supervisor's wake eventfd (the dataset recipe's shared memory, under spawn
// and forkserver, is open before the count is taken), and two at a time in passing: an overflow segment
// the dispatcher receives and closes once mapped, a /proc file or crash report the supervisor
// reads or writes.
constexpr int64_t kFdsPerLoader = 3;
// Under forkserver: the socket to the server, once per process (until it is started).
constexpr int64_t kFdsForkserver = 1;
// What a raised soft limit leaves for the program's own files on top of the loader's need.
constexpr int64_t kFdHeadroom = 64;
// Descriptors open now plus what the loader of `input` will hold.
int64_t fds_needed(const PreflightInput& input);

}  // namespace mploader::detail

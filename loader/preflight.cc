#include "loader/preflight.h"

#include "loader/memory_evidence.h"
#include "loader/units.h"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>

namespace mploader::detail {
namespace {

int64_t count_open_fds() {
  int64_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n > 2 ? n - 2 : n;  // "." and ".."
}

int64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

void check_fds(const PreflightInput& in, std::vector<PreflightFinding>& out) {
  const int64_t needed = in.open_fds + in.num_workers * kFdsPerWorker + kFdMargin;
  if (in.fd_hard_limit >= 0 && needed > in.fd_hard_limit) {
    out.push_back({true, "open_files",
                   "mploader: " + std::to_string(in.num_workers) + " workers need about " +
                       std::to_string(needed) + " open files (" + std::to_string(in.open_fds) +
                       " open now), but the hard limit is " + std::to_string(in.fd_hard_limit) +
                       ". Use fewer workers or raise the limit (ulimit -Hn, or LimitNOFILE= / "
                       "docker --ulimit nofile=)."});
  } else if (in.fd_soft_limit >= 0 && needed > in.fd_soft_limit) {
    out.push_back({false, "open_files",
                   "mploader: " + std::to_string(in.num_workers) + " workers need about " +
                       std::to_string(needed) + " open files but the soft limit is " +
                       std::to_string(in.fd_soft_limit) + "; raise it with ulimit -n " +
                       std::to_string(in.fd_hard_limit) + "."});
  }
}

void check_memory(const PreflightInput& in, std::vector<PreflightFinding>& out) {
  const uint64_t rings = in.region_bytes * static_cast<uint64_t>(in.num_workers);
  // Each worker also holds the samples of the batch it builds (about one slot's worth).
  const uint64_t batches = in.slot_bytes * static_cast<uint64_t>(in.num_workers);
  const std::string need = human_bytes(rings) + " of rings (" + std::to_string(in.num_workers) +
                           " workers x " + human_bytes(in.region_bytes) + ") plus about " +
                           human_bytes(batches) + " of samples being collated";
  if (in.memory_limit >= 0 && rings >= static_cast<uint64_t>(in.memory_limit)) {
    out.push_back({true, "memory", "mploader: the workers need " + need +
                                       ", more than the memory cgroup's limit of " +
                                       human_bytes(in.memory_limit) +
                                       ". Lower num_workers, prefetch_factor or batch_size."});
  } else if (in.memory_limit >= 0 && rings + batches > static_cast<uint64_t>(in.memory_limit) / 2) {
    out.push_back({false, "memory", "mploader: the workers need " + need + ", over half of the "
                                    "memory cgroup's limit of " + human_bytes(in.memory_limit) +
                                    "; the OOM killer may end a worker. Lower num_workers, "
                                    "prefetch_factor or batch_size."});
  } else if (in.memory_available >= 0 && rings + batches > static_cast<uint64_t>(in.memory_available)) {
    out.push_back({false, "memory", "mploader: the workers need " + need + " but only " +
                                    human_bytes(in.memory_available) + " of memory is available."});
  }
}

void check_cpus_and_shm(const PreflightInput& in, std::vector<PreflightFinding>& out) {
  if (in.cpus > 0 && in.num_workers > in.cpus) {
    out.push_back({false, "cpus", "mploader: num_workers = " + std::to_string(in.num_workers) +
                                      " but this process may run on " + std::to_string(in.cpus) +
                                      " CPUs (its affinity mask); the workers will compete for "
                                      "them. Use at most " + std::to_string(in.cpus) + "."});
  }
  // The rings are memfd unless shm_dir is set, but dataset code and other libraries often use
  // /dev/shm, and Docker gives it 64 MiB by default.
  if (in.shm_dir.empty() && in.dev_shm_bytes >= 0 && in.dev_shm_bytes < (int64_t{1} << 30)) {
    out.push_back({false, "dev_shm", "mploader: /dev/shm holds only " +
                                         human_bytes(in.dev_shm_bytes) +
                                         " (Docker's default is 64 MiB). mploader's rings do "
                                         "not use it, but dataset code that does will die of "
                                         "SIGBUS when it fills: run with --shm-size=8g or "
                                         "--ipc=host."});
  }
}

}  // namespace

void measure_machine(PreflightInput& in) {
  in.open_fds = count_open_fds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    in.fd_soft_limit = limit.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(limit.rlim_cur);
    in.fd_hard_limit = limit.rlim_max == RLIM_INFINITY ? -1 : static_cast<int64_t>(limit.rlim_max);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) in.cpus = CPU_COUNT(&set);
  in.memory_limit = read_oom_counter(getpid()).limit_bytes;
  in.memory_available = meminfo_available();
  struct statvfs st;
  if (statvfs("/dev/shm", &st) == 0) {
    in.dev_shm_bytes = static_cast<int64_t>(st.f_blocks) * static_cast<int64_t>(st.f_frsize);
  }
}

std::vector<PreflightFinding> preflight(const PreflightInput& in) {
  std::vector<PreflightFinding> out;
  check_fds(in, out);
  check_memory(in, out);
  check_cpus_and_shm(in, out);
  return out;
}

}  // namespace mploader::detail

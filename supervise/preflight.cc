#include "supervise/preflight.h"

#include "util/cpu_budget.h"
#include "util/log.h"
#include "util/meminfo.h"
#include "supervise/memory_evidence.h"
#include "util/units.h"
#include "process/forkserver.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace mploader::detail {
namespace {

int64_t count_open_fds() {
  int64_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n > 3 ? n - 3 : n;  // ".", ".." and the directory's own descriptor
}

bool starts_forkserver(const PreflightInput& in) {
  return in.start_method == StartMethod::kForkserver && !in.forkserver_started;
}

std::string workers_text(int64_t n) {
  return std::to_string(n) + (n == 1 ? " worker" : " workers");
}

std::string limit_text(int64_t limit) {
  return limit < 0 ? std::string("unlimited") : std::to_string(limit);
}

// "2 workers need 27 open descriptors (12 open now + 6 per worker + 3 for the loader)"
std::string fd_need_text(const PreflightInput& in) {
  return workers_text(in.worker_slots) + " need " + std::to_string(fds_needed(in)) +
         " open descriptors in this process (" + std::to_string(in.open_fds) + " open now + " +
         std::to_string(kFdsPerWorker) + " per worker + " + std::to_string(kFdsPerLoader) +
         " for the loader" +
         (starts_forkserver(in) ? " + 1 for the forkserver" : "") + ")";
}

void check_fds(const PreflightInput& in, std::vector<PreflightFinding>& out) {
  const int64_t needed = fds_needed(in);
  const std::string limits = "(soft limit " + limit_text(in.fd_soft_limit) + ", hard limit " +
                             limit_text(in.fd_hard_limit) + ")";
  if (in.fd_hard_limit >= 0 && needed > in.fd_hard_limit) {
    const int64_t fit = (in.fd_hard_limit - (needed - in.worker_slots * kFdsPerWorker)) /
                        kFdsPerWorker;
    const std::string bigger = std::to_string(std::max<int64_t>(4096, needed * 2));
    out.push_back({true, "open_files",
                   "mploader: " + fd_need_text(in) + ", but RLIMIT_NOFILE allows " +
                       limit_text(in.fd_hard_limit) + " " + limits +
                       " and only root can raise the hard limit. " +
                       (fit > 0 ? "Use at most " + workers_text(fit) + ", or raise"
                                : "Raise") +
                       " both limits before starting the program: `ulimit -Hn " + bigger +
                       " && ulimit -n " + bigger + "` as root, LimitNOFILE=" + bigger +
                       " in a systemd unit, docker run --ulimit nofile=" + bigger + ":" +
                       bigger + ", or nofile in /etc/security/limits.conf."});
  } else if (in.fd_soft_limit >= 0 && needed > in.fd_soft_limit) {
    // raise_fd_soft_limit() could not raise it: creating the descriptors would fail.
    out.push_back({true, "open_files",
                   "mploader: " + fd_need_text(in) + ", but the RLIMIT_NOFILE soft limit is " +
                       limit_text(in.fd_soft_limit) + " (hard limit " +
                       limit_text(in.fd_hard_limit) + ")" +
                       (in.fd_raise_error ? std::string(" and raising it failed: ") +
                                                std::strerror(in.fd_raise_error)
                                          : std::string()) +
                       ". Raise it before starting the program: `ulimit -n " +
                       limit_text(in.fd_hard_limit < 0 ? needed : in.fd_hard_limit) +
                       "`, or use fewer workers."});
  }
}

void check_memory(const PreflightInput& in, std::vector<PreflightFinding>& out) {
  const uint64_t rings = in.region_bytes * static_cast<uint64_t>(in.worker_slots);
  // Each worker also holds the samples of the batch it builds (about one slot's worth).
  const uint64_t batches = in.slot_bytes * static_cast<uint64_t>(in.worker_slots);
  const std::string need = human_bytes(rings) + " of rings (" + std::to_string(in.worker_slots) +
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
  } else if (in.memory_available >= 0 && rings > static_cast<uint64_t>(in.memory_available)) {
    // The rings are reserved page by page before any batch: more than there is ends in the
    // OOM killer, not in a loader that runs slowly.
    out.push_back({true, "memory", "mploader: the workers need " + need + " but only " +
                                   human_bytes(in.memory_available) + " of memory is "
                                   "available (MemAvailable), so the rings cannot be reserved. "
                                   "Lower batch_size (or max_batch_bytes), prefetch_factor or "
                                   "num_workers."});
  } else if (in.memory_available >= 0 && rings + batches > static_cast<uint64_t>(in.memory_available)) {
    out.push_back({false, "memory", "mploader: the workers need " + need + " but only " +
                                    human_bytes(in.memory_available) + " of memory is available."});
  }
}

void check_cpus_and_shm(const PreflightInput& in, std::vector<PreflightFinding>& out) {
  if (!in.autotuned && in.cpus > 0 && in.worker_slots > in.cpus) {
    out.push_back({false, "cpus", "mploader: num_workers = " + std::to_string(in.worker_slots) +
                                      " but this process may use " + std::to_string(in.cpus) +
                                      (in.cpus == 1 ? " CPU (" : " CPUs (") + in.cpus_source +
                                      "); the workers will "
                                      "compete for them. Use at most " +
                                      std::to_string(in.cpus) + "."});
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

int64_t fds_needed(const PreflightInput& in) {
  return in.open_fds + in.worker_slots * kFdsPerWorker + kFdsPerLoader +
         (starts_forkserver(in) ? kFdsForkserver : 0);
}

// Raising the soft limit up to the hard one is what any process may do (Python programs often
// do it for their DataLoader); only as far as the loader needs, because a program using
// select() breaks on descriptors past 1024.
void raise_fd_soft_limit(PreflightInput& in) {
  const int64_t needed = fds_needed(in);
  if (in.fd_soft_limit < 0 || needed <= in.fd_soft_limit) return;
  if (in.fd_hard_limit >= 0 && needed > in.fd_hard_limit) return;  // preflight says so
  int64_t raised = needed + kFdHeadroom;
  if (in.fd_hard_limit >= 0) raised = std::min(raised, in.fd_hard_limit);
  rlimit limit{static_cast<rlim_t>(raised),
               in.fd_hard_limit < 0 ? RLIM_INFINITY : static_cast<rlim_t>(in.fd_hard_limit)};
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    in.fd_raise_error = errno;
    return;
  }
  log().info("mploader: raised this process's RLIMIT_NOFILE soft limit from {} to {} (hard "
             "limit {}): {}. Its workers and the programs it starts inherit the new limit; "
             "run `ulimit -n {}` before the program to set it yourself.",
             in.fd_soft_limit, raised, limit_text(in.fd_hard_limit), fd_need_text(in), raised);
  in.fd_soft_limit = raised;
}

void measure_machine(PreflightInput& in) {
  in.open_fds = count_open_fds();
  in.forkserver_started = detail::forkserver_started();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    in.fd_soft_limit = limit.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(limit.rlim_cur);
    in.fd_hard_limit = limit.rlim_max == RLIM_INFINITY ? -1 : static_cast<int64_t>(limit.rlim_max);
  }
  const CpuBudget cpus = cpu_budget();
  in.cpus = cpus.cpus();
  in.cpus_source = cpus.source();
  in.memory_limit = read_oom_counter(getpid()).limit_bytes;
  in.memory_available = mem_available_bytes();
  struct statvfs st;
  if (statvfs("/dev/shm", &st) == 0) {
    in.dev_shm_bytes = static_cast<int64_t>(st.f_blocks) * static_cast<int64_t>(st.f_frsize);
  }
}

std::vector<PreflightFinding> preflight_fds(const PreflightInput& in) {
  std::vector<PreflightFinding> out;
  check_fds(in, out);
  return out;
}

std::vector<PreflightFinding> preflight(const PreflightInput& in) {
  std::vector<PreflightFinding> out;
  check_fds(in, out);
  check_memory(in, out);
  check_cpus_and_shm(in, out);
  return out;
}

}  // namespace mploader::detail

// mploader-soak's measurements of its own process, taken after each epoch at the same point:
// what a leak in the loader would make grow (descriptors, threads, child processes, shared
// memory, resident memory). Read from /proc; Linux only, like mploader.
#pragma once

#include <cstdint>
#include <string>

namespace bench::soak {

// One reading. Counts are exact; the memory figures are in KiB as /proc gives them.
struct ProcessCounts {
  int64_t fds = 0;         // open descriptors (/proc/self/fd), the one reading it excluded
  int64_t threads = 0;     // this process's threads (/proc/self/task)
  int64_t children = 0;    // processes whose parent is this one, zombies included
  int64_t shm_named = 0;   // mploader-* files in /dev/shm (and in shm_dir): a ring left named
  int64_t shm_mapped = 0;  // distinct memfd, /dev/shm and shm_dir files mapped (/proc/self/maps)
  int64_t rss_kib = 0;     // VmRSS
  int64_t rss_anon_kib = 0;   // RssAnon: the heap's share of VmRSS
  int64_t rss_shmem_kib = 0;  // RssShmem: the mapped rings' touched pages
};

// Reads every count now. `shm_dir` is LoaderOptions::shm_dir ("" for memfd rings).
ProcessCounts measure_process(const std::string& shm_dir);

// The lowest of three readings 10 ms apart, count by count. A persistent loader's Supervisor
// thread opens its workers' /proc files for an instant every 250 ms: one reading may catch
// that descriptor, three in a row do not, while a leaked one is in all three.
ProcessCounts measure_process_steady(const std::string& shm_dir);

// The first difference between `now` and `reference` among the exact counts, as
// "open fds 24 (epoch 10 had 23)", or "" when they are all equal. `reference_label` names the
// reference ("epoch 10").
std::string count_difference(const ProcessCounts& now, const ProcessCounts& reference,
                             const std::string& reference_label);

// VmRSS of `now` relative to `reference`, in percent (+0.5 means 0.5 % larger).
double rss_change_percent(const ProcessCounts& now, const ProcessCounts& reference);

}  // namespace bench::soak
